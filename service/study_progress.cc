// Studies: a study's progress. Starting it (resolve the GPU, wait for
// agents), advancing it after every change of its trials (refit, re-rank,
// successive halving, recommendation) and ending it. Every decision reads
// the study's trials from the store.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/calibration_fit.h"
#include "costmodel/fit/fit_file.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "service/agent_roster.h"
#include "service/agents_gpu.h"
#include "service/calibration_exchange.h"
#include "service/halving.h"
#include "service/measured_layouts.h"
#include "service/recalibration.h"
#include "service/recommendation.h"
#include "service/studies.h"
#include "service/trial_geometry.h"

namespace tessera::service {
namespace {

int64_t CountOk(const std::vector<db::Trial>& trials) {
  return std::count_if(trials.begin(), trials.end(), [](const db::Trial& t) {
    return t.status == db::TrialState::kOk;
  });
}

}  // namespace

void Studies::Start(const std::shared_ptr<StudyRun>& run) {
  absl::MutexLock lock(&run->mu);
  if (run->finished) return;
  const absl::Status s = StartLocked(*run);
  if (!s.ok()) {
    options_.log.Warning(
        absl::StrCat("study ", run->id, ": cannot start: ", s.message()));
  }
}

void Studies::Advance(const std::shared_ptr<StudyRun>& run) {
  absl::MutexLock lock(&run->mu);
  if (run->finished) return;
  absl::Status s =
      run->workload.has_value() ? AdvanceLocked(*run) : StartLocked(*run);
  if (!s.ok()) {
    options_.log.Warning(
        absl::StrCat("study ", run->id, ": cannot advance: ", s.message()));
  }
}

absl::Status Studies::StartLocked(StudyRun& run) {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(run.id));
  if (db::IsFinal(study.status)) {
    ForgetLocked(run);
    return absl::OkStatus();
  }
  TESSERA_ASSIGN_OR_RETURN(const bool resolved, ResolveLocked(run));
  if (resolved) {
    absl::MutexLock lock(&run.resolved_mu);
    if (!run.resolved_workload) run.resolved_workload = run.workload;
  }
  const int64_t gpn = run.gpus_per_node();
  if (!resolved) {
    const std::string reason =
        absl::StrCat("waiting for an agent",
                     run.options().backend.empty()
                         ? ""
                         : absl::StrCat(" (", run.options().backend, ")"),
                     " with at least ", gpn,
                     " ranks to report its probes (the 'agents' GPU)");
    if (study.status_reason != reason) {
      TESSERA_RETURN_IF_ERROR(
          store_->SetStudyStatus(run.id, db::StudyStatus::kQueued, reason));
      events_->Emit(run.id, reason);
    }
    return absl::OkStatus();
  }
  if (run.options().max_trials == 0) {
    absl::StatusOr<TrialPool> pool = PoolLocked(run, 0);
    if (!pool.ok()) {
      return FinishLocked(run, db::StudyStatus::kFailed,
                          std::string(pool.status().message()));
    }
    return FinishLocked(run, db::StudyStatus::kDone,
                        "no trials requested (trials.max_trials = 0): the "
                        "recommendation is the calibrated model's prediction");
  }
  if (run.backend.empty()) run.backend = ChooseBackendLocked(run);
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Trial> trials,
                           TrialsOf(run.id));
  if (trials.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Agent> agents,
                             SuitableAgents(*store_, run.backend, gpn));
    if (agents.empty()) {
      if (study.recommendation_json.empty()) {
        absl::StatusOr<TrialPool> pool = PoolLocked(run, 0);
        if (!pool.ok()) {
          return FinishLocked(run, db::StudyStatus::kFailed,
                              std::string(pool.status().message()));
        }
        TESSERA_RETURN_IF_ERROR(
            StoreRecommendationLocked(run, *pool, trials, /*final=*/false));
      }
      absl::StatusOr<std::string> shortage =
          AgentShortage(*store_, run.backend, gpn);
      const std::string reason =
          shortage.ok() && !shortage->empty()
              ? absl::StrCat("waiting for agents: ", *shortage)
              : absl::StrCat("waiting for agents",
                             run.backend.empty()
                                 ? ""
                                 : absl::StrCat(" (", run.backend, ")"),
                             " with at least ", gpn, " ranks each");
      if (study.status_reason != reason) {
        TESSERA_RETURN_IF_ERROR(
            store_->SetStudyStatus(run.id, db::StudyStatus::kQueued, reason));
        events_->Emit(run.id, reason);
      }
      return absl::OkStatus();
    }
  }
  OpenForLeasingLocked(run);
  return AdvanceLocked(run);
}

