// The study side of the planner: what PlannerService asks, and the
// advancer thread. SubmitStudy checks the spec (INVALID_ARGUMENT
// "study.<field>"), stores it, and starts it: the GPU is resolved (the
// "agents" preset waits for probes), the layouts are ranked with the GPU's
// latest calibration, and rung 0 is queued (halving.h), sized to the agents
// there are (trial_geometry.h); the study is then open for leasing
// (Leases::OpenStudy). After each change of its trials (reported by the
// lease side through StudyDesk::TrialChanged) the advancer thread refits the
// calibration from every ok trial of the GPU (recalibration.h), re-ranks,
// updates the recommendation (recommendation.h) and lets successive halving
// queue the next trials or end the study; changes that arrive while it works
// on a study are taken together, so a refit's cost does not limit how fast
// results are taken. Everything the decisions use is read from the store,
// so a planner started on the same file resumes every study where it stood.
//
//   Studies studies(store, options, &queries, &events, &leases);
//   studies.ResumeStudies();
//   studies.StartAdvancer();
//   TESSERA_ASSIGN_OR_RETURN(int64_t id, studies.SubmitStudy(spec));
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/layout.h"
#include "db/trial_store.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/prediction.h"
#include "costmodel/search/plan_uncertainty.h"
#include "costmodel/search/search.h"
#include "service/leases.h"
#include "service/planner_options.h"
#include "service/study_desk.h"
#include "service/study_events.h"
#include "service/study_queries.h"
#include "service/study_run.h"
#include "service/trial_pool.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

// The most candidates one Plan call returns: a reply of every feasible
// layout of a large cluster is over 100 MB (the review's top=0 replies were
// 118 MB each and ten of them grew the planner to 3.7 GB).
inline constexpr int64_t kMaxPlanCandidates = 1000;

// What Plan answers: the ranked layouts and how far the ranking can be
// trusted (the calibration's spreads).
struct StudyPlan {
  costmodel::SearchResult result;
  costmodel::PlanUncertainty uncertainty;
};

// What Predict answers: the layout's evaluation, the interval its step time
// is likely in (feasible layouts only) and where the spreads come from.
struct StudyPrediction {
  costmodel::LayoutEvaluation evaluation;
  std::optional<costmodel::StepTimeInterval> step_time;
  std::string uncertainty_source;
};

class Studies final : public StudyDesk {
 public:
  // `store`, `queries`, `events` and `leases` must outlive this.
  Studies(db::TrialStore* store, PlannerOptions options,
          const StudyQueries* queries, StudyEvents* events, Leases* leases);
  // Stops the advancer.
  ~Studies() override;

  Studies(const Studies&) = delete;
  Studies& operator=(const Studies&) = delete;

  // Loads the store's queued and running studies and starts each (a stored
  // spec that no longer checks fails its study, saying why).
  void ResumeStudies();
  // Starts the advancer thread; Stop is idempotent, and what it had not
  // done yet is decided again from the store at restart.
  void StartAdvancer();
  void StopAdvancer();

  // ---- What PlannerService asks ----
  // `calibration` (null, or an empty file: none) is checked with the spec
  // and imported for the study's GPU before the study is stored.
  // `*agent_note` (when given) says when no registered agent can run the
  // study's trials yet (AgentShortage); the study waits for one. `owner` is
  // the submitting caller's principal name ("" for none).
  absl::StatusOr<int64_t> SubmitStudy(
      const v1::StudySpec& spec,
      const v1::ImportCalibrationRequest* calibration = nullptr,
      std::string* agent_note = nullptr, const std::string& owner = "");
  // Who submitted the study ("" when not known): one row read, for the
  // cancel check.
  absl::StatusOr<std::string> StudyOwner(int64_t study_id);
  // Cancels the queued trials and ends the study (running trials are told
  // to stop at their next heartbeat). Cancelling a cancelled study returns
  // it; a done or failed one is FAILED_PRECONDITION.
  absl::StatusOr<v1::StudySummary> CancelStudy(int64_t study_id);
  // The best layouts of `study` (1 to kMaxPlanCandidates of them), ranked
  // with its GPU's latest calibration; the "agents" GPU is the first
  // suitable agent's (FAILED_PRECONDITION before one reported probes).
  absl::StatusOr<StudyPlan> Plan(const v1::StudySpec& study);
  // `layout` for `study`, with the interval its step time is likely in.
  absl::StatusOr<StudyPrediction> Predict(const v1::StudySpec& study,
                                          const Layout& layout);
  // Calibration files in and out (calibration_exchange.h): an import is
  // used by every later study, plan and prediction on its GPU.
  absl::StatusOr<v1::ImportCalibrationResponse> ImportCalibration(
      const v1::ImportCalibrationRequest& request);
  absl::StatusOr<v1::ExportCalibrationResponse> ExportCalibration(
      const v1::ExportCalibrationRequest& request);
  // The read-only queries (study_queries.h). The recommendation is updated
  // after every report and final once the study ends.
  const StudyQueries& queries() const { return *queries_; }
  StudyEvents& events() { return *events_; }

