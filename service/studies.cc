// Studies: submitting, cancelling and resuming studies, the offline ranking
// (Plan, Predict), calibration files, the advancer thread, and what the
// lease side tells the studies (study_desk.h). A study's progress is in
// study_progress.cc.
#include "service/studies.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "costmodel/search/plan_uncertainty.h"
#include "service/agent_roster.h"
#include "service/agents_gpu.h"
#include "service/background_pool.h"
#include "service/plan_convert.h"
#include "service/probe_check.h"
#include "service/calibration_exchange.h"
#include "service/proto_mapping.h"
#include "service/recalibration.h"
#include "service/study_scale.h"
#include "service/trial_geometry.h"
#include "proto/convert.h"

namespace tessera::service {

// The advancer's nice increment: as the Plan and Predict pool's.
constexpr int kAdvancerNiceIncrement = 10;

Studies::Studies(db::TrialStore* store, PlannerOptions options,
                 const StudyQueries* queries, StudyEvents* events,
                 Leases* leases)
    : store_(store),
      options_(std::move(options)),
      queries_(queries),
      events_(events),
      leases_(leases) {}

Studies::~Studies() { StopAdvancer(); }

absl::Time Studies::Now() const {
  return options_.clock ? options_.clock() : absl::Now();
}

void Studies::StartAdvancer() {
  if (advancer_.joinable()) return;
  advancer_ = std::thread([this] { RunAdvancer(); });
}

void Studies::StopAdvancer() {
  {
    absl::MutexLock lock(&advance_mu_);
    advance_stopping_ = true;
  }
  if (advancer_.joinable()) advancer_.join();
}

void Studies::RequestAdvance(int64_t study_id) {
  absl::MutexLock lock(&advance_mu_);
  if (advance_stopping_) return;
  if (advance_queued_.insert(study_id).second) {
    advance_queue_.push_back(study_id);
  }
}

void Studies::RunAdvancer() {
  // Refits and re-ranking wait for the agents' calls on a busy core (a
  // fleet's heartbeats, leases and reports are answered first).
  LowerThisThreadsPriority(kAdvancerNiceIncrement);
  while (true) {
    int64_t study_id = 0;
    {
      absl::MutexLock lock(&advance_mu_);
      advance_mu_.Await(absl::Condition(this, &Studies::AdvancerHasWork));
      if (advance_stopping_) return;
      study_id = advance_queue_.front();
      advance_queue_.pop_front();
      advance_queued_.erase(study_id);
      advance_busy_ = true;
    }
    std::shared_ptr<StudyRun> run = FindRun(study_id);
    if (run != nullptr) Advance(run);
    absl::MutexLock lock(&advance_mu_);
    advance_busy_ = false;
  }
}

void Studies::WaitForAdvances() {
  absl::MutexLock lock(&advance_mu_);
  advance_mu_.Await(absl::Condition(this, &Studies::AdvancerIdle));
}

std::optional<Workload> Studies::TrialWorkload(const db::Trial& trial) {
  std::shared_ptr<StudyRun> run = FindRun(trial.study_id);
  if (run == nullptr) return std::nullopt;
  std::optional<Workload> study;
  {
    absl::MutexLock lock(&run->resolved_mu);
    study = run->resolved_workload;
  }
  if (!study) return std::nullopt;
  absl::StatusOr<Workload> ran =
      WorkloadTrialRan(trial, *study, run->options().layers);
  if (!ran.ok()) return std::nullopt;
  return *std::move(ran);
}

void Studies::TrialChanged(int64_t study_id) {
  // An ended study is not advanced (the advancer finds no run); the store
  // cancels, not re-queues, the trials of a final study whose lease ends.
  RequestAdvance(study_id);
}

void Studies::AgentsLost(const std::vector<std::string>& lost,
                         absl::Duration silence) {
  const std::string which = absl::StrCat(
      lost.size() == 1 ? "agent " : "agents ", absl::StrJoin(lost, ", "),
      " sent no heartbeat for ", absl::FormatDuration(silence), " and ",
      lost.size() == 1 ? "was" : "were", " marked gone");
  for (const std::shared_ptr<StudyRun>& run : Runs()) {
    // The spec's backend and ranks, not the study's lock (a refit holds it).
    absl::StatusOr<std::string> shortage =
        AgentShortage(*store_, run->options().backend, run->gpus_per_node());
    if (!shortage.ok()) continue;
    events_->Emit(
        run->id,
        shortage->empty()
            ? absl::StrCat(which, "; its trials run again on the others")
            : absl::StrCat(which,
                           "; the study is short of agents: ", *shortage));
  }
}

void Studies::ClusterProbed(const std::string& cluster,
                            const std::string& message) {
  for (const std::shared_ptr<StudyRun>& run : Runs()) {
    bool same = false;
    {
      absl::MutexLock lock(&run->mu);
      same = run->gpu_name == cluster;
    }
    if (same) events_->Emit(run->id, message);
  }
}

void Studies::Tick(absl::Time now) {
  for (const std::shared_ptr<StudyRun>& run : Runs()) {
    const double budget_s = run->options().time_budget_s;
    if (budget_s > 0 && now - run->created_at >= absl::Seconds(budget_s)) {
      RequestAdvance(run->id);
    }
  }
  StartWaitingStudies();
}

std::vector<std::shared_ptr<StudyRun>> Studies::Runs() {
  std::vector<std::shared_ptr<StudyRun>> runs;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, run] : runs_) runs.push_back(run);
  return runs;
}