absl::StatusOr<bool> Studies::ResolveLocked(StudyRun& run) {
  if (run.workload.has_value()) return true;
  const CheckedStudy& c = run.checked;
  if (!c.agents_gpu) {
    run.workload = c.workload;
    run.gpu_name = c.workload.cluster.gpu.name;
  } else {
    // A planner that resolved it before kept it with the recommendation.
    TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(run.id));
    if (!study.recommendation_json.empty()) {
      absl::StatusOr<v1::Recommendation> stored =
          RecommendationFromJson(study.recommendation_json);
      if (stored.ok() && stored->has_gpu() && !stored->gpu_name().empty()) {
        TESSERA_ASSIGN_OR_RETURN(Workload w,
                                 WorkloadWithGpu(c.spec, stored->gpu()));
        w.cluster.gpu.name = stored->gpu_name();
        run.workload = std::move(w);
        run.gpu_name = stored->gpu_name();
      }
    }
    if (!run.workload.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(
          std::optional<OnAgent> on,
          AgentsWorkload(c.spec, run.options().backend, run.gpus_per_node()));
      if (on.has_value()) {
        const db::Agent& agent = on->agent;
        run.workload = std::move(on->workload);
        run.gpu_name = AgentsGpuName(agent);
        if (run.backend.empty()) run.backend = agent.info.backend;
        events_->Emit(
            run.id,
            absl::StrFormat(
                "the 'agents' GPU is %s: %.4g TFLOP/s, %.3g GiB, %.4g GB/s "
                "copy, %.4g GB/s between agents (from agent %s's probes; "
                "power is a nominal %g W per rank)",
                run.gpu_name, run.workload->cluster.gpu.peak_dense_tflops,
                static_cast<double>(run.workload->cluster.gpu.memory_bytes) /
                    (1024.0 * 1024 * 1024),
                run.workload->cluster.gpu.nvlink_gbs,
                run.workload->cluster.gpu.inter_node_gbs, agent.info.id,
                run.workload->cluster.gpu.tdp_w));
      }
    }
    if (!run.workload.has_value()) return false;
  }
  run.calibration =
      LatestGpuCalibration(run.gpu_name, *run.workload, &run.calibration_mape,
                           &run.calibration_samples, &run.spreads);
  return true;
}

std::string Studies::ChooseBackendLocked(StudyRun& run) {
  if (!run.options().backend.empty()) return run.options().backend;
  absl::StatusOr<std::vector<db::Trial>> trials = TrialsOf(run.id);
  if (trials.ok()) {
    for (const db::Trial& t : *trials) {
      if (t.measured.has_value() && !t.measured->backend.empty()) {
        return t.measured->backend;
      }
    }
  }
  absl::StatusOr<std::vector<db::Agent>> agents =
      SuitableAgents(*store_, "", run.gpus_per_node());
  if (!agents.ok() || agents->empty()) return "";
  // The backend most suitable agents have; on a tie the one that runs on
  // GPUs (the cost model's own hardware).
  std::string best;
  int64_t best_count = 0;
  for (const TrialBackend& b : TrialBackends()) {
    const int64_t n = std::count_if(
        agents->begin(), agents->end(),
        [&](const db::Agent& a) { return a.info.backend == b.name; });
    if (n > best_count || (n == best_count && n > 0 && b.runs_on_named_gpu)) {
      best = b.name;
      best_count = n;
    }
  }
  return best;
}

void Studies::OpenForLeasingLocked(StudyRun& run) {
  LeasableStudy r;
  r.backend = run.backend;
  r.ranks_per_agent = run.gpus_per_node();
  r.model = run.checked.spec.model();
  if (run.options().layers > 0) r.model.set_layers(run.options().layers);
  r.seq_len = run.workload->training.seq_len;
  r.stack = run.workload->training.stack;
  r.precision = std::string(PrecisionName(run.workload->training.precision));
  r.options = run.options();
  r.cluster = run.gpu_name;
  r.agents_gpu = run.checked.agents_gpu;
  leases_->OpenStudy(run.id, std::move(r));
}

