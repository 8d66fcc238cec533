// The plotted sections of `tessera report`'s page (cli/report_html.h), each
// an <h2>, a caption and inline SVG (cli/svg_chart.h) drawn from the store's
// numbers as the planner returns them, with a table where the plot alone
// would hide values. A number the store does not have shows as "—".
//
//   std::string html = ParetoSection(recommendation) +
//                      StepCurvesSection(trials, StepSeries::kLoss);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/report_predictions.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// The recommendation's Pareto front: tokens/s against tokens/J as a line
// through points labelled with their layouts (filled: measured tokens/s;
// hollow: predicted), axes fitted to the points; then a table of the front.
std::string ParetoSection(const v1::Recommendation& recommendation);

// For a study that chose its GPU count (Recommendation.scale): each count
// searched at its best layout, time to train against energy (per 1e9 tokens
// without a token budget) on a log time axis, each point labelled with its
// GPUs (filled: on the front of time, energy and GPU-hours; the chosen count
// said so); then a table of every count. "" for other studies.
std::string ScaleSection(const v1::Recommendation& recommendation);

// Each ok trial's measured tokens/s against the prediction stored when it
// was queued, as the error measured / predicted - 1 in % (0: the model was
// exact) over the predicted tokens/s, with the calibration's step-time
// error as a band; then a table of the same numbers.
std::string ErrorSection(const std::vector<v1::Trial>& trials,
                         const v1::Recommendation& recommendation);

enum class StepSeries { kLoss, kStepTime };

// One line per trial with per-step values (warm-up steps hollow): the loss
// or each step's time. Steps whose value was not recorded break the line.
std::string StepCurvesSection(const std::vector<v1::Trial>& trials,
                              StepSeries series);

// Per ok trial, two stacked bars: the measured step (compute, exposed
// communication, the rest) and the predicted one (compute, exposed
// communication, pipeline bubble, the rest) from `breakdowns`; then a table
// with "—" for each part not measured or not predicted.
std::string BreakdownSection(
    const std::vector<v1::Trial>& trials,
    const std::map<int64_t, TrialBreakdown>& breakdowns);

// Each ok trial as a line across one axis per knob (tp, pp, cp, ZeRO
// stage, micro-batch, recompute), coloured by its measured tokens/s (dark:
// slowest, bright: fastest); each line carries the trial's id, knobs and
// tokens/s in data-* attributes.
std::string ParallelCoordinatesSection(const std::vector<v1::Trial>& trials);

// Every trial that started, on the lane of each agent that held it, from
// its start to its end (to `now` while it runs), coloured by state; time
// from the first start.
std::string TimelineSection(const std::vector<v1::Trial>& trials,
                            absl::Time now);

}  // namespace tessera::cli