absl::StatusOr<std::string> Studies::StudyOwner(int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  return study.owner;
}

absl::StatusOr<int64_t> Studies::SubmitStudy(
    const v1::StudySpec& spec, const v1::ImportCalibrationRequest* calibration,
    std::string* agent_note, const std::string& owner) {
  TESSERA_ASSIGN_OR_RETURN(CheckedStudy checked, CheckStudySpec(spec));
  std::optional<CheckedImport> import;
  if (calibration != nullptr && !calibration->calibration_json().empty()) {
    if (checked.agents_gpu) {
      return absl::InvalidArgumentError(
          "calibration: a study on the 'agents' GPU cannot start from a "
          "calibration file (files are fitted for a GPU preset)");
    }
    absl::StatusOr<CheckedImport> c = CheckImport(*calibration);
    if (!c.ok()) {
      return absl::Status(c.status().code(),
                          absl::StrCat("calibration: ", c.status().message()));
    }
    if (c->row.gpu != checked.workload.cluster.gpu.name) {
      return absl::InvalidArgumentError(absl::StrCat(
          "calibration: ", c->row.source, " was fitted on gpu '", c->row.gpu,
          "', the study runs on '", checked.workload.cluster.gpu.name, "'"));
    }
    import = *std::move(c);
  }
  // A study that searches its GPU count runs at the count chosen
  // (study_scale.h).
  if (absl::Status s = ChooseStudyScale(
          StudyCalibration(checked.workload, std::nullopt,
                           import.has_value() ? &import->file : nullptr),
          &checked);
      !s.ok()) {
    return InStudy(s);
  }
  if (!checked.agents_gpu) {
    // A global batch no layout reaches is the spec's error (as `tessera
    // plan` says); the "agents" GPU is checked when it is known.
    costmodel::SearchOptions reach;
    reach.top = 1;
    absl::StatusOr<costmodel::SearchResult> r = costmodel::SearchLayouts(
        checked.workload,
        StudyCalibration(checked.workload, std::nullopt,
                         import.has_value() ? &import->file : nullptr),
        reach);
    if (!r.ok()) return InStudy(r.status());
  }
  if (import.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(const v1::ImportCalibrationResponse imported,
                             StoreImport(*store_, *import));
    options_.log.Info(absl::StrCat(
        "imported calibration ", imported.import_id(), " for ", imported.gpu(),
        " (", import->row.source, ") with a study"));
  }
  db::NewStudy s;
  s.name = checked.spec.name();
  s.spec_json = StudySpecToJson(checked.spec);
  s.model = checked.workload.model.name;
  s.gpu = checked.agents_gpu ? std::string(kAgentsGpuPreset)
                             : checked.workload.cluster.gpu.name;
  s.nodes = checked.workload.cluster.nodes;
  s.gpus_per_node = checked.workload.cluster.gpus_per_node;
  s.trial_budget = checked.trials.max_trials;
  s.time_budget_s = checked.trials.time_budget_s;
  s.owner = owner;
  if (agent_note != nullptr && checked.trials.max_trials != 0) {
    absl::StatusOr<std::string> note =
        AgentShortage(*store_, checked.trials.backend,
                      checked.workload.cluster.gpus_per_node);
    *agent_note = note.ok() ? *note : "";
  }
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->CreateStudy(s));
  auto run = std::make_shared<StudyRun>(study.id, std::move(checked),
                                        study.created_at);
  {
    absl::MutexLock lock(&mu_);
    runs_[study.id] = run;
  }
  events_->Emit(study.id,
                absl::StrCat("submitted: ", s.name, " (", s.model, " on ",
                             s.nodes, "x", s.gpus_per_node, " ", s.gpu, ")"));
  Start(run);
  return study.id;
}