void Studies::ForgetLocked(StudyRun& run) {
  run.finished = true;
  leases_->CloseStudy(run.id);
  absl::MutexLock lock(&mu_);
  runs_.erase(run.id);
}

absl::StatusOr<TrialPool> Studies::PoolLocked(StudyRun& run, int64_t agents) {
  costmodel::SearchOptions search = run.checked.search;
  // Enough candidates for the budget's rung 0 and its replacements.
  if (search.top != 0) {
    search.top = std::max<int64_t>(search.top, 4 * run.options().max_trials);
  }
  absl::StatusOr<TrialPool> pool = BuildTrialPool(
      *run.workload, run.calibration, search, agents, run.options().layers);
  if (!pool.ok()) return InStudy(pool.status());
  // How uncertain each candidate's prediction is, with the spreads of what
  // it plans with (trial_choice.h adds the study's own model error).
  const costmodel::RankingUncertainty ranking = costmodel::AssessRanking(
      *run.workload, pool->search.candidates, run.calibration, run.spreads);
  const double model_var = run.spreads.model_log_sd * run.spreads.model_log_sd;
  for (size_t i = 0;
       i < pool->entries.size() && i < ranking.intervals.size();
       ++i) {
    const double sd = ranking.intervals[i].log_sd;
    pool->entries[i].coefficient_log_sd =
        std::sqrt(std::max(0.0, sd * sd - model_var));
  }
  return pool;
}

absl::Status Studies::AdvanceLocked(StudyRun& run) {
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store_->GetStudy(run.id));
  if (db::IsFinal(study.status)) {
    ForgetLocked(run);
    return absl::OkStatus();
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Trial> trials, TrialsOf(run.id));
  const int64_t ok = CountOk(trials);
  // Refit after every new result, and once at the start: earlier studies'
  // trials on this cluster and stack are what this one starts from.
  if (ok != run.fitted_ok_trials) {
    const absl::Status refit = RefitLocked(run, trials);
    if (!refit.ok()) {
      options_.log.Warning(absl::StrCat("study ", run.id,
                                        ": refit failed, keeping the "
                                        "calibration: ",
                                        refit.message()));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      const std::vector<db::Agent> agents,
      SuitableAgents(*store_, run.backend, run.gpus_per_node()));
  absl::StatusOr<TrialPool> pool =
      PoolLocked(run, static_cast<int64_t>(agents.size()));
  if (!pool.ok()) {
    return FinishLocked(run, db::StudyStatus::kFailed,
                        std::string(pool.status().message()));
  }
  const double budget_s = run.options().time_budget_s;
  HalvingInput input;
  input.options = &run.options();
  input.trials = &trials;
  input.pool = &pool->entries;
  input.time_up =
      budget_s > 0 && Now() - run.created_at >= absl::Seconds(budget_s);
  // As many trials at once as the agents can run side by side.
  for (const PoolEntry& e : pool->entries) {
    if (!e.plan) continue;
    input.trial_slots = std::max<int64_t>(
        1, static_cast<int64_t>(agents.size()) / e.plan->gang_size);
    break;
  }
  input.prior_model_log_sd = run.spreads.model_log_sd;
  const HalvingDecision decision = DecideNextTrials(input);
  for (const std::string& note : decision.notes) events_->Emit(run.id, note);
  if (!decision.queue.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> ids,
                             store_->AddTrials(run.id, decision.queue));
    for (int64_t id : ids) {
      absl::StatusOr<db::Trial> t = store_->GetTrial(id);
      if (!t.ok()) continue;
      const std::string note =
          TrialScaleNote(*t, *run.workload, run.options().layers);
      events_->Emit(
          run.id,
          absl::StrCat("trial ", id, " queued at rung ", t->rung, " (",
                       t->steps, " steps, ", t->gang_size, " agent",
                       t->gang_size == 1 ? "" : "s", note.empty() ? "" : "; ",
                       note, "): ", LayoutKey(t->layout)),
          &*t);
      trials.push_back(*std::move(t));
    }
  }
  if (decision.outcome == HalvingDecision::Outcome::kContinue &&
      study.status == db::StudyStatus::kQueued) {
    TESSERA_RETURN_IF_ERROR(
        store_->SetStudyStatus(run.id, db::StudyStatus::kRunning, ""));
    events_->Emit(run.id, "running");
  }
  switch (decision.outcome) {
    case HalvingDecision::Outcome::kContinue:
      return StoreRecommendationLocked(run, *pool, trials, /*final=*/false);
    case HalvingDecision::Outcome::kDone:
      return FinishLocked(run, db::StudyStatus::kDone, decision.reason);
    case HalvingDecision::Outcome::kFailed:
      return FinishLocked(run, db::StudyStatus::kFailed, decision.reason);
  }
  return absl::OkStatus();
}

