// The study loop where the model is wrong by a known amount: each group of a
// sweep keeps its launched layouts, but their truth is the cost model with a
// perturbed calibration (a cluster unlike the defaults), so the loop starts
// from a model that is wrong in a known way and must learn it from its
// trials. Scenarios (each a set of coefficient factors on the stack's
// defaults):
//   exact      the defaults (the model is right; only noise)
//   network    inter-node bandwidth efficiency x0.4, NCCL latency x4
//   compute    GEMM efficiency x0.8, attention x0.6, element-wise traffic x1.5
//   overlap    data-parallel, tensor-parallel and pipeline overlap x0.3
//   memory     fragmentation +15 points, fixed overhead +6 GiB (more OOMs)
//   mixed      network, compute and memory together
//   scatter10  each layout's truth off the model by an independent
//              log-normal factor, sd 10% (what the model cannot know)
//   scatter20  the same, sd 20%
//   shape15    a factor shared by the layouts of one model-parallel shape
//              (tp, pp, vpp, cp), sd 15%, and 3% per layout
// A layout the truth says does not fit is a failure (oom). Every strategy
// of `tessera replay` (study, model-order, random, naive) runs on each, over
// several seeds of trial noise, and the table gives per scenario and
// strategy: groups within 2% in <= 3 trials, the median and worst trials to
// 2%, failed trials, and the study's final regret. The truth is the model's
// own structure: this measures how fast the loop learns coefficients, not
// structure the model lacks (the sweep replay itself measures that).
//
//   build/bench/replay/loop_bench [SWEEP.json] [--seeds N] [--noise SD]
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/prediction.h"
#include "costmodel/stacks/stack_calibration.h"
#include "replay/measured_sweep.h"
#include "replay/replay_noise.h"
#include "replay/sweep_replay.h"