void Studies::ResumeStudies() {
  db::StudyFilter filter;
  filter.statuses = {db::StudyStatus::kQueued, db::StudyStatus::kRunning};
  absl::StatusOr<std::vector<db::Study>> studies = store_->ListStudies(filter);
  if (!studies.ok()) {
    options_.log.Error(absl::StrCat("cannot list the studies to resume: ",
                                    studies.status().message()));
    return;
  }
  std::reverse(studies->begin(), studies->end());  // oldest first
  std::vector<std::shared_ptr<StudyRun>> resumed;
  for (const db::Study& study : *studies) {
    absl::StatusOr<CheckedStudy> checked =
        [&]() -> absl::StatusOr<CheckedStudy> {
      TESSERA_ASSIGN_OR_RETURN(
          v1::StudySpec spec,
          StudySpecFromStoredJson(study.spec_json,
                                  absl::StrCat("study ", study.id)));
      return CheckStudySpec(spec);
    }();
    if (!checked.ok()) {
      const std::string reason =
          absl::StrCat("cannot resume: its stored spec no longer checks: ",
                       checked.status().message());
      (void)store_->SetStudyStatus(study.id, db::StudyStatus::kFailed, reason);
      options_.log.Error(absl::StrCat("study ", study.id, ": ", reason));
      continue;
    }
    auto run = std::make_shared<StudyRun>(study.id, *std::move(checked),
                                          study.created_at);
    {
      absl::MutexLock lock(&mu_);
      runs_[study.id] = run;
    }
    resumed.push_back(run);
  }
  for (const std::shared_ptr<StudyRun>& run : resumed) {
    options_.log.Info(absl::StrCat("study ", run->id, ": resuming"));
    Start(run);
  }
}

std::shared_ptr<StudyRun> Studies::FindRun(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(study_id);
  return it == runs_.end() ? nullptr : it->second;
}

void Studies::StartWaitingStudies() {
  for (const std::shared_ptr<StudyRun>& run : Runs()) {
    if (!leases_->IsOpen(run->id)) Start(run);
  }
}

absl::StatusOr<std::vector<db::Trial>> Studies::TrialsOf(int64_t study_id) {
  db::TrialFilter filter;
  filter.study_id = study_id;
  return store_->ListTrials(filter);
}

absl::StatusOr<v1::StudySummary> Studies::CancelStudy(int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  if (study.status == db::StudyStatus::kCancelled) {
    return queries_->Summary(study_id);
  }
  if (db::IsFinal(study.status)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study ", study_id, " is ", db::StudyStatusName(study.status),
        "; only a queued or running study can be cancelled"));
  }
  std::shared_ptr<StudyRun> run = FindRun(study_id);
  if (run != nullptr) {
    absl::MutexLock lock(&run->mu);
    if (!run->finished) {
      TESSERA_RETURN_IF_ERROR(FinishLocked(*run, db::StudyStatus::kCancelled,
                                           "cancelled by the user"));
    }
  } else {
    TESSERA_RETURN_IF_ERROR(store_->CancelQueuedTrials(study_id).status());
    TESSERA_RETURN_IF_ERROR(store_->SetStudyStatus(
        study_id, db::StudyStatus::kCancelled, "cancelled by the user"));
  }
  return queries_->Summary(study_id);
}

