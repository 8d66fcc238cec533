// Conversions between the tessera.v1 messages and the cost model's types, at
// the planner's API edge: a study spec's workload with its training stack
// checked, the search options, and predictions, evaluations and search
// results both ways (the Plan RPC sends them; the CLI prints a result from
// the service as it prints a local one). Core types are converted by
// proto/convert.h, which this builds on.
//
//   TESSERA_ASSIGN_OR_RETURN(Workload workload, CheckedWorkloadFromSpec(spec));
//   v1::PlanResponse response = PlanResponseFromResult(result);
//   TESSERA_ASSIGN_OR_RETURN(costmodel::SearchResult back,
//                            SearchResultFromPlanResponse(response));
#pragma once

#include "absl/status/statusor.h"
#include "core/workload.h"
#include "costmodel/prediction.h"
#include "costmodel/search/plan_uncertainty.h"
#include "costmodel/search/scale_search.h"
#include "costmodel/search/search.h"
#include "tessera/v1/specs.pb.h"

namespace tessera {

// WorkloadFromSpec (proto/convert.h), then its training stack checked
// against the stack files (costmodel::ResolveTrainingStack): errors name
// training.stack, training.stack_options or training.precision.
absl::StatusOr<Workload> CheckedWorkloadFromSpec(const v1::StudySpec& spec);

// The search options (top: 10 when absent). Errors name "search.<field>".
absl::StatusOr<costmodel::SearchOptions> SearchOptionsFromSpec(
    const v1::SearchOptions& spec);

// The GPU count's search of `spec` (search.scale) over its layout search
// (SearchOptionsFromSpec): the objective ("" is time, or energy with a
// deadline), the deadline (0: none), the idle charge and the node counts.
// Errors name "search.scale.<field>"; counts against the cluster are checked
// by costmodel::ValidateScaleOptions.
absl::StatusOr<costmodel::ScaleOptions> ScaleOptionsFromSpec(
    const v1::SearchOptions& spec);

v1::Prediction PredictionToProto(const costmodel::Prediction& prediction);
// full_run is set when the message has one.
costmodel::Prediction PredictionFromProto(const v1::Prediction& proto);

v1::LayoutEvaluation EvaluationToProto(
    const costmodel::LayoutEvaluation& evaluation);
// Fails only when the layout does (LayoutFromProto).
absl::StatusOr<costmodel::LayoutEvaluation> EvaluationFromProto(
    const v1::LayoutEvaluation& proto);

v1::StepTimeInterval IntervalToProto(const costmodel::StepTimeInterval& i);
costmodel::StepTimeInterval IntervalFromProto(const v1::StepTimeInterval& proto);
v1::PlanUncertainty PlanUncertaintyToProto(const costmodel::PlanUncertainty& u);
// The spreads carry only their source and model error (what readers see).
costmodel::PlanUncertainty PlanUncertaintyFromProto(
    const v1::PlanUncertainty& proto);

// best_throughput and best_energy are left out when nothing is feasible.
v1::PlanResponse PlanResponseFromResult(const costmodel::SearchResult& result);
absl::StatusOr<costmodel::SearchResult> SearchResultFromPlanResponse(
    const v1::PlanResponse& response);

}  // namespace tessera