namespace tessera::replay {
namespace {

struct Scenario {
  std::string name;
  std::function<void(costmodel::Calibration&)> perturb;
  // A factor on each layout's true tokens/s the model knows nothing of
  // (log-sd per layout, and per model-parallel shape), drawn per seed.
  double layout_log_sd = 0;
  double shape_log_sd = 0;
};

std::vector<Scenario> Scenarios() {
  auto network = [](costmodel::Calibration& c) {
    c.inter_node_bw_efficiency *= 0.4;
    c.ring_latency_factor *= 4;
  };
  auto compute = [](costmodel::Calibration& c) {
    c.gemm_peak_efficiency *= 0.8;
    c.attention_efficiency *= 0.6;
    c.elementwise_traffic_factor *= 1.5;
  };
  auto memory = [](costmodel::Calibration& c) {
    c.memory_fragmentation += 0.15;
    c.memory_fixed_overhead_gib += 6;
  };
  return {
      {"exact", [](costmodel::Calibration&) {}},
      {"network", network},
      {"compute", compute},
      {"overlap",
       [](costmodel::Calibration& c) {
         c.dp_overlap_efficiency *= 0.3;
         c.tp_overlap_efficiency *= 0.3;
         c.pp_overlap_efficiency *= 0.3;
       }},
      {"memory", memory},
      {"mixed",
       [=](costmodel::Calibration& c) {
         network(c);
         compute(c);
         memory(c);
       }},
      {"scatter10", [](costmodel::Calibration&) {}, 0.10, 0},
      {"scatter20", [](costmodel::Calibration&) {}, 0.20, 0},
      {"shape15", [](costmodel::Calibration&) {}, 0.03, 0.15},
  };
}

// The group with its truth from the perturbed model (no headroom: a run
// either fits or not).
SweepGroup WithTruth(const SweepGroup& g, const Scenario& s, uint64_t seed) {
  SweepGroup out = g;
  out.collectives.clear();
  Workload w = g.workload;
  w.cluster.memory_headroom_fraction.reset();
  w.cluster.memory_headroom_bytes = 0;
  costmodel::Calibration truth = *costmodel::DefaultCalibration(w);
  s.perturb(truth);
  for (SweepRow& row : out.rows) {
    const costmodel::LayoutEvaluation e = costmodel::PredictLayout(w, row.layout, truth);
    row.peak_memory_bytes.reset();
    if (e.feasible) {
      const Layout& l = row.layout;
      const double layout_z =
          DrawNoise(seed, NoiseStream("layout"), NoiseStream(FormatLayout(l)), 0)
              .trial;
      const double shape_z =
          DrawNoise(seed, NoiseStream("shape"),
                    NoiseStream(absl::StrCat(l.tp, "/", l.pp, "/", l.vpp, "/",
                                             l.cp)),
                    0)
              .trial;
      row.outcome = TrialStatus::kOk;
      row.tokens_per_s_per_gpu =
          e.prediction.tokens_per_s_per_gpu *
          std::exp(s.layout_log_sd * layout_z + s.shape_log_sd * shape_z);
    } else {
      row.outcome = TrialStatus::kOom;
      row.tokens_per_s_per_gpu = 0;
      row.failure_reason = e.reason;
    }
  }
  return out;
}

int Main(int argc, char** argv) {
  std::string path = std::string(TESSERA_SOURCE_DIR) + "/tests/data/usp_sweep.json";
  int seeds = 3;
  double noise = 0.02;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc) {
      seeds = std::stoi(argv[++i]);
    } else if (a == "--noise" && i + 1 < argc) {
      noise = std::stod(argv[++i]);
    } else if (a.rfind("--", 0) != 0) {
      path = a;
    } else {
      std::cerr << "usage: loop_bench [SWEEP.json] [--seeds N] [--noise SD]\n";
      return 2;
    }
  }
  absl::StatusOr<MeasuredSweep> sweep = ReadMeasuredSweep(path, {});
  if (!sweep.ok()) {
    std::cerr << sweep.status() << "\n";
    return 1;
  }
  std::cout << absl::StrFormat(
      "loop_bench: %d groups of %s, truth = the cost model perturbed, %d "
      "seeds, trial noise %.1f%%\n\n",
      sweep->groups.size(), path, seeds, 100 * noise);
  std::cout << absl::StrFormat("%-9s %-12s %9s %7s %7s %7s %7s\n", "scenario",
                               "strategy", "<=3 to 2%", "median", "worst",
                               "failed", "regret");
  for (const Scenario& s : Scenarios()) {
    struct Sum {
      int64_t groups = 0, within = 0, never = 0;
      std::vector<double> to2;
      double failed = 0, regret = 0;
      int64_t regrets = 0;
    };
    std::map<std::string, Sum> sums;
    for (int seed = 1; seed <= seeds; ++seed) {
      MeasuredSweep truth;
      truth.source = sweep->source;
      for (const SweepGroup& g : sweep->groups) {
        SweepGroup t = WithTruth(g, s, static_cast<uint64_t>(seed));
        if (t.OkRows() >= 2) truth.groups.push_back(std::move(t));
      }
      SweepReplayOptions o;
      o.strategies = {"study", "model-order", "random", "naive"};
      o.study.seed = static_cast<uint64_t>(seed);
      o.study.noise_log_sd = noise;
      absl::StatusOr<SweepReplayReport> r = ReplaySweep(truth, o);
      if (!r.ok()) {
        std::cerr << s.name << ": " << r.status() << "\n";
        return 1;
      }
      for (const StrategyReport& st : r->strategies) {
        Sum& sum = sums[st.name];
        for (const GroupScore& g : st.groups) {
          ++sum.groups;
          const std::optional<double>& t = g.score.trials_to_2pct;
          if (t && *t <= 3 + 1e-9) ++sum.within;
          if (!t) ++sum.never;
          sum.to2.push_back(t ? *t : HUGE_VAL);
          sum.failed += g.score.failed_trials;
          if (g.final_regret) {
            sum.regret += *g.final_regret;
            ++sum.regrets;
          }
        }
      }
    }
    for (const char* name : {"study", "model-order", "random", "naive"}) {
      Sum& sum = sums[name];
      std::sort(sum.to2.begin(), sum.to2.end());
      const double median = sum.to2.empty() ? 0 : sum.to2[sum.to2.size() / 2];
      const double worst = sum.to2.empty() ? 0 : sum.to2.back();
      auto text = [](double v) {
        return std::isfinite(v) ? absl::StrFormat("%.1f", v)
                                : std::string("never");
      };
      std::cout << absl::StrFormat(
          "%-9s %-12s %9s %7s %7s %7.2f %7s\n", s.name, name,
          absl::StrFormat("%d/%d", sum.within, sum.groups), text(median),
          text(worst), sum.failed / std::max<int64_t>(1, sum.groups),
          sum.regrets > 0
              ? absl::StrFormat("%.1f%%", 100 * sum.regret / sum.regrets)
              : std::string("-"));
    }
  }
  std::cout << "\nfailed: mean failed trials per group until within 2%; "
               "regret: the study's final recommendation's, mean.\n";
  return 0;
}

}  // namespace
}  // namespace tessera::replay

int main(int argc, char** argv) { return tessera::replay::Main(argc, argv); }
