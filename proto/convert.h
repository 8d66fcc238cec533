// Conversions between the tessera.v1 messages and the domain types, at the
// edges of the components: a StudySpec becomes a Workload (presets resolved,
// explicit fields applied over them, everything validated), layouts and the
// planner's evaluations and search results go both ways (the Plan RPC sends
// them, the CLI prints a result from the service as it prints a local one).
//
//   TESSERA_ASSIGN_OR_RETURN(v1::StudySpec spec, ReadStudySpecFile(path));
//   TESSERA_ASSIGN_OR_RETURN(Workload workload, WorkloadFromSpec(spec));
//   v1::PlanResponse response = PlanResponseFromResult(result);
//   TESSERA_ASSIGN_OR_RETURN(costmodel::SearchResult back,
//                            SearchResultFromPlanResponse(response));
#pragma once

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/model_overrides.h"
#include "core/workload.h"
#include "costmodel/prediction.h"
#include "costmodel/search/plan_uncertainty.h"
#include "costmodel/search/scale_search.h"
#include "costmodel/search/search.h"
#include "tessera/v1/specs.pb.h"

namespace tessera {

// The model of `spec`: core ResolveModel (core/model_overrides.h) of its
// preset and explicit fields, with its rules, bounds and errors
// ("model.preset: unknown preset 'x' (known: ...)", "model.hidden: required
// without a preset", "model.heads: ...").
absl::StatusOr<ModelConfig> ModelFromSpec(const v1::ModelSpec& spec);

// The GPU of `spec`: the preset's figures with explicit ones over them, or
// every figure explicitly (idle_w defaults to 0). Errors name
// "cluster.gpu.<field>".
absl::StatusOr<GpuSpec> GpuFromSpec(const v1::GpuSpec& spec);

// The cluster (core MakeCluster, then the link overrides), within core's
// kMaxNodes and kMaxGpusPerNode. Errors name "cluster.<field>".
absl::StatusOr<ClusterConfig> ClusterFromSpec(const v1::ClusterSpec& spec);

// Within core's kMaxGlobalBatch and kMaxSeqLen. Errors name
// "training.<field>".
absl::StatusOr<TrainingConfig> TrainingFromSpec(const v1::TrainingSpec& spec);

// The whole workload, validated (core ValidateWorkload). Errors are
// INVALID_ARGUMENT and name the field by its path in the spec.
absl::StatusOr<Workload> WorkloadFromSpec(const v1::StudySpec& spec);

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

// A spec that states every figure of `workload` explicitly (and the presets'
// names where the model or GPU is one): WorkloadFromSpec of it gives
// `workload` back.
v1::StudySpec SpecFromWorkload(const Workload& workload);

// Every field of `layout`, as is.
v1::Layout LayoutToProto(const Layout& layout);

// The layout of `proto`: 0 takes the default (degrees 1; dp, grad_accum and
// shard_group derived), "" recompute is none. Out-of-range values are
// INVALID_ARGUMENT naming "layout.<field>", with core ParseLayout's bounds.
absl::StatusOr<Layout> LayoutFromProto(const v1::Layout& proto);

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
