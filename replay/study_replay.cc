#include "replay/study_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/model_flops.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "db/sqlite_trial_store.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/fit_file.h"
#include "costmodel/stacks/stack_calibration.h"
#include "service/planner.h"
#include "service/recalibration.h"
#include "service/trial_geometry.h"
#include "proto/convert.h"
#include "replay/replay_noise.h"

namespace tessera::replay {
namespace {

// The trial command of a replayed study: never run (the replay's agents
// look the outcome up), but a command study states one, and this one names
// every layout field.
constexpr char kReplayCommand[] =
    "tessera-replay {tp} {sp} {pp} {vpp} {cp} {dp} {zero} {shard_group} "
    "{micro_batch} {grad_accum} {recompute}";

// A clock the replay moves by each trial's run time.
class ReplayClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  db::Clock AsClock() const {
    return [this] { return Now(); };
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'767'225'600);
};

// The result an agent would report for `row` run as `a`.
TrialResult ResultOf(const v1::TrialAssignment& a, const SweepRow* row,
                     const SweepGroup& group, double noise_z,
                     const std::vector<double>& step_z, double noise_log_sd,
                     double* true_step_s) {
  TrialResult r;
  r.layout = *LayoutFromProto(a.layout());
  r.backend = a.backend();
  r.model = group.spec.model().preset().empty() ? "custom"
                                                : group.spec.model().preset();
  r.device = absl::StrCat("replay of ", group.name);
  r.ranks = a.world_size();
  r.global_batch = a.global_batch();
  r.seq_len = a.seq_len();
  r.warmup_steps = a.warmup_steps();
  if (row == nullptr) {
    r.status = TrialStatus::kCrash;
    r.reason = "the sweep has no run of this layout";
    return r;
  }
  if (row->outcome != TrialStatus::kOk) {
    r.status = row->outcome;
    r.reason = absl::StrCat("sweep row ", row->index, ": ",
                            row->failure_reason.empty()
                                ? "launched, no measurement"
                                : row->failure_reason);
    return r;
  }
  const double tokens_per_step =
      static_cast<double>(a.global_batch() * a.seq_len());
  const double world = static_cast<double>(a.world_size());
  *true_step_s = tokens_per_step / (row->tokens_per_s_per_gpu * world);
  const double median = *true_step_s * std::exp(noise_log_sd * noise_z);
  r.status = TrialStatus::kOk;
  r.steps = a.steps();
  std::vector<double> measured;
  for (int64_t i = 0; i < a.warmup_steps() + a.steps(); ++i) {
    const double t =
        median * std::exp(noise_log_sd * step_z[static_cast<size_t>(i)]);
    r.step_times_s.push_back(t);
    r.loss.push_back(8.0);
    if (i >= a.warmup_steps()) measured.push_back(t);
  }
  r.step_time_s = StepTimeStatsOf(measured);
  r.tokens_per_s = tokens_per_step / r.step_time_s.median;
  r.tokens_per_s_per_gpu = r.tokens_per_s / world;
  const double flops_per_token =
      ModelFlopsPerStep(group.workload.model, 1, group.workload.training.seq_len) /
      static_cast<double>(group.workload.training.seq_len);
  r.tflops_per_gpu = r.tokens_per_s_per_gpu * flops_per_token / 1e12;
  r.peak_tflops = group.workload.cluster.gpu.peak_dense_tflops;
  r.peak_tflops_source = "datasheet";
  r.mfu = r.peak_tflops > 0 ? r.tflops_per_gpu / r.peak_tflops : 0;
  if (row->peak_memory_bytes) {
    r.peak_memory_bytes.assign(
        static_cast<size_t>(a.world_size()),
        static_cast<int64_t>(std::llround(*row->peak_memory_bytes)));
  }
  r.compute_s = r.step_time_s.median;
  return r;
}

// The median step time of the group's measured layouts, seconds.
double MedianStepTimeS(const SweepGroup& group) {
  std::vector<double> steps;
  const double tokens =
      static_cast<double>(group.workload.training.tokens_per_step());
  const double world = static_cast<double>(group.workload.cluster.world_size());
  for (const SweepRow& r : group.rows) {
    if (r.outcome == TrialStatus::kOk) {
      steps.push_back(tokens / (r.tokens_per_s_per_gpu * world));
    }
  }
  return Percentile(steps, 0.5);
}

// The model's first ranking of the group's layouts: the planner's plan of
// the study (its calibration, before any trial), best first, then the
// layouts the plan leaves out (infeasible), by predicted memory.
absl::StatusOr<std::vector<Layout>> PlanOrder(service::Studies& studies,
                                              const v1::StudySpec& spec,
                                              const SweepGroup& group) {
  TESSERA_ASSIGN_OR_RETURN(const service::StudyPlan plan, studies.Plan(spec));
  std::vector<Layout> order;
  std::set<std::string> seen;
  for (const costmodel::LayoutEvaluation& e : plan.result.candidates) {
    order.push_back(e.layout);
    seen.insert(SweepKey(e.layout));
  }
  TESSERA_ASSIGN_OR_RETURN(const costmodel::Calibration defaults,
                           costmodel::DefaultCalibration(group.workload));
  std::vector<std::pair<double, Layout>> rest;
  for (const SweepRow& row : group.rows) {
    if (seen.count(SweepKey(row.layout)) > 0) continue;
    const costmodel::LayoutEvaluation e =
        costmodel::PredictLayout(group.workload, row.layout, defaults);
    rest.emplace_back(e.prediction.memory.total_bytes, row.layout);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [bytes, layout] : rest) order.push_back(layout);
  return order;
}

}  // namespace

std::string SweepKey(const Layout& layout) { return FormatLayout(layout); }

// The backend a replayed study's trials name: a study of Tessera's own
// executor keeps its cpu or cuda backend (a past `tessera trials -o json`
// study), any other stack runs "command". Neither runs anything: the
// replay's agents look each outcome up.
std::string ReplayBackend(const SweepGroup& group) {
  if (group.workload.training.stack != service::kTrialStack) return "command";
  const std::string& named = group.spec.trials().backend();
  return named.empty() ? "cpu" : named;
}

// The replay's agent i of a backend.
std::string ReplayAgent(absl::string_view backend, int64_t i) {
  return absl::StrCat("replay-", backend, "-node-", i);
}

struct StudyReplayer::State {
  std::filesystem::path temp_dir;  // removed at the end when set
  ReplayClock clock;
  std::unique_ptr<db::SqliteTrialStore> store;
  std::unique_ptr<service::Planner> planner;
  std::map<std::string, int64_t> agents;  // registered, by backend
  int64_t agent_gpus = 0;      // GPUs each (the first group's)
  std::set<std::string> imported;  // collectives files imported, by text
};

StudyReplayer::StudyReplayer(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

StudyReplayer::~StudyReplayer() {
  if (!state_) return;
  const std::filesystem::path temp = state_->temp_dir;
  state_->planner.reset();
  state_->store.reset();
  if (!temp.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp, ec);
  }
}

absl::StatusOr<std::unique_ptr<StudyReplayer>> StudyReplayer::Create(
    const std::string& db_path) {
  auto state = std::make_unique<State>();
  std::string path = db_path;
  if (path.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tessera-replay-XXXXXX")
            .string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::FailedPreconditionError(
          "replay: cannot create a temporary folder for its store");
    }
    state->temp_dir = pattern;
    path = (state->temp_dir / "replay.db").string();
  }
  db::SqliteTrialStoreOptions store_options;
  store_options.clock = state->clock.AsClock();
  // A scratch history: a crash loses a replay, not a measurement.
  store_options.database.synchronous = db::Synchronous::kNormal;
  TESSERA_ASSIGN_OR_RETURN(state->store,
                           db::SqliteTrialStore::Open(path, store_options));
  service::PlannerOptions options;
  options.db_path = path;
  options.reaper_period = absl::ZeroDuration();  // nothing expires
  options.clock = state->clock.AsClock();
  options.log = service::Log(service::LogLevel::kOff);
  TESSERA_ASSIGN_OR_RETURN(
      state->planner, service::Planner::Create(state->store.get(), options));
  return std::unique_ptr<StudyReplayer>(new StudyReplayer(std::move(state)));
}