  // Blocks until every study advance requested so far has run.
  void WaitForAdvances();

  // ---- What the lease side tells and asks (study_desk.h) ----
  bool IsActive(int64_t study_id) override {
    return FindRun(study_id) != nullptr;
  }
  std::optional<Workload> TrialWorkload(const db::Trial& trial) override;
  void TrialChanged(int64_t study_id) override;
  void AgentsChanged() override { StartWaitingStudies(); }
  void AgentsLost(const std::vector<std::string>& lost,
                  absl::Duration silence) override;
  void ClusterProbed(const std::string& cluster,
                     const std::string& message) override;
  void Tick(absl::Time now) override;

 private:
  absl::Time Now() const;
  std::shared_ptr<StudyRun> FindRun(int64_t study_id);
  std::vector<std::shared_ptr<StudyRun>> Runs();
  // Starts every study that is not open for leasing yet (it waits for
  // agents).
  void StartWaitingStudies();

  // ---- A study's progress (study_progress.cc) ----
  // Locks the run and starts or advances it; errors are logged.
  void Start(const std::shared_ptr<StudyRun>& run);
  void Advance(const std::shared_ptr<StudyRun>& run);
  absl::Status StartLocked(StudyRun& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status AdvanceLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status FinishLocked(StudyRun& run, db::StudyStatus status,
                            const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  // The run ended (in the store): forgotten here and closed for leasing.
  void ForgetLocked(StudyRun& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  // Resolves the run's workload (GPU) and calibration; false when an
  // "agents" study still has no agent with probes.
  absl::StatusOr<bool> ResolveLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  std::string ChooseBackendLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::StatusOr<TrialPool> PoolLocked(StudyRun& run, int64_t agents)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status RefitLocked(StudyRun& run, const std::vector<db::Trial>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status StoreRecommendationLocked(StudyRun& run, const TrialPool& pool,
                                         const std::vector<db::Trial>& trials,
                                         bool final)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  // Opens the started run for leasing (Leases::OpenStudy).
  void OpenForLeasingLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::StatusOr<std::vector<db::Trial>> TrialsOf(int64_t study_id);
  absl::StatusOr<Workload> WorkloadForRequest(const v1::StudySpec& spec);
  // The workload of `spec` on the first active agent of `backend` with
  // `ranks` ranks whose probes describe a usable GPU (the "agents" preset),
  // the GPU named AgentsGpuName, with that agent; nullopt while there is
  // none. Agents whose probes do not describe one are skipped, logged.
  struct OnAgent {
    Workload workload;
    db::Agent agent;
  };
  absl::StatusOr<std::optional<OnAgent>> AgentsWorkload(
      const v1::StudySpec& spec, const std::string& backend, int64_t ranks);
  // The calibration `workload` plans with: the GPU's latest import and the
  // latest fit of the trials on the GPU called `gpu_name` that is newer
  // (calibration_exchange.h), as StudyCalibration carries them to the
  // workload's stack; the stack's defaults without either. `*mape` and
  // `*samples` are the fit's (the import's without a newer fit); `*spreads`
  // (when given) how uncertain its predictions are (GpuPredictionUncertainty).
  costmodel::Calibration LatestGpuCalibration(
      const std::string& gpu_name, const Workload& workload, double* mape,
      int64_t* samples, costmodel::PredictionUncertainty* spreads = nullptr);

  // ---- The advancer ----
  // Asks the advancer to advance the study (once, however often asked
  // before it gets to it).
  void RequestAdvance(int64_t study_id);
  void RunAdvancer();
  bool AdvancerIdle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(advance_mu_) {
    return advance_queue_.empty() && !advance_busy_;
  }
  bool AdvancerHasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(advance_mu_) {
    return advance_stopping_ || !advance_queue_.empty();
  }

  db::TrialStore* const store_;
  const PlannerOptions options_;
  const StudyQueries* const queries_;
  StudyEvents* const events_;
  Leases* const leases_;

  absl::Mutex mu_;
  std::map<int64_t, std::shared_ptr<StudyRun>> runs_ ABSL_GUARDED_BY(mu_);

  // The advancer: studies to advance, in request order, each once.
  mutable absl::Mutex advance_mu_;
  std::deque<int64_t> advance_queue_ ABSL_GUARDED_BY(advance_mu_);
  std::set<int64_t> advance_queued_ ABSL_GUARDED_BY(advance_mu_);
  bool advance_busy_ ABSL_GUARDED_BY(advance_mu_) = false;
  bool advance_stopping_ ABSL_GUARDED_BY(advance_mu_) = false;
  std::thread advancer_;
};

}  // namespace tessera::service
