// The cost model on a measured layout sweep (costmodel/published/
// layout_sweep.h): the Ultra-Scale Playbook's nanotron runs, 1B and 8B on
// 1-8 nodes of 8 H100, every launched layout measured or failed. Three
// columns of the same table:
//   defaults     the nanotron stack's defaults and the generic network
//   collectives  the same with the cluster's measured bus bandwidth (what
//                `tessera calibrate --collectives` would read)
//   fitted       with the collectives, and the coefficients fitted
//                (FitCalibration, prior sd 0.3 as `tessera calibrate`) to the
//                measured step times of the 1-2 node rows and their rank-0
//                peak memory (stage 0, read as allocated)
// Each reports per group (model x nodes) Spearman's rho, the planner's top
// pick over the group's best, the median error, and the fit (1-2 nodes) and
// check (4-8 nodes) rows apart, with stage-0 memory by pipeline depth. The
// fit sees only the 1-2 node rows; the 4-8 node rows are the check.
//
//   build/bench/costmodel/usp_sweep_bench [SWEEP.json] [--rows] [--explain ROW]
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/units.h"
#include "costmodel/fit/calibration_fit.h"
#include "costmodel/stacks/stack_calibration.h"
#include "costmodel/published/layout_sweep.h"

namespace tessera::costmodel {
namespace {

Calibration DefaultsFor(const SweepRow& row) {
  absl::StatusOr<Calibration> c = DefaultCalibration(row.workload);
  return c.ok() ? *c : Calibration{};
}

// One row's prediction part by part (the fitted calibration's).
void Explain(const SweepPrediction& p) {
  const Prediction& x = p.evaluation.prediction;
  const MemoryBreakdown& m = x.memory;
  std::cout << absl::StrFormat(
      "row %d %s %s: measured %.0f predicted %.0f tokens/s/GPU\n"
      "  step %.3f s = compute %.3f + exposed comm %.3f (tp %.3f cp %.3f pp "
      "%.3f dp %.3f) + bubble %.3f; comm tp %.3f pp %.3f dp %.3f\n"
      "  peak memory %.1f GiB: weights %.1f master %.1f grads %.1f optimizer "
      "%.1f activations %.1f logits %.1f overhead %.1f%s\n",
      p.row->index, p.row->group, FormatLayout(p.evaluation.layout),
      p.row->measured_tokens_per_s_per_gpu, x.tokens_per_s_per_gpu,
      x.step_time_s, x.compute_s, x.exposed_comm_s, x.tp_exposed_s,
      x.cp_exposed_s, x.pp_exposed_s, x.dp_exposed_s, x.bubble_s, x.tp_comm_s,
      x.pp_comm_s, x.dp_comm_s, m.total_bytes / kGiB, m.weights_bytes / kGiB,
      m.master_weights_bytes / kGiB, m.gradients_bytes / kGiB,
      m.optimizer_bytes / kGiB, m.activations_bytes / kGiB,
      m.logits_bytes / kGiB, m.overhead_bytes / kGiB,
      p.row->measured_peak_allocated_gib
          ? absl::StrFormat(" (measured stage 0, allocated: %.1f)",
                            *p.row->measured_peak_allocated_gib)
          : "");
}

void PrintRows(const SweepReport& r) {
  std::cout << "row group ran layout | measured predicted error | mem "
               "ratio | reason\n";
  for (const SweepPrediction& p : r.rows) {
    std::cout << absl::StrFormat(
        "%3d %-22s %-3s %s | %8.0f %8.0f %+6.1f%% | %s | %s\n", p.row->index,
        p.row->group, p.row->ran ? "ok" : "no",
        FormatLayout(p.evaluation.layout), p.row->measured_tokens_per_s_per_gpu,
        p.evaluation.prediction.tokens_per_s_per_gpu, 100 * p.error,
        p.memory_ratio ? absl::StrFormat("%.2f", *p.memory_ratio) : "-",
        p.evaluation.feasible ? "" : p.evaluation.reason);
  }
}

int Run(int argc, char** argv) {
  std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/usp_sweep.json";
  bool rows = false;
  std::vector<int64_t> explain;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows") {
      rows = true;
    } else if (a == "--explain" && i + 1 < argc) {
      explain.push_back(std::stoll(argv[++i]));
    } else {
      path = a;
    }
  }
  absl::StatusOr<LayoutSweep> sweep = LoadLayoutSweep(path);
  if (!sweep.ok()) {
    std::cerr << sweep.status().message() << "\n";
    return 1;
  }
  std::cout << "== defaults (generic network)\n";
  SweepReport defaults = EvaluateLayoutSweep(*sweep, DefaultsFor);
  PrintSweepReport(defaults, std::cout);

  auto with_collectives = [&](const SweepRow& row) {
    Calibration c = DefaultsFor(row);
    c.collectives = sweep->collectives;
    return c;
  };
  std::cout << "\n== with the cluster's measured collectives\n";
  SweepReport measured = EvaluateLayoutSweep(*sweep, with_collectives);
  PrintSweepReport(measured, std::cout);

  std::vector<CalibrationSample> samples;
  for (const SweepPrediction& p : measured.rows) {
    const SweepRow& row = *p.row;
    if (row.nodes > 2 || !row.ran || !p.expressible) continue;
    CalibrationSample s;
    s.workload = row.workload;
    s.layout = row.layout;
    s.step_time_s = static_cast<double>(row.workload.training.tokens_per_step()) /
                    (row.measured_tokens_per_s_per_gpu *
                     static_cast<double>(row.workload.cluster.world_size()));
    // The source's memory is rank 0's, pipeline stage 0 (read as
    // allocated: layout_sweep.h).
    if (row.measured_peak_allocated_gib) {
      s.peak_allocated_bytes = *row.measured_peak_allocated_gib * kGiB;
      s.memory_stage = 0;
    }
    samples.push_back(s);
  }
  CalibrationFitOptions options;
  options.prior_log_sd = 0.3;
  // The sweep's runs span micro-batches of 1 to 256 sequences, from
  // compute-bound to host-bound: the fixed cost per micro-batch and the host
  // floor (host_dispatch_s_per_layer, cross_node_pipeline_tp_stall_s) are
  // identified, so they are fitted too.
  options.fixed = {};
  absl::StatusOr<CalibrationFit> fit =
      FitCalibration(samples, with_collectives(sweep->rows.front()), options);
  if (!fit.ok()) {
    std::cerr << "fit: " << fit.status().message() << "\n";
    return 1;
  }
  std::cout << "\n== fitted on the " << samples.size()
            << " measured rows on 1-2 nodes, with the collectives; fitted:";
  for (const std::string& name : fit->fitted) {
    std::cout << " " << name << "=" << *fit->calibration.Get(name);
  }
  std::cout << "\n";
  for (const std::string& w : fit->warnings) {
    std::cout << "fit warning: " << w << "\n";
  }
  SweepReport fitted = EvaluateLayoutSweep(
      *sweep, [&](const SweepRow&) { return fit->calibration; });
  PrintSweepReport(fitted, std::cout);
  if (rows) PrintRows(fitted);
  for (int64_t index : explain) {
    for (const SweepPrediction& p : fitted.rows) {
      if (p.row->index == index) Explain(p);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera::costmodel

int main(int argc, char** argv) { return tessera::costmodel::Run(argc, argv); }