absl::Status Studies::FinishLocked(StudyRun& run, db::StudyStatus status,
                                   const std::string& reason) {
  TESSERA_RETURN_IF_ERROR(store_->CancelQueuedTrials(run.id).status());
  std::string best;
  if (run.workload.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Trial> trials,
                             TrialsOf(run.id));
    absl::StatusOr<TrialPool> pool = PoolLocked(run, 0);
    if (pool.ok()) {
      TESSERA_RETURN_IF_ERROR(
          StoreRecommendationLocked(run, *pool, trials, /*final=*/true));
      absl::StatusOr<v1::Recommendation> r =
          queries_->GetRecommendation(run.id);
      if (r.ok() && r->has_best_throughput()) {
        const v1::RecommendedLayout& b = r->best_throughput();
        best = absl::StrFormat(
            "; best throughput %.4g tokens/s (%s)", b.tokens_per_s(),
            b.provenance() == v1::MEASURED ? "measured" : "predicted");
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(store_->SetStudyStatus(run.id, status, reason));
  ForgetLocked(run);
  events_->Emit(run.id,
                absl::StrCat(db::StudyStatusName(status), ": ", reason, best));
  return absl::OkStatus();
}

absl::Status Studies::StoreRecommendationLocked(
    StudyRun& run, const TrialPool& pool, const std::vector<db::Trial>& trials,
    bool final) {
  RecommendationInput in;
  in.study_id = run.id;
  in.final = final;
  in.workload = &*run.workload;
  in.pool = &pool;
  in.trials = &trials;
  in.calibration = &run.calibration;
  in.calibration_mape = run.calibration_mape;
  in.calibration_samples = run.calibration_samples;
  in.layers = run.options().layers;
  // Absolute: `best` and `watch` print it for use from anywhere.
  std::error_code ec;
  const std::filesystem::path db =
      std::filesystem::absolute(options_.db_path, ec);
  in.history_db = ec ? options_.db_path : db.lexically_normal().string();
  v1::Recommendation r = BuildRecommendation(in);
  r.set_gpu_name(run.gpu_name);
  return store_->SetRecommendation(run.id, RecommendationToJson(r));
}

absl::Status Studies::RefitLocked(StudyRun& run,
                                  const std::vector<db::Trial>& trials) {
  std::vector<db::Trial> ok;
  if (run.checked.agents_gpu) {
    // Agents describe their own hardware: fit to this study's trials.
    for (auto it = trials.rbegin(); it != trials.rend(); ++it) {
      if (it->status == db::TrialState::kOk) ok.push_back(*it);
    }
  } else {
    // Every ok trial of this GPU, the newest first.
    db::TrialFilter filter;
    filter.gpu = run.gpu_name;
    filter.statuses = {db::TrialState::kOk};
    filter.sort_by = "id";
    filter.descending = true;
    filter.limit = options_.max_calibration_samples;
    TESSERA_ASSIGN_OR_RETURN(ok, store_->ListTrials(filter));
  }
  if (static_cast<int64_t>(ok.size()) > options_.max_calibration_samples) {
    ok.resize(options_.max_calibration_samples);
  }
  // The stack this study's trials measure; trials of another stack on this
  // GPU (Tessera's executor beside a command) are not fitted with them.
  const std::string trial_stack =
      TrialStackOf(run.backend, run.workload->training.stack);
  TESSERA_ASSIGN_OR_RETURN(
      TrialSamples of,
      SamplesOfTrials(
          *store_, ok, run.workload->cluster.gpu, trial_stack,
          {{run.id, std::make_pair(*run.workload, run.options().layers)}}));
  for (const std::string& why : of.skipped) {
    options_.log.Debug(absl::StrCat("calibration: skipping ", why));
  }
  const std::vector<costmodel::CalibrationSample>& samples = of.samples;
  if (samples.empty()) {
    run.fitted_ok_trials = CountOk(trials);
    return absl::OkStatus();
  }
  // Trials refine what was imported for the GPU, if anything.
  TESSERA_ASSIGN_OR_RETURN(GpuCalibrationSources sources,
                           LatestGpuCalibrationSources(*store_, run.gpu_name));
  const costmodel::CalibrationFile* import =
      sources.imported.has_value() ? &*sources.imported : nullptr;
  const costmodel::Calibration prior =
      TrialFitPrior(run.workload->cluster.gpu, sources, trial_stack);
  // A coefficient moves from the prior only as far as several trials agree
  // (tessera calibrate's default spread): with the fit's own default (1.0)
  // one trial's error, often the layout's own and not the cluster's, moved
  // whole families of layouts past each other (bench/replay/loop_bench:
  // scatter10 12 -> 17 of 24 groups within 2% in 3 trials).
  TESSERA_ASSIGN_OR_RETURN(
      const costmodel::CalibrationFit fit,
      costmodel::FitCalibration(samples, prior, TrialFitOptions()));
  const bool gpu_fit = trial_stack == kTrialStack && MayCalibrateGpu(fit);
  if (gpu_fit) {
    // The GPU's fit is of Tessera's executor (what every study on the GPU
    // starts from), and only from several consistent trials; a command
    // trial's fit is its study's own.
    TESSERA_ASSIGN_OR_RETURN(
        sources.trial_fit, store_->SaveCalibration(StoredCalibration(
                               fit, db::GpuScope(run.gpu_name), of.trial_ids)));
  }
  TESSERA_RETURN_IF_ERROR(store_
                              ->SaveCalibration(StoredCalibration(
                                  fit, db::StudyScope(run.id), of.trial_ids))
                              .status());
  run.calibration =
      StudyCalibration(*run.workload, fit.calibration, import, trial_stack);
  if (sources.collectives != nullptr) {
    run.calibration.collectives = sources.collectives;
  }
  run.calibration_mape = fit.fitted_step_time_mape;
  run.calibration_samples = fit.samples;
  run.spreads = GpuPredictionUncertainty(*run.workload, sources);
  if (trial_stack == run.workload->training.stack) {
    // The trials measured this study's own stack: its fit's covariance says
    // which layouts the measurements pin down (the model's own error is the
    // study's forecasts', trial_choice.h).
    const double model_log_sd = run.spreads.model_log_sd;
    run.spreads = costmodel::PredictionUncertaintyOf(
        costmodel::MakeCalibrationFile(trial_stack,
                                     run.workload->training.stack_options,
                                     run.workload->cluster.gpu, prior, &fit),
        run.workload->training.precision);
    run.spreads.model_log_sd = model_log_sd;
  }
  run.fitted_ok_trials = CountOk(trials);
  for (const std::string& warning : fit.warnings) {
    options_.log.Warning(
        absl::StrCat("study ", run.id, ": calibration: ", warning));
  }
  std::string event = absl::StrFormat(
      "recalibrated on %d trial%s: step-time MAPE %.1f%% (%.1f%% with the "
      "defaults)",
      fit.samples, fit.samples == 1 ? "" : "s", 100 * fit.fitted_step_time_mape,
      100 * fit.prior_step_time_mape);
  if (!fit.excluded.empty()) {
    std::vector<int64_t> outliers;
    for (size_t i : fit.excluded) outliers.push_back(of.trial_ids[i]);
    absl::StrAppend(&event, "; left out as outliers: trial ",
                    absl::StrJoin(outliers, ", trial "));
  }
  if (trial_stack == kTrialStack && !gpu_fit) {
    absl::StrAppend(
        &event,
        absl::StrFormat("; the %s calibration is kept until at least %d trials "
                        "agree within %.0f%%",
                        run.gpu_name, kMinGpuCalibrationTrials,
                        100 * kMaxGpuCalibrationMape));
  }
  events_->Emit(run.id, event);
  return absl::OkStatus();
}

}  // namespace tessera::service
