// The cost model against a measured layout sweep: every layout launched for a
// few (model, node count) groups on one cluster, measured or failed
// (shared/data/usp_sweep.json: Hugging Face's Ultra-Scale Playbook, nanotron
// Llama 1B and 8B on 1-8 nodes of 8 H100, with the cluster's measured bus
// bandwidth by node count; usp_sweep.md describes it).
//
// What a planner needs from the model on such a sweep is the order within a
// group (which layout to trial first) and the line between what fits and
// what does not, more than the absolute figure. The summary therefore gives,
// per group and over groups split by node count (the rows a calibration is
// fitted on and the rows it is checked on): Spearman's rho between predicted
// and measured tokens/s over the measured rows, whether the planner's top
// pick (the fastest layout it calls feasible) ran within 5% of the group's
// best, the median error, the predicted/measured peak memory by pipeline
// depth, and the rows whose feasibility it gets wrong.
//
//   TESSERA_ASSIGN_OR_RETURN(LayoutSweep sweep, LoadLayoutSweep(path));
//   Calibration c = ...;  // the stack's defaults with sweep.collectives
//   SweepReport r = EvaluateLayoutSweep(sweep, [&](const SweepRow&) {
//     return c; });
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/measured_collectives.h"
#include "costmodel/prediction.h"

namespace tessera::costmodel {

// One launched layout.
struct SweepRow {
  int64_t index = 0;   // row number in the file
  std::string group;   // "model|nodes"
  int64_t nodes = 1;
  Workload workload;
  Layout layout;
  bool ran = false;  // status ok: measured; else it failed (mostly memory)
  double measured_tokens_per_s_per_gpu = 0;  // when ran
  // Peak memory on rank 0 (pipeline stage 0), GiB: the source's "GPU
  // memory ... GB". nanotron's benchmark table (helpers.py create_table_log)
  // logs both "Mem Alloc (GB)" (max_memory_allocated / 1024^3) and "Mem Res
  // (GB)" (max_memory_reserved); the playbook's hover text does not say
  // which it shows. Read as allocated, the model's stage-0 ratio falls with
  // micro-batch and tp (0.89 at mbs 1, 0.71 at mbs 32), as reserved memory
  // would; that reading is not established.
  std::optional<double> measured_peak_allocated_gib;
  bool flagged = false;  // the source flags it (MFU < 1%, labels)
  // Ran at under half the tokens/s per GPU of the same model and layout
  // (tp, pp, zero, micro-batch) on half the nodes: a cliff of the cluster or
  // the run (the 1B at pp 4, mbs 1: 32,105 on 4 nodes, 890 on 8), which no
  // cost model without that cluster's fault predicts. Scored apart.
  bool collapsed = false;
};

struct LayoutSweep {
  std::vector<SweepRow> rows;
  // The cluster's measured bus bandwidth (one size, by node count), as
  // `tessera calibrate --collectives` would take it.
  std::shared_ptr<const MeasuredCollectives> collectives;
};

// Reads the sweep; fails when the file cannot be read or a row cannot be
// mapped (naming the row and field).
absl::StatusOr<LayoutSweep> LoadLayoutSweep(const std::string& path);

// One row with its prediction.
struct SweepPrediction {
  const SweepRow* row = nullptr;
  LayoutEvaluation evaluation;
  bool expressible = false;  // the model can state the layout at all
  double error = 0;          // predicted / measured tokens/s - 1 (ran rows)
  // Predicted allocated bytes of pipeline stage 0 (no fixed overhead or
  // fragmentation: the measurement is the allocator's) over the measured.
  std::optional<double> memory_ratio;
};

// Scores over a set of groups.
struct SweepScores {
  int64_t groups = 0;              // groups with 2 or more measured rows
  double mean_spearman = 0;        // over groups
  int64_t top_pick_within_5pct = 0;  // groups whose top pick ran within 5%
  int64_t measured_rows = 0;
  int64_t inexpressible_rows = 0;  // launched, but refused by the model
  double median_abs_error = 0;     // over measured, expressible rows
  double median_error = 0;         // signed
  int64_t ran_called_infeasible = 0;
  int64_t failed_called_feasible = 0;
  int64_t failed_rows = 0;
  // Median predicted/measured stage-0 peak memory (allocated tensors
  // predicted; measured_peak_allocated_gib), by pp.
  std::map<int64_t, double> median_memory_ratio_by_pp;
  std::map<int64_t, int64_t> memory_rows_by_pp;
};

struct SweepGroupScore {
  std::string group;
  int64_t nodes = 1;
  int64_t measured = 0;
  double spearman = 0;
  // Measured tokens/s of the top pick over the group's best; 0 when the
  // top pick failed.
  double top_pick_ratio = 0;
  std::string top_pick;  // its layout
  double median_abs_error = 0;
};

struct SweepReport {
  std::vector<SweepPrediction> rows;
  std::vector<SweepGroupScore> groups;
  SweepScores fit;    // groups on at most 2 nodes
  SweepScores check;  // groups on 4 or more nodes
  SweepScores all;
  // The check groups without their collapsed rows (SweepRow::collapsed).
  SweepScores check_without_collapsed;
  int64_t collapsed_rows = 0;
};

// The calibration to predict a row with.
using SweepCalibration = std::function<Calibration(const SweepRow&)>;

// Predicts every row (memory judged with no headroom: the runs either ran
// or not) and scores them; `sweep` must outlive the report.
SweepReport EvaluateLayoutSweep(const LayoutSweep& sweep,
                                const SweepCalibration& calibration);

// The per-group table and the fit/check summaries.
void PrintSweepReport(const SweepReport& report, std::ostream& out);

}  // namespace tessera::costmodel
