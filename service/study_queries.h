// The planner's read-only answers about stored studies: a study, the study
// list, the trial list, the recommendation. They read only the store, so
// the planner serves them (PlannerService asks Studies::queries) and the
// history commands answer them from a SQLite file with no planner running
// (`tessera studies --db FILE`, cli/study_source.h): both print the same
// thing.
//
//   StudyQueries queries(store.get());
//   TESSERA_ASSIGN_OR_RETURN(v1::ListTrialsResponse trials,
//                            queries.ListTrials(request));
#pragma once

#include <cstdint>
#include <utility>

#include "absl/status/statusor.h"
#include "core/workload.h"
#include "db/trial_store.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

class StudyQueries {
 public:
  // `store` must outlive the queries.
  explicit StudyQueries(db::TrialStore* store) : store_(store) {}

  // The study's summary and its spec; NOT_FOUND "study N: ...".
  absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id) const;
  // The studies the request's filters select, newest first.
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request) const;
  // The trials the request's filters select; each ok trial carries the
  // workload it ran (`ran`) and a trial run smaller than its study says so
  // in its reason.
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request) const;
  // The stored recommendation; FAILED_PRECONDITION while there is none yet
  // (naming the study's state).
  absl::StatusOr<v1::Recommendation> GetRecommendation(int64_t study_id) const;
  // The study's state, trial counts and measured best (each layout judged
  // by its longest measurement).
  absl::StatusOr<v1::StudySummary> Summary(int64_t study_id) const;

 private:
  db::TrialStore* store_;
};

// The workload and trial layers of a stored study (its spec, with the GPU
// the recommendation resolved for an "agents" study).
absl::StatusOr<std::pair<Workload, int64_t>> StoredStudyWorkload(
    const db::Study& study);

// The workload of a study from its spec and its recommendation (whose GPU
// an "agents" study plans on; the recommendation is not read otherwise):
// what `tessera best --export` writes the configuration for.
absl::StatusOr<Workload> StudyWorkload(const v1::StudySpec& spec,
                                       const v1::Recommendation& r);

}  // namespace tessera::service
