// A measured layout sweep: groups of launched layouts of one workload (model
// x cluster x batch x sequence x stack x precision), each with what its run
// measured (tokens/s per GPU, peak memory) or that it failed. `tessera
// replay` runs the planner's study loop against such a table: a trial's
// outcome is looked up instead of executed (study_replay.h).
//
// Three file formats are read:
//   - a sweep (shared/data/usp_sweep.json): {"rows": [...]} where every row
//     has "status" ok|failed (or oom|crash|timeout|nan), the workload
//     (model, layers, hidden, heads, kv_heads, ffn, vocab, seq_len, gpu,
//     gpus, gpus_per_node, global_batch_seqs, precision), the layout (tp,
//     pp, vpp, cp, dp, micro_batch, zero_or_fsdp "zeroN", recompute) and,
//     for ok rows, measured_tokens_per_s_per_gpu (peak memory from notes'
//     "peak GPU memory X GB", taken as GiB as PyTorch's tools print it).
//     The stack is the row's or the file's "stack", else the one its
//     "source" names, else --stack. An optional top-level
//     "collective_busbw_gbs_256MiB" ({"nodes": [...], "all_gather": [...],
//     ...}) is the cluster's measured bus bandwidth, given to the planner as
//     `tessera calibrate --collectives` would.
//   - published runs (shared/data/measured_published.json, rows without
//     "status"): mapped by costmodel/published/published_runs.h; its groups
//     of rows that differ only in layout, every row measured.
//   - `tessera trials -o json` (a JSON array of trials): one group per study
//     and trial world, from the ok trials' "ran" spec; failed trials of the
//     same study and world keep their state (oom, crash, ...).
// The same layout launched twice in a group is one row: measured if any run
// measured (the mean of the measurements), else failed.
//
//   SweepReadOptions options;
//   TESSERA_ASSIGN_OR_RETURN(MeasuredSweep sweep,
//                            ReadMeasuredSweep("usp_sweep.json", options));
//   for (const SweepGroup& g : sweep.groups) ... g.BestTokensPerSPerGpu() ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/trial_result.h"
#include "core/workload.h"
#include "costmodel/calibration/measured_collectives.h"
#include "service/plan_convert.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::replay {

// One launched layout of a group and what its run gave.
struct SweepRow {
  int64_t index = 0;  // the first file row (0-based) it came from
  Layout layout;      // resolved for the group's world
  // kOk with a measurement, or the failure (kOom, kCrash, ...).
  TrialStatus outcome = TrialStatus::kOk;
  std::string failure_reason;        // what the source says of a failure
  double tokens_per_s_per_gpu = 0;   // ok rows
  std::optional<double> peak_memory_bytes;  // per GPU, when measured
};

// The launched layouts of one workload.
struct SweepGroup {
  std::string name;   // "nanotron-llama-1B on 1x8 h100-sxm", unique in a file
  v1::StudySpec spec;  // model, cluster, training; no search or trials
  Workload workload;   // CheckedWorkloadFromSpec(spec)
  std::vector<SweepRow> rows;
  // The cluster's measured collectives (empty: none given).
  std::vector<costmodel::CollectiveMeasurement> collectives;

  // The best measured tokens/s per GPU (0 when nothing ran).
  double BestTokensPerSPerGpu() const;
  int64_t OkRows() const;
};

struct MeasuredSweep {
  std::string source;  // the file
  std::string format;  // "sweep", "published", "trials"
  std::vector<SweepGroup> groups;  // in the order they first appear
  // Rows left out, each with its reason ("row 17: ...").
  std::vector<std::string> skipped;
};

struct SweepReadOptions {
  // The training stack of rows that do not name one ("": infer from the
  // source, else an error naming --stack).
  std::string stack;
  // What a sweep's "failed" row (launched, no measurement, cause not given)
  // is reported as: oom (the default: the sweeps say most failures are
  // memory) or crash.
  TrialStatus failed_as = TrialStatus::kOom;
  // Groups with fewer measured layouts than this are left out (a group
  // with one measured layout has nothing to search).
  int64_t min_ok_rows = 2;
  // Leave the file's measured collectives out (plan the cluster with the
  // GPU preset's links, as a user who measured none).
  bool without_collectives = false;
};

// Reads `path` in any of the formats above. INVALID_ARGUMENT names the file,
// the row and the field; NOT_FOUND when the file cannot be read. Rows that
// cannot be expressed (a layout the stack's rules refuse for the world) go to
// `skipped`, never silently.
absl::StatusOr<MeasuredSweep> ReadMeasuredSweep(const std::string& path,
                                                const SweepReadOptions& options);
// The same from the file's text (`source` names it in errors).
absl::StatusOr<MeasuredSweep> ParseMeasuredSweep(
    absl::string_view text, absl::string_view source,
    const SweepReadOptions& options);

}  // namespace tessera::replay
