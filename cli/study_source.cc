#include "cli/study_source.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "db/sqlite_trial_store.h"
#include "service/study_queries.h"

namespace tessera::cli {
namespace {

// The four queries answered by `Queries` (PlannerClient over gRPC, or
// service::StudyQueries over a store), which has the same methods.
template <typename Queries>
class ForwardingStudySource : public StudySource {
 public:
  absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id) override {
    return queries().GetStudy(study_id);
  }
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request) override {
    return queries().ListStudies(request);
  }
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request) override {
    return queries().ListTrials(request);
  }
  absl::StatusOr<v1::Recommendation> GetRecommendation(
      int64_t study_id) override {
    return queries().GetRecommendation(study_id);
  }

 protected:
  virtual Queries& queries() = 0;
};

// The planner's answers; when it cannot be reached, the error says how to
// read its history without it.
class PlannerStudySource : public StudySource {
 public:
  explicit PlannerStudySource(const PlannerFlags& flags)
      : client_(flags.Address(), flags.Timeout(), flags.Credentials()) {}

  absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id) override {
    return WithDbHint(client_.GetStudy(study_id));
  }
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request) override {
    return WithDbHint(client_.ListStudies(request));
  }
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request) override {
    return WithDbHint(client_.ListTrials(request));
  }
  absl::StatusOr<v1::Recommendation> GetRecommendation(
      int64_t study_id) override {
    return WithDbHint(client_.GetRecommendation(study_id));
  }

 private:
  template <typename T>
  static absl::StatusOr<T> WithDbHint(absl::StatusOr<T> answer) {
    if (answer.ok() ||
        answer.status().code() != absl::StatusCode::kUnavailable) {
      return answer;
    }
    return absl::UnavailableError(
        absl::StrCat(answer.status().message(), "; ", kNoPlannerHint));
  }

  PlannerClient client_;
};

// The same queries over a store opened read-only.
class StoreStudySource
    : public ForwardingStudySource<const service::StudyQueries> {
 public:
  StoreStudySource(std::unique_ptr<db::SqliteTrialStore> store,
                   std::string path)
      : store_(std::move(store)),
        queries_(store_.get()),
        path_(std::move(path)) {}

  // The history is the file read, by the path given (the planner's
  // history_db is where the planner that wrote it kept it).
  absl::StatusOr<v1::Recommendation> GetRecommendation(
      int64_t study_id) override {
    absl::StatusOr<v1::Recommendation> r = queries_.GetRecommendation(study_id);
    if (r.ok()) r->set_history_db(path_);
    return r;
  }

 private:
  const service::StudyQueries& queries() override { return queries_; }
  std::unique_ptr<db::SqliteTrialStore> store_;
  service::StudyQueries queries_;
  std::string path_;
};

}  // namespace

void StudySourceFlags::Register(FlagSet* flags) {
  flags->AddSection("History source");
  flags->AddString("db", "FILE", kDbFlagHelp, &db);
  planner.Register(flags, kPlannerFlagHelp);
}

absl::Status StudySourceFlags::Validate() {
  if (db.has_value() && planner.planner.has_value()) {
    return absl::InvalidArgumentError(
        "--db and --planner name two sources; give one");
  }
  if (db.has_value() && db->empty()) {
    return absl::InvalidArgumentError("--db: empty path");
  }
  return planner.Validate();
}

absl::StatusOr<std::unique_ptr<StudySource>> StudySourceFlags::Open() const {
  if (!db.has_value()) {
    return std::unique_ptr<StudySource>(new PlannerStudySource(planner));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*db, ec)) {
    return absl::NotFoundError(absl::StrCat("--db: no such file ", *db));
  }
  db::SqliteTrialStoreOptions options;
  options.read_only = true;
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(*db, options);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("--db: ", store.status().message()));
  }
  return std::unique_ptr<StudySource>(
      new StoreStudySource(*std::move(store), *db));
}

absl::StatusOr<int64_t> ParseStudyArgs(const std::vector<std::string>& args,
                                       const std::vector<std::string>& switches,
                                       absl::string_view usage, FlagSet& flags,
                                       StudySourceFlags& source) {
  return ParseStudyArgs(args, switches, usage, flags,
                        [&] { return source.Validate(); });
}

}  // namespace tessera::cli