absl::StatusOr<Workload> Studies::WorkloadForRequest(
    const v1::StudySpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(const CheckedStudy checked, CheckStudySpec(spec));
  if (!checked.agents_gpu) return checked.workload;
  TESSERA_ASSIGN_OR_RETURN(
      std::optional<OnAgent> on,
      AgentsWorkload(spec, checked.trials.backend,
                     checked.workload.cluster.gpus_per_node));
  if (on.has_value()) return std::move(on->workload);
  return absl::FailedPreconditionError(absl::StrCat(
      "study.cluster.gpu.preset: 'agents': no agent with at least ",
      checked.workload.cluster.gpus_per_node,
      " ranks has reported its probes yet"));
}

absl::StatusOr<std::optional<Studies::OnAgent>> Studies::AgentsWorkload(
    const v1::StudySpec& spec, const std::string& backend, int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Agent> agents,
                           SuitableAgents(*store_, backend, ranks));
  for (const db::Agent& agent : agents) {
    db::ProbeFilter probes_of;
    probes_of.agent_id = agent.info.id;
    TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Probe> probes,
                             store_->ListProbes(probes_of));
    absl::StatusOr<v1::GpuSpec> gpu =
        GpuSpecFromAgent(agent, probes, spec.cluster().gpu());
    if (!gpu.ok()) continue;
    // Its GEMM rate as far as it is trusted (probe_check.h): one probe does
    // not make the study's GPU faster than the others' probes allow.
    if (!spec.cluster().gpu().has_peak_dense_tflops()) {
      std::vector<db::Probe> gemm;
      for (const db::Agent& each : agents) {
        db::ProbeFilter of;
        of.agent_id = each.info.id;
        TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Probe> theirs,
                                 store_->ListProbes(of));
        gemm.insert(gemm.end(), theirs.begin(), theirs.end());
      }
      const std::optional<double> trusted =
          TrustedPeakTflopsPerRank(agent, agents, gemm);
      if (trusted.has_value()) gpu->set_peak_dense_tflops(*trusted);
    }
    absl::StatusOr<Workload> w = WorkloadWithGpu(spec, *gpu);
    if (!w.ok()) {
      options_.log.Warning(absl::StrCat(
          "the probes of agent ", agent.info.id,
          " do not describe a usable GPU: ", w.status().message()));
      continue;
    }
    w->cluster.gpu.name = AgentsGpuName(agent);
    return OnAgent{*std::move(w), agent};
  }
  return std::nullopt;
}

absl::StatusOr<StudyPlan> Studies::Plan(const v1::StudySpec& study) {
  TESSERA_ASSIGN_OR_RETURN(const Workload workload, WorkloadForRequest(study));
  TESSERA_ASSIGN_OR_RETURN(
      const costmodel::SearchOptions search,
      [&]() -> absl::StatusOr<costmodel::SearchOptions> {
        absl::StatusOr<costmodel::SearchOptions> o =
            SearchOptionsFromSpec(study.search());
        if (!o.ok()) return InStudy(o.status());
        if (o->top == 0 || o->top > kMaxPlanCandidates) {
          return absl::InvalidArgumentError(absl::StrCat(
              "study.search.top: the planner service returns 1 to ",
              kMaxPlanCandidates, " candidates, not ",
              o->top == 0 ? std::string("0 (every feasible layout)")
                          : absl::StrCat(o->top),
              "; rank every layout locally (tessera plan without "
              "--planner)"));
        }
        return o;
      }());
  double mape = 0;
  int64_t samples = 0;
  costmodel::PredictionUncertainty spreads;
  const costmodel::Calibration calibration = LatestGpuCalibration(
      workload.cluster.gpu.name, workload, &mape, &samples, &spreads);
  absl::StatusOr<costmodel::SearchResult> result =
      costmodel::SearchLayouts(workload, calibration, search);
  if (!result.ok()) return InStudy(result.status());
  StudyPlan out;
  out.uncertainty =
      costmodel::AssessPlan(workload, *result, calibration, spreads);
  out.result = *std::move(result);
  return out;
}

