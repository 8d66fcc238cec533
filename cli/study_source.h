// Where the history commands (studies, trials, history, best, report) read
// studies: the planner over gRPC, or with `--db FILE` the planner's SQLite
// store itself, opened read-only, with no planner running. Both answer
// through the same queries (service/study_queries.h), so a command
// prints the same thing either way.
//
//   StudySourceFlags source;
//   source.Register(&flags);
//   TESSERA_RETURN_IF_ERROR(flags.Parse(args));
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<StudySource> studies,
//                            source.Open());
//   absl::StatusOr<v1::ListStudiesResponse> all = studies->ListStudies({});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/planner_client.h"
#include "core/flags.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// The read-only study queries, answered by the planner or by a store file.
class StudySource {
 public:
  virtual ~StudySource() = default;
  virtual absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id) = 0;
  virtual absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request) = 0;
  virtual absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request) = 0;
  virtual absl::StatusOr<v1::Recommendation> GetRecommendation(
      int64_t study_id) = 0;
};

// Help of --db.
inline constexpr char kDbFlagHelp[] =
    "read this SQLite store directly, read-only, instead of asking the "
    "planner (no planner need run; nothing in the file is changed)";

// What an unreachable planner's error adds for the history commands.
inline constexpr char kNoPlannerHint[] =
    "to read a planner's history without it, give its SQLite file: --db FILE "
    "(tessera-planner --db)";

// The planner flags (cli/planner_client.h) and --db FILE.
struct StudySourceFlags {
  PlannerFlags planner;
  std::optional<std::string> db;

  // Adds --db FILE and the planner flags to `flags`.
  void Register(FlagSet* flags);
  // The planner flags' checks; --db with --planner is INVALID_ARGUMENT
  // (they name two different sources).
  absl::Status Validate();
  // With --db: the store at that path, read-only; NOT_FOUND "--db: no such
  // file PATH", FAILED_PRECONDITION when it is not a Tessera store at this
  // build's schema (db/migrations.h says why). Without: a PlannerClient for
  // the planner flags (connecting happens at the first call); its
  // UNAVAILABLE errors end with kNoPlannerHint.
  absl::StatusOr<std::unique_ptr<StudySource>> Open() const;
};

// ParseStudyArgs (cli/planner_client.h) for a command that reads one study
// from either source.
absl::StatusOr<int64_t> ParseStudyArgs(const std::vector<std::string>& args,
                                       const std::vector<std::string>& switches,
                                       absl::string_view usage, FlagSet& flags,
                                       StudySourceFlags& source);

}  // namespace tessera::cli