absl::StatusOr<v1::StudySpec> StudyReplayer::Prepare(
    const SweepGroup& group, const ReplayOptions& options) {
  State& st = *state_;
  service::Studies& studies = st.planner->studies();
  service::Leases& leases = st.planner->leases();
  const int64_t nodes = group.workload.cluster.nodes;
  const int64_t gpn = group.workload.cluster.gpus_per_node;

  // The cluster's measured collectives, imported once.
  if (!group.collectives.empty()) {
    TESSERA_ASSIGN_OR_RETURN(costmodel::Calibration prior,
                             costmodel::DefaultCalibration(group.workload));
    prior.collectives =
        std::make_shared<costmodel::MeasuredCollectives>(group.collectives);
    costmodel::CalibrationFile file = costmodel::MakeCalibrationFile(
        group.workload.training.stack, {}, group.workload.cluster.gpu, prior,
        nullptr);
    file.fitted_from.push_back(absl::StrCat(
        "collectives: the sweep's measured bus bandwidth (", group.name, ")"));
    v1::ImportCalibrationRequest request;
    request.set_calibration_json(costmodel::CalibrationFileJson(file));
    request.set_source("the sweep's collectives");
    const std::string key =
        absl::StrCat(file.gpu, "|", group.workload.training.stack, "|",
                     request.calibration_json());
    if (st.imported.insert(key).second) {
      TESSERA_RETURN_IF_ERROR(studies.ImportCalibration(request).status());
    }
  }

  // The cluster's nodes as agents.
  if (st.agent_gpus != 0 && st.agent_gpus != gpn) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay: group ", group.name, " has ", gpn,
        " GPUs per node, an earlier group of this replay ", st.agent_gpus));
  }
  st.agent_gpus = gpn;
  const std::string backend = ReplayBackend(group);
  int64_t& registered = st.agents[backend];
  for (int64_t i = registered; i < nodes; ++i) {
    db::AgentRegistration reg;
    reg.id = ReplayAgent(backend, i);
    reg.hostname = reg.id;
    reg.backend = backend;
    reg.gpu_name = group.workload.cluster.gpu.name;
    reg.gpu_count = gpn;
    reg.memory_bytes = group.workload.cluster.gpu.memory_bytes;
    reg.interconnect = "nvlink";
    reg.address = reg.id;
    TESSERA_RETURN_IF_ERROR(leases.Register(reg).status());
  }
  registered = std::max(registered, nodes);

  // The study: the group's workload, its launched layouts as candidates.
  v1::StudySpec spec = group.spec;
  // Every launched layout is a candidate (the service's plans keep at most
  // kMaxPlanCandidates).
  spec.mutable_search()->set_top(std::min<int64_t>(
      static_cast<int64_t>(group.rows.size()), service::kMaxPlanCandidates));
  for (const SweepRow& row : group.rows) {
    *spec.mutable_search()->add_candidates() = LayoutToProto(row.layout);
  }
  *spec.mutable_trials() = options.trials;
  spec.mutable_trials()->set_backend(backend);
  if (RunsCommand(backend)) {
    spec.mutable_trials()->set_command(kReplayCommand);
  }

  return spec;
}

