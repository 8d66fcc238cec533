// Whether an agent's trial report can be believed, before the planner stores
// it as a measurement: every reported quantity within what the hardware and
// the trial that was asked for allow. A report that fails is stored as an
// `invalid` trial with the reason, never as `ok`, so it cannot become a
// study's best layout or a calibration sample.
//
//   // planner-side facts: the trial and the workload it runs (its study's,
//   // scaled as PlanOfTrialLayout scales it)
//   MeasurementBounds b = BoundsOf(trial, trial_workload);
//   absl::Status s = CheckMeasurement(result, b);
//   // InvalidArgument "implausible report: tokens_per_s 1e+308 ..." when not
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "core/layout.h"
#include "core/trial_result.h"
#include "core/workload.h"
#include "db/trial_store.h"

namespace tessera::service {

// A report's JSON larger than this is refused before it is parsed: a trial's
// result holds one loss and one time per step and bounded text.
inline constexpr size_t kMaxReportBytes = 1 << 20;

// Text fields of a report (reason, output_tail, names) longer than this are
// implausible (agents keep output tails of a few KiB).
inline constexpr size_t kMaxReportTextBytes = 64 << 10;

// Measured model FLOP/s per GPU may exceed the GPU's highest dense peak by
// this factor at most: a datasheet peak is a ceiling, with room for noise.
inline constexpr double kPeakSlack = 1.1;
// For CPU agents the "peak" is the agent's own GEMM probe (the host's rate
// divided by its ranks), measured once on cores that other agents and other
// work may share: a trial can beat it by more. 2.0 was not enough: a CI run
// (ctest -j2, SystemTest.RealTrialsRunAndAreStored, 2026-11-28) probed
// 0.031 TFLOP/s per rank beside another test and then trained the tiny
// model at 0.063. Fabricated rates (1e308 tokens/s, TFLOP/s per CPU rank)
// stay far above 4x.
inline constexpr double kCpuPeakSlack = 4.0;

// What the planner knows of a trial, independently of its report.
struct MeasurementBounds {
  // The layout the trial was leased with: a report of any other is refused
  // (it would be stored under the lease's layout).
  std::optional<Layout> layout;
  int64_t world_size = 0;          // GPUs (ranks) the layout runs on
  int64_t max_steps_recorded = 0;  // warm-up + measured steps asked for
  int64_t global_batch = 0;        // sequences per optimizer step
  int64_t seq_len = 0;             // tokens per sequence
  // Set when the study's workload is known (its GPU resolved):
  std::optional<double> model_flops_per_token;   // forward + backward
  std::optional<double> peak_flops_per_gpu;      // highest dense peak, FLOP/s
  double peak_slack = kPeakSlack;                // kCpuPeakSlack for CPU agents
  std::optional<int64_t> memory_bytes_per_rank;  // most a rank can hold
  std::optional<double> max_watts_per_gpu;       // board power limit x 1.5
};

// The bounds of `trial` (its layout and steps) running `workload` (the
// trial's: the study's with its GPU resolved, scaled to the trial's dp and
// layers; nullopt when unknown: only the checks that need no workload
// apply).
MeasurementBounds BoundsOf(const db::Trial& trial,
                           const std::optional<Workload>& workload);

// OK when `result` is plausible for `bounds`; InvalidArgument naming the
// first implausible quantity otherwise ("implausible report: ...").
// Every status: the layout the lease's (compared resolved), text sizes, per-step rows at most max_steps_recorded, at
// most world_size memory entries, numbers finite and not negative. An `ok`
// result also: positive step times ordered p10 <= median <= p90, tokens/s
// positive and within 10% of the step's tokens over the median step time,
// at most kPeakSlack x the peak for the model's FLOPs (losses are not
// judged: fp16 loss scaling skips steps whose loss overflows), memory per
// rank under the device's, power under 1.5 x the board limit, and the
// batch, sequence and ranks the trial was asked for.
absl::Status CheckMeasurement(const TrialResult& result,
                              const MeasurementBounds& bounds);

}  // namespace tessera::service