absl::StatusOr<StudyPrediction> Studies::Predict(const v1::StudySpec& study,
                                                 const Layout& layout) {
  TESSERA_ASSIGN_OR_RETURN(const Workload workload, WorkloadForRequest(study));
  double mape = 0;
  int64_t samples = 0;
  costmodel::PredictionUncertainty spreads;
  const costmodel::Calibration calibration = LatestGpuCalibration(
      workload.cluster.gpu.name, workload, &mape, &samples, &spreads);
  StudyPrediction out;
  out.evaluation = costmodel::PredictLayout(workload, layout, calibration);
  if (out.evaluation.feasible) {
    out.step_time =
        costmodel::IntervalOf(workload, out.evaluation, calibration, spreads);
  }
  out.uncertainty_source = spreads.source;
  return out;
}

absl::StatusOr<v1::ImportCalibrationResponse> Studies::ImportCalibration(
    const v1::ImportCalibrationRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(v1::ImportCalibrationResponse r,
                           service::ImportCalibration(*store_, request));
  options_.log.Info(absl::StrCat(
      "imported calibration ", r.import_id(), " for ", r.gpu(), " (",
      request.source(), ": ", r.stack(), " stack, ", r.samples(),
      " measurements, ", r.collectives(), " collective points)"));
  return r;
}

absl::StatusOr<v1::ExportCalibrationResponse> Studies::ExportCalibration(
    const v1::ExportCalibrationRequest& request) {
  return service::ExportCalibration(*store_, request);
}

costmodel::Calibration Studies::LatestGpuCalibration(
    const std::string& gpu_name, const Workload& workload, double* mape,
    int64_t* samples, costmodel::PredictionUncertainty* spreads) {
  *mape = 0;
  *samples = 0;
  if (spreads != nullptr) {
    *spreads =
        costmodel::DefaultPredictionUncertainty(workload.training.precision);
  }
  absl::StatusOr<GpuCalibrationSources> s =
      LatestGpuCalibrationSources(*store_, gpu_name);
  if (!s.ok()) {
    options_.log.Warning(
        absl::StrCat("calibration of ", gpu_name, ": ", s.status().message()));
    return StudyCalibration(workload, std::nullopt);
  }
  if (!s->problem.empty()) {
    options_.log.Warning(absl::StrCat("calibration of ", gpu_name,
                                      ": import set aside: ", s->problem));
  }
  const costmodel::CalibrationFile* imported =
      s->imported.has_value() ? &*s->imported : nullptr;
  if (imported != nullptr) {
    *mape = imported->step_time.fitted_mape;
    *samples = imported->samples;
  }
  std::optional<costmodel::Calibration> fit;
  if (s->trial_fit.has_value()) {
    std::vector<std::string> skipped;
    fit = CalibrationFromStored(*s->trial_fit, &skipped);
    if (!skipped.empty()) {
      options_.log.Warning(
          absl::StrCat("calibration ", s->trial_fit->id, " of ", gpu_name,
                       ": skipped unknown or out-of-range coefficients: ",
                       absl::StrJoin(skipped, ", ")));
    }
    *mape = s->trial_fit->fit_error;
    *samples = s->trial_fit->samples;
  }
  if (spreads != nullptr) *spreads = GpuPredictionUncertainty(workload, *s);
  costmodel::Calibration c = StudyCalibration(workload, fit, imported);
  if (s->collectives != nullptr) c.collectives = s->collectives;
  return c;
}

}  // namespace tessera::service