absl::StatusOr<std::vector<Layout>> StudyReplayer::ModelOrder(
    const SweepGroup& group, const ReplayOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const v1::StudySpec spec, Prepare(group, options));
  return PlanOrder(state_->planner->studies(), spec, group);
}

absl::StatusOr<StudyReplay> StudyReplayer::Replay(const SweepGroup& group,
                                                  const ReplayOptions& options) {
  State& st = *state_;
  service::Studies& studies = st.planner->studies();
  service::Leases& leases = st.planner->leases();
  const int64_t nodes = group.workload.cluster.nodes;
  TESSERA_ASSIGN_OR_RETURN(const v1::StudySpec spec, Prepare(group, options));
  std::vector<std::string> agents;
  const std::string backend = ReplayBackend(group);
  for (int64_t i = 0; i < nodes; ++i) agents.push_back(ReplayAgent(backend, i));
  std::map<std::string, const SweepRow*> rows;
  for (const SweepRow& row : group.rows) rows[SweepKey(row.layout)] = &row;

  StudyReplay out;
  TESSERA_ASSIGN_OR_RETURN(out.model_order, PlanOrder(studies, spec, group));
  // Messages of the study as a watcher sees them.
  absl::Mutex events_mu;
  std::vector<std::string> events;
  TESSERA_ASSIGN_OR_RETURN(out.study_id, studies.SubmitStudy(spec));
  const int64_t subscription = studies.events().hub().Subscribe(
      out.study_id, [&](const v1::StudyEvent& e) {
        absl::MutexLock lock(&events_mu);
        events.push_back(e.message());
      });

  const uint64_t group_seed = NoiseStream(group.name);
  int64_t idle_passes = 0;
  absl::Status failure = absl::OkStatus();
  while (failure.ok()) {
    studies.WaitForAdvances();
    absl::StatusOr<db::Study> study = st.store->GetStudy(out.study_id);
    if (!study.ok()) {
      failure = study.status();
      break;
    }
    if (db::IsFinal(study->status)) {
      out.state = std::string(db::StudyStatusName(study->status));
      out.reason = study->status_reason;
      break;
    }
    // Every node polls until no poll brings more: a gang is leased at the
    // poll of its last member and the others get theirs at their next poll.
    std::map<int64_t, std::vector<v1::TrialAssignment>> leased;
    std::map<int64_t, std::string> lead_agent;  // node rank 0's
    for (bool more = true; more && failure.ok();) {
      more = false;
      for (const std::string& agent : agents) {
        absl::StatusOr<std::optional<v1::TrialAssignment>> a =
            leases.LeaseTrial(agent);
        if (!a.ok()) {
          failure = a.status();
          break;
        }
        if (!a->has_value()) continue;
        more = true;
        if ((*a)->node_rank() == 0) lead_agent[(*a)->trial_id()] = agent;
        leased[(*a)->trial_id()].push_back(**a);
      }
    }
    if (!failure.ok()) break;
    if (leased.empty()) {
      if (++idle_passes > 2) {
        failure = absl::InternalError(absl::StrCat(
            "replay: study ", out.study_id, " of ", group.name,
            " is ", db::StudyStatusName(study->status),
            " with nothing any of its ", nodes, " agents can lease"));
      }
      continue;
    }
    idle_passes = 0;
    for (auto& [trial_id, members] : leased) {
      const v1::TrialAssignment* lead = &members.front();
      for (const v1::TrialAssignment& m : members) {
        if (m.node_rank() == 0) lead = &m;
      }
      if (static_cast<int64_t>(members.size()) != lead->gang_size()) {
        failure = absl::InternalError(absl::StrCat(
            "replay: trial ", trial_id, " leased to ", members.size(),
            " of its ", lead->gang_size(), " agents"));
        break;
      }
      absl::StatusOr<Layout> layout = LayoutFromProto(lead->layout());
      if (!layout.ok()) {
        failure = layout.status();
        break;
      }
      auto it = rows.find(SweepKey(*layout));
      const SweepRow* row = it == rows.end() ? nullptr : it->second;
      const NoiseDraws draws = DrawNoise(
          options.seed, group_seed, static_cast<uint64_t>(trial_id),
          static_cast<size_t>(lead->warmup_steps() + lead->steps()));
      double true_step_s = 0;
      const TrialResult result =
          ResultOf(*lead, row, group, draws.trial, draws.steps,
                   options.noise_log_sd, &true_step_s);
      // The trial runs (the clock moves by its steps; a failure by one
      // median step of the group), then its lead agent reports.
      const double run_s =
          result.status == TrialStatus::kOk
              ? std::accumulate(result.step_times_s.begin(),
                                result.step_times_s.end(), 0.0)
              : MedianStepTimeS(group);
      st.clock.Advance(absl::Seconds(run_s));
      const absl::Status reported = leases.ReportTrial(
          lead_agent[trial_id], trial_id,
          TrialResultToJson(result).dump(
              -1, ' ', false, nlohmann::json::error_handler_t::replace));
      ReplayedTrial t;
      t.trial_id = trial_id;
      t.layout = *layout;
      t.warmup_steps = lead->warmup_steps();
      t.steps = lead->steps();
      t.sweep_row = row == nullptr ? -1 : row->index;
      t.outcome = reported.ok() ? result.status : TrialStatus::kInvalid;
      if (result.status == TrialStatus::kOk) {
        t.measured_tokens_per_s_per_gpu = result.tokens_per_s_per_gpu;
        t.true_tokens_per_s_per_gpu = row->tokens_per_s_per_gpu;
      }
      absl::StatusOr<db::Trial> stored = st.store->GetTrial(trial_id);
      if (stored.ok()) t.rung = stored->rung;
      // Cluster time: every step of an ok trial; a failed one is charged
      // one step of the group's median measured step.
      const double gpus = static_cast<double>(lead->world_size());
      t.gpu_seconds = run_s * gpus;
      out.trials.push_back(std::move(t));
      if (!reported.ok() && !absl::IsInvalidArgument(reported)) {
        failure = reported;
        break;
      }
    }
  }
  studies.events().hub().Unsubscribe(subscription);
  {
    absl::MutexLock lock(&events_mu);
    out.events = std::move(events);
  }
  if (!failure.ok()) return failure;

  absl::StatusOr<v1::Recommendation> rec =
      studies.queries().GetRecommendation(out.study_id);
  if (rec.ok() && rec->has_best_throughput()) {
    absl::StatusOr<Layout> best =
        LayoutFromProto(rec->best_throughput().layout());
    if (best.ok()) {
      out.recommended = *best;
      out.recommended_measured =
          rec->best_throughput().provenance() == v1::MEASURED;
      out.recommended_confidence = rec->best_throughput().why();
      auto it = rows.find(SweepKey(*best));
      if (it != rows.end() && it->second->outcome == TrialStatus::kOk) {
        out.recommended_true_tokens_per_s_per_gpu =
            it->second->tokens_per_s_per_gpu;
      }
    }
  }
  return out;
}

}  // namespace tessera::replay
