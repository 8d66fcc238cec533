// The cost model against published measurements of real training runs
// (tests/data/measured_published.json, a copy of shared/data/'s, 299 rows from
// torchtitan, Megatron-LM, Megatron-Bridge, llm-foundry and fms-fsdp; the
// .md beside it gives each source's hardware, software and caveats).
//
// Each row becomes a Workload (model, cluster, training with the row's stack,
// options and precision) and a Layout, with every assumption the mapping had
// to make written down with the row (sequence lengths a source leaves to its
// default config, micro-batches per pipeline, the Megatron tables' FLOP
// counts turned into tokens/s, ...). Rows the model cannot express are listed
// with the reason, never silently dropped. Then every mapped row is predicted
// with its stack's default coefficients (costmodel/stacks), and the errors are
// summarised per source and per precision: rows called infeasible although
// they ran, tokens/s/GPU MAPE and signed bias, predicted/measured peak memory
// where measured, and how well the ranking inside each group of rows that
// differ only in layout matches the measured one.
//
//   TESSERA_ASSIGN_OR_RETURN(PublishedRuns runs,
//                            LoadPublishedRuns("tests/data/measured_published.json"));
//   ValidationReport report = ValidatePublishedRuns(runs);
//   PrintValidationReport(report, std::cout);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/prediction.h"

namespace tessera::costmodel {

// One published run as the cost model takes it.
struct PublishedRun {
  int64_t index = 0;   // row number in the file
  std::string source;  // short name: torchtitan, megatron-lm-h100, ...
  std::string model;   // the row's model name
  Workload workload;
  Layout layout;
  double measured_tokens_per_s_per_gpu = 0;
  // Derived from a published TFLOP/s figure with the source's FLOP count.
  bool tokens_derived_from_tflops = false;
  std::optional<double> measured_peak_memory_gib;
  // Rows that differ only in layout (and stack options) share a group.
  std::string group;
  // The source names a recomputation without its extent (fms-fsdp's
  // "Selective AC" leaves selective_checkpointing unsaid): the stack's
  // selective policy is taken, or full recomputation where that does not
  // fit, the least a user would have run.
  bool least_recompute_that_fits = false;
  // The row says which recomputation it ran; false: the loader assumed one
  // (none, or full for the SC'21 rows) and says so in `assumptions`.
  bool recompute_given = true;
  std::vector<std::string> assumptions;
};

// A row the model cannot express, and why.
struct UnmappedRun {
  int64_t index = 0;
  std::string source;
  std::string reason;
};

struct PublishedRuns {
  std::vector<PublishedRun> runs;
  std::vector<UnmappedRun> unmapped;
};

// The training stack a row's "source" text names ("nanotron" for Hugging
// Face's nanotron, the stack of each published source: torchtitan,
// megatron-core, megatron-2021, pytorch-fsdp); "" when it names none.
std::string StackOfSource(absl::string_view source_text);

// The GPU preset of a row's "gpu" text ("H100-SXM-80GB" -> "h100-sxm",
// "H100-SXM-96GB-HBM2e@500W" -> "h100-sxm-96g-500w"); nullopt when unknown.
std::optional<std::string> GpuPresetOfName(absl::string_view gpu);

// Reads and maps the file. Fails only when the file cannot be read or is not
// the expected JSON; rows that cannot be mapped go to `unmapped`.
absl::StatusOr<PublishedRuns> LoadPublishedRuns(const std::string& path);
// The same from the file's text; `source` names it in errors.
absl::StatusOr<PublishedRuns> ParsePublishedRuns(absl::string_view text,
                                                 absl::string_view source);

// Predicts the runs that do not give their recomputation
// (!recompute_given) with `recompute` instead of the loader's assumption,
// and says so in their assumptions: how much an unstated setting explains.
void AssumeUnstatedRecompute(Recompute recompute, PublishedRuns* runs);

// One mapped run with its prediction.
struct ValidatedRun {
  const PublishedRun* run = nullptr;
  LayoutEvaluation evaluation;  // with the stack's default coefficients
  double error = 0;             // predicted / measured tokens/s/GPU - 1
  std::optional<double> memory_ratio;  // predicted / measured peak memory
};

// Errors over a set of rows.
struct ErrorSummary {
  int64_t rows = 0;
  int64_t infeasible = 0;  // called infeasible (all ran)
  double mape = 0;         // mean |error|
  double median_error = 0;  // signed: > 0 over-predicts
  double mean_error = 0;    // signed bias: the mean of the errors
  double worst_error = 0;   // the largest |error|, signed
  int64_t memory_rows = 0;
  double memory_mape = 0;  // mean |predicted/measured - 1| of peak memory
  double median_memory_ratio = 0;  // median predicted/measured peak memory
  double worst_memory_error = 0;
};

// How the ranking within groups of rows that differ only in layout compares.
struct RankingSummary {
  int64_t groups = 0;           // groups of 2 or more rows
  int64_t best_matches = 0;     // groups whose predicted best is the measured
  double mean_spearman = 0;     // Spearman rank correlation, mean over groups
};

struct ValidationReport {
  std::vector<ValidatedRun> rows;
  std::vector<UnmappedRun> unmapped;
  std::map<std::string, ErrorSummary> by_source_bf16;
  std::map<std::string, ErrorSummary> by_source_fp8;
  ErrorSummary all_bf16;
  ErrorSummary all_fp8;
  ErrorSummary all;
  RankingSummary ranking;
};

// Predicts every run of `runs` (which must outlive the report).
ValidationReport ValidatePublishedRuns(const PublishedRuns& runs);

// The per-source table; with `rows`, every row and its assumptions too.
void PrintValidationReport(const ValidationReport& report, bool rows,
                           std::ostream& out);

// One validated row in full: its mapping, assumptions, and the prediction's
// time and memory breakdown.
void PrintValidatedRun(const ValidatedRun& row, std::ostream& out);

}  // namespace tessera::costmodel
