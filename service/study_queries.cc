#include "service/study_queries.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "service/measured_layouts.h"
#include "service/proto_mapping.h"
#include "service/recalibration.h"
#include "service/recommendation.h"
#include "service/study_spec.h"
#include "service/study_scale.h"
#include "service/trial_geometry.h"
#include "proto/convert.h"

namespace tessera::service {

absl::StatusOr<std::pair<Workload, int64_t>> StoredStudyWorkload(
    const db::Study& study) {
  TESSERA_ASSIGN_OR_RETURN(
      const v1::StudySpec spec,
      StudySpecFromStoredJson(study.spec_json,
                              absl::StrCat("study ", study.id)));
  TESSERA_ASSIGN_OR_RETURN(const CheckedStudy checked, CheckStudySpec(spec));
  if (!checked.agents_gpu) {
    return std::make_pair(checked.workload, checked.trials.layers);
  }
  TESSERA_ASSIGN_OR_RETURN(const v1::Recommendation r,
                           RecommendationFromJson(study.recommendation_json));
  TESSERA_ASSIGN_OR_RETURN(Workload w, StudyWorkload(spec, r));
  return std::make_pair(std::move(w), checked.trials.layers);
}

absl::StatusOr<Workload> StudyWorkload(const v1::StudySpec& spec,
                                       const v1::Recommendation& r) {
  TESSERA_ASSIGN_OR_RETURN(const CheckedStudy checked, CheckStudySpec(spec));
  if (!checked.agents_gpu) return checked.workload;
  TESSERA_ASSIGN_OR_RETURN(Workload w, WorkloadWithGpu(spec, r.gpu()));
  w.cluster.gpu.name = r.gpu_name();
  return w;
}

absl::StatusOr<v1::StudySummary> StudyQueries::Summary(int64_t study_id) const {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  TESSERA_ASSIGN_OR_RETURN(const auto counts,
                           store_->CountTrialsByStatus(study_id));
  // The best as the recommendation judges it: each layout by all its
  // measurements together (measured_layouts.h), not the luckiest one.
  db::TrialFilter ok_filter;
  ok_filter.study_id = study_id;
  ok_filter.statuses = {db::TrialState::kOk};
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Trial> ok,
                           store_->ListTrials(ok_filter));
  const std::map<std::string, MeasuredLayout> measured = MeasuredLayouts(ok);
  const MeasuredLayout* best = BestMeasured(measured);
  if (best == nullptr) return StudySummaryOf(study, counts, std::nullopt);
  // Its standing trial, with the layout's combined tokens/s.
  db::Trial standing = best->trial;
  standing.measured->tokens_per_s =
      best->tokens_per_s_per_gpu *
      static_cast<double>(standing.layout.world_size());
  standing.measured->tokens_per_s_per_gpu = best->tokens_per_s_per_gpu;
  return StudySummaryOf(study, counts, standing);
}

absl::StatusOr<v1::GetStudyResponse> StudyQueries::GetStudy(
    int64_t study_id) const {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  v1::GetStudyResponse out;
  TESSERA_ASSIGN_OR_RETURN(*out.mutable_study(), Summary(study_id));
  TESSERA_ASSIGN_OR_RETURN(
      *out.mutable_spec(),
      StudySpecFromStoredJson(study.spec_json,
                              absl::StrCat("study ", study_id)));
  return out;
}

absl::StatusOr<v1::ListStudiesResponse> StudyQueries::ListStudies(
    const v1::ListStudiesRequest& request) const {
  TESSERA_ASSIGN_OR_RETURN(const db::StudyFilter filter,
                           StudyFilterFromRequest(request));
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Study> studies,
                           store_->ListStudies(filter));
  v1::ListStudiesResponse out;
  for (const db::Study& s : studies) {
    TESSERA_ASSIGN_OR_RETURN(*out.add_studies(), Summary(s.id));
  }
  return out;
}

absl::StatusOr<v1::ListTrialsResponse> StudyQueries::ListTrials(
    const v1::ListTrialsRequest& request) const {
  TESSERA_ASSIGN_OR_RETURN(const db::TrialFilter filter,
                           TrialFilterFromRequest(request));
  if (filter.study_id.has_value()) {
    TESSERA_RETURN_IF_ERROR(store_->GetStudy(*filter.study_id).status());
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Trial> trials,
                           store_->ListTrials(filter));
  // A trial run smaller than its study says so where it has no other
  // reason to give.
  std::map<int64_t, std::optional<std::pair<Workload, int64_t>>> studies;
  v1::ListTrialsResponse out;
  for (const db::Trial& t : trials) {
    v1::Trial* proto = out.add_trials();
    *proto = TrialToProto(t);
    if (!t.reason.empty() && t.status != db::TrialState::kOk) continue;
    auto it = studies.find(t.study_id);
    if (it == studies.end()) {
      absl::StatusOr<db::Study> s = store_->GetStudy(t.study_id);
      absl::StatusOr<std::pair<Workload, int64_t>> w =
          s.ok() ? StoredStudyWorkload(*s)
                 : absl::StatusOr<std::pair<Workload, int64_t>>(s.status());
      it = studies
               .emplace(t.study_id,
                        w.ok() ? std::optional(*std::move(w)) : std::nullopt)
               .first;
    }
    if (!it->second.has_value()) continue;
    const auto& [study_workload, layers] = *it->second;
    if (t.reason.empty()) {
      proto->set_reason(TrialScaleNote(t, study_workload, layers));
    }
    if (t.status == db::TrialState::kOk) {
      absl::StatusOr<Workload> ran =
          WorkloadTrialRan(t, study_workload, layers);
      if (ran.ok()) *proto->mutable_ran() = SpecFromWorkload(*ran);
    }
  }
  return out;
}

absl::StatusOr<v1::Recommendation> StudyQueries::GetRecommendation(
    int64_t study_id) const {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  if (study.recommendation_json.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study ", study_id, " has no recommendation yet (",
        db::StudyStatusName(study.status),
        study.status_reason.empty() ? "" : ": ", study.status_reason, ")"));
  }
  TESSERA_ASSIGN_OR_RETURN(v1::Recommendation r,
                           RecommendationFromJson(study.recommendation_json));
  // Which GPU count its figures are for, when the study chose one.
  absl::StatusOr<v1::StudySpec> spec = StudySpecFromStoredJson(
      study.spec_json, absl::StrCat("study ", study.id));
  if (spec.ok()) {
    if (std::optional<v1::RecommendationScale> scale =
            RecommendationScaleOf(*spec)) {
      *r.mutable_scale() = *std::move(scale);
    }
  }
  return r;
}

}  // namespace tessera::service
