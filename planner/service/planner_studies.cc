// Planner: the PlannerService side (submitting, reading, cancelling studies;
// the offline ranking) and resuming studies after a restart.
#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "planner/search/plan_uncertainty.h"
#include "planner/service/agents_gpu.h"
#include "planner/service/calibration_exchange.h"
#include "planner/service/planner.h"
#include "planner/service/proto_mapping.h"
#include "planner/service/recalibration.h"
#include "planner/service/recommendation.h"
#include "planner/service/trial_geometry.h"
#include "proto/convert.h"

namespace tessera::service {

absl::StatusOr<int64_t> Planner::SubmitStudy(
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
  if (!checked.agents_gpu) {
    // A global batch no layout reaches is the spec's error (as `tessera
    // plan` says); the "agents" GPU is checked when it is known.
    planner::SearchOptions reach;
    reach.top = 1;
    absl::StatusOr<planner::SearchResult> r = planner::SearchLayouts(
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
    absl::StatusOr<std::string> note = AgentShortage(
        checked.trials.backend, checked.workload.cluster.gpus_per_node);
    *agent_note = note.ok() ? *note : "";
  }
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->CreateStudy(s));
  auto run = std::make_shared<StudyRun>(study.id, std::move(checked),
                                        study.created_at);
  {
    absl::MutexLock lock(&mu_);
    runs_[study.id] = run;
  }
  Emit(study.id, absl::StrCat("submitted: ", s.name, " (", s.model, " on ",
                              s.nodes, "x", s.gpus_per_node, " ", s.gpu, ")"));
  Start(run);
  return study.id;
}

void Planner::ResumeStudies() {
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

std::shared_ptr<StudyRun> Planner::FindRun(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(study_id);
  return it == runs_.end() ? nullptr : it->second;
}

void Planner::StartWaitingStudies() {
  std::vector<std::shared_ptr<StudyRun>> waiting;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, run] : runs_) {
      if (runnable_.count(id) == 0) waiting.push_back(run);
    }
  }
  for (const std::shared_ptr<StudyRun>& run : waiting) Start(run);
}

absl::StatusOr<std::vector<db::Trial>> Planner::TrialsOf(int64_t study_id) {
  db::TrialFilter filter;
  filter.study_id = study_id;
  return store_->ListTrials(filter);
}

absl::StatusOr<v1::StudySummary> Planner::CancelStudy(int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(study_id));
  if (study.status == db::StudyStatus::kCancelled) return Summary(study_id);
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
  return Summary(study_id);
}

absl::StatusOr<Workload> Planner::WorkloadForRequest(
    const v1::StudySpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(const CheckedStudy checked, CheckStudySpec(spec));
  if (!checked.agents_gpu) return checked.workload;
  TESSERA_ASSIGN_OR_RETURN(
      const std::vector<db::Agent> agents,
      SuitableAgents(checked.trials.backend,
                     checked.workload.cluster.gpus_per_node));
  for (const db::Agent& agent : agents) {
    db::ProbeFilter probes_of;
    probes_of.agent_id = agent.info.id;
    TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Probe> probes,
                             store_->ListProbes(probes_of));
    absl::StatusOr<v1::GpuSpec> gpu =
        GpuSpecFromAgent(agent, probes, spec.cluster().gpu());
    if (!gpu.ok()) continue;
    TESSERA_ASSIGN_OR_RETURN(Workload w, WorkloadWithGpu(spec, *gpu));
    w.cluster.gpu.name = AgentsGpuName(agent);
    return w;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "study.cluster.gpu.preset: 'agents': no agent with at least ",
      checked.workload.cluster.gpus_per_node,
      " ranks has reported its probes yet"));
}

absl::StatusOr<v1::PlanResponse> Planner::Plan(const v1::PlanRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(const Workload workload,
                           WorkloadForRequest(request.study()));
  TESSERA_ASSIGN_OR_RETURN(
      const planner::SearchOptions search,
      [&]() -> absl::StatusOr<planner::SearchOptions> {
        absl::StatusOr<planner::SearchOptions> o =
            SearchOptionsFromSpec(request.study().search());
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
  planner::PredictionUncertainty spreads;
  const planner::Calibration calibration = LatestGpuCalibration(
      workload.cluster.gpu.name, workload, &mape, &samples, &spreads);
  absl::StatusOr<planner::SearchResult> result =
      planner::SearchLayouts(workload, calibration, search);
  if (!result.ok()) return InStudy(result.status());
  v1::PlanResponse out = PlanResponseFromResult(*result);
  *out.mutable_uncertainty() = PlanUncertaintyToProto(
      planner::AssessPlan(workload, *result, calibration, spreads));
  return out;
}

absl::StatusOr<v1::PredictResponse> Planner::Predict(
    const v1::PredictRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(const Workload workload,
                           WorkloadForRequest(request.study()));
  TESSERA_ASSIGN_OR_RETURN(const Layout layout,
                           LayoutFromProto(request.layout()));
  double mape = 0;
  int64_t samples = 0;
  planner::PredictionUncertainty spreads;
  const planner::Calibration calibration = LatestGpuCalibration(
      workload.cluster.gpu.name, workload, &mape, &samples, &spreads);
  const planner::LayoutEvaluation evaluation =
      planner::PredictLayout(workload, layout, calibration);
  v1::PredictResponse out;
  *out.mutable_evaluation() = EvaluationToProto(evaluation);
  if (evaluation.feasible) {
    *out.mutable_step_time_interval() = IntervalToProto(
        planner::IntervalOf(workload, evaluation, calibration, spreads));
  }
  out.set_uncertainty_source(spreads.source);
  return out;
}

absl::StatusOr<v1::ImportCalibrationResponse> Planner::ImportCalibration(
    const v1::ImportCalibrationRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(v1::ImportCalibrationResponse r,
                           service::ImportCalibration(*store_, request));
  options_.log.Info(absl::StrCat(
      "imported calibration ", r.import_id(), " for ", r.gpu(), " (",
      request.source(), ": ", r.stack(), " stack, ", r.samples(),
      " measurements, ", r.collectives(), " collective points)"));
  return r;
}

absl::StatusOr<v1::ExportCalibrationResponse> Planner::ExportCalibration(
    const v1::ExportCalibrationRequest& request) {
  return service::ExportCalibration(*store_, request);
}

planner::Calibration Planner::LatestGpuCalibration(
    const std::string& gpu_name, const Workload& workload, double* mape,
    int64_t* samples, planner::PredictionUncertainty* spreads) {
  *mape = 0;
  *samples = 0;
  if (spreads != nullptr) {
    *spreads =
        planner::DefaultPredictionUncertainty(workload.training.precision);
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
  const planner::CalibrationFile* imported =
      s->imported.has_value() ? &*s->imported : nullptr;
  if (imported != nullptr) {
    *mape = imported->step_time.fitted_mape;
    *samples = imported->samples;
  }
  std::optional<planner::Calibration> fit;
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
  planner::Calibration c = StudyCalibration(workload, fit, imported);
  if (s->collectives != nullptr) c.collectives = s->collectives;
  return c;
}

}  // namespace tessera::service
