#include "replay/sweep_replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "service/trial_options.h"
#include "proto/convert.h"
#include "replay/replay_noise.h"

namespace tessera::replay {
namespace {

bool Known(const std::string& name) {
  const std::vector<std::string>& names = StrategyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The measurement a fixed order sees of a layout: one noise draw per layout.
double MeasuredOnce(const SweepRow& row, const SweepGroup& group,
                    const ReplayOptions& options) {
  const NoiseDraws d = DrawNoise(
      options.seed, NoiseStream(absl::StrCat(group.name, "|fixed-order")),
      NoiseStream(SweepKey(row.layout)), 0);
  // tokens/s is inverse to the step time the noise multiplies.
  return row.tokens_per_s_per_gpu * std::exp(-options.noise_log_sd * d.trial);
}

// Cluster seconds of one rung-0 trial of `row` (a failed one: one median
// step).
double TrialGpuSeconds(const SweepRow& row, const SweepGroup& group,
                       int64_t steps_per_trial, double median_step_s) {
  const double gpus = static_cast<double>(group.workload.cluster.world_size());
  if (row.outcome != TrialStatus::kOk) return median_step_s * gpus;
  const double step_s =
      static_cast<double>(group.workload.training.tokens_per_step()) /
      (row.tokens_per_s_per_gpu * gpus);
  return step_s * static_cast<double>(steps_per_trial) * gpus;
}

double MedianStepS(const SweepGroup& group) {
  std::vector<double> steps;
  const double gpus = static_cast<double>(group.workload.cluster.world_size());
  for (const SweepRow& r : group.rows) {
    if (r.outcome != TrialStatus::kOk) continue;
    steps.push_back(
        static_cast<double>(group.workload.training.tokens_per_step()) /
        (r.tokens_per_s_per_gpu * gpus));
  }
  return Percentile(steps, 0.5);
}

// Scores trialing `order` (layouts of the group) front to back.
SearchScore ScoreOrder(const std::vector<Layout>& order,
                       const SweepGroup& group, const ReplayOptions& options,
                       int64_t steps_per_trial, int64_t curve_length) {
  std::map<std::string, const SweepRow*> rows;
  for (const SweepRow& r : group.rows) rows[SweepKey(r.layout)] = &r;
  const double median_step_s = MedianStepS(group);
  std::vector<ScoredTrial> seq;
  for (const Layout& l : order) {
    auto it = rows.find(SweepKey(l));
    if (it == rows.end()) continue;
    const SweepRow& row = *it->second;
    ScoredTrial t;
    t.ok = row.outcome == TrialStatus::kOk;
    if (t.ok) {
      t.true_tokens_per_s_per_gpu = row.tokens_per_s_per_gpu;
      t.measured_tokens_per_s_per_gpu = MeasuredOnce(row, group, options);
    }
    t.gpu_seconds =
        TrialGpuSeconds(row, group, steps_per_trial, median_step_s);
    seq.push_back(t);
  }
  return ScoreSequence(seq, group.BestTokensPerSPerGpu(), curve_length);
}

GroupScore ScoreStudy(const SweepGroup& group, StudyReplay replay,
                      int64_t curve_length) {
  GroupScore g;
  std::vector<ScoredTrial> seq;
  for (const ReplayedTrial& t : replay.trials) {
    ScoredTrial s;
    s.ok = t.outcome == TrialStatus::kOk;
    s.measured_tokens_per_s_per_gpu = t.measured_tokens_per_s_per_gpu;
    s.true_tokens_per_s_per_gpu = t.true_tokens_per_s_per_gpu;
    s.gpu_seconds = t.gpu_seconds;
    seq.push_back(s);
  }
  const double best = group.BestTokensPerSPerGpu();
  g.score = ScoreSequence(seq, best, curve_length);
  g.final_regret =
      best > 0 ? 1 - replay.recommended_true_tokens_per_s_per_gpu / best : 1;
  g.study = std::move(replay);
  return g;
}

void Summarize(StrategyReport& r) {
  StrategySummary& s = r.summary;
  s.groups = static_cast<int64_t>(r.groups.size());
  std::vector<double> to2;
  double regret = 0;
  int64_t regrets = 0;
  bool all_reached = true;
  double max_to2 = 0;
  for (const GroupScore& g : r.groups) {
    const std::optional<double>& t = g.score.trials_to_2pct;
    if (t && *t <= 3 + 1e-9) ++s.within_2pct_in_3;
    if (!t) {
      ++s.never_within_2pct;
      all_reached = false;
    } else {
      max_to2 = std::max(max_to2, *t);
    }
    to2.push_back(t ? *t : HUGE_VAL);
    s.failed_trials += g.score.failed_trials;
    s.gpu_hours += g.score.gpu_hours_to_2pct;
    if (g.final_regret) {
      regret += *g.final_regret;
      ++regrets;
    }
  }
  if (!to2.empty()) {
    std::sort(to2.begin(), to2.end());
    const size_t n = to2.size();
    const double median =
        n % 2 == 1 ? to2[n / 2] : (to2[n / 2 - 1] + to2[n / 2]) / 2;
    if (std::isfinite(median)) s.median_trials_to_2pct = median;
    if (regrets > 0) {
      s.mean_final_regret = regret / static_cast<double>(regrets);
    }
  }
  if (all_reached && !r.groups.empty()) s.max_trials_to_2pct = max_to2;
}

}  // namespace

const std::vector<std::string>& StrategyNames() {
  static const std::vector<std::string> names = {
      "study", "study-history", "model-order", "random", "naive"};
  return names;
}

std::vector<Layout> NaiveOrder(const SweepGroup& group) {
  std::vector<const SweepRow*> rows;
  for (const SweepRow& r : group.rows) rows.push_back(&r);
  auto key = [](const SweepRow* r) {
    const Layout& l = r->layout;
    return std::make_tuple(l.tp * l.pp * l.cp, l.pp, l.tp, l.zero,
                           l.micro_batch, r->index);
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const SweepRow* a, const SweepRow* b) {
                     return key(a) < key(b);
                   });
  std::vector<Layout> order;
  for (const SweepRow* r : rows) order.push_back(r->layout);
  return order;
}

absl::StatusOr<SweepReplayReport> ReplaySweep(
    const MeasuredSweep& sweep, const SweepReplayOptions& options) {
  std::vector<std::string> strategies = options.strategies;
  if (strategies.empty()) {
    strategies = {"study", "model-order", "random", "naive"};
  }
  for (const std::string& s : strategies) {
    if (!Known(s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--strategy: unknown strategy '", s, "' (known: ",
                       absl::StrJoin(StrategyNames(), ", "), ")"));
    }
  }
  if (!(options.study.noise_log_sd >= 0) || options.study.noise_log_sd > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--noise: must be in [0, 1], got ",
                     options.study.noise_log_sd));
  }
  SweepReplayReport report;
  report.source = sweep.source;
  report.seed = options.study.seed;
  report.noise_log_sd = options.study.noise_log_sd;
  report.skipped = sweep.skipped;

  std::unique_ptr<StudyReplayer> history;  // study-history's one planner
  for (const std::string& name : StrategyNames()) {
    if (std::find(strategies.begin(), strategies.end(), name) ==
        strategies.end()) {
      continue;
    }
    StrategyReport r;
    r.name = name;
    for (const SweepGroup& group : sweep.groups) {
      TESSERA_ASSIGN_OR_RETURN(
          const service::TrialOptions trial_options,
          service::ResolveTrialOptions(options.study.trials,
                                       group.workload.model));
      const int64_t steps_per_trial =
          trial_options.warmup_steps + trial_options.StepsAtRung(0);
      GroupScore g;
      if (name == "study" || name == "study-history") {
        std::unique_ptr<StudyReplayer> fresh;
        StudyReplayer* replayer = nullptr;
        if (name == "study") {
          TESSERA_ASSIGN_OR_RETURN(fresh, StudyReplayer::Create(""));
          replayer = fresh.get();
        } else {
          if (!history) {
            TESSERA_ASSIGN_OR_RETURN(history,
                                     StudyReplayer::Create(options.db_path));
          }
          replayer = history.get();
        }
        TESSERA_ASSIGN_OR_RETURN(StudyReplay replay,
                                 replayer->Replay(group, options.study));
        g = ScoreStudy(group, std::move(replay), options.curve_length);
      } else if (name == "model-order") {
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<StudyReplayer> fresh,
                                 StudyReplayer::Create(""));
        TESSERA_ASSIGN_OR_RETURN(const std::vector<Layout> order,
                                 fresh->ModelOrder(group, options.study));
        g.score = ScoreOrder(order, group, options.study, steps_per_trial,
                             options.curve_length);
      } else if (name == "naive") {
        g.score = ScoreOrder(NaiveOrder(group), group, options.study,
                             steps_per_trial, options.curve_length);
      } else {  // random
        const double median_step_s = MedianStepS(group);
        double seconds = 0;
        for (const SweepRow& row : group.rows) {
          seconds +=
              TrialGpuSeconds(row, group, steps_per_trial, median_step_s);
        }
        g.score = ScoreRandomOrder(
            group, seconds / static_cast<double>(group.rows.size()),
            options.curve_length);
      }
      g.group = group.name;
      g.best_tokens_per_s_per_gpu = group.BestTokensPerSPerGpu();
      g.layouts = static_cast<int64_t>(group.rows.size());
      r.groups.push_back(std::move(g));
    }
    Summarize(r);
    report.strategies.push_back(std::move(r));
  }
  return report;
}

}  // namespace tessera::replay
