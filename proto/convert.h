// Conversions between the tessera.v1 messages and core's domain types, at the
// edges of the components: a StudySpec becomes a Workload (presets resolved,
// explicit fields applied over them, everything core checks validated),
// layouts go both ways. The cost model's types (search options, predictions,
// search results) are converted by service/plan_convert.h, and the training
// stack named by a spec is checked there (CheckedWorkloadFromSpec), so this
// folder and the agent that links it know nothing of the cost model.
//
//   TESSERA_ASSIGN_OR_RETURN(v1::StudySpec spec, ReadStudySpecFile(path));
//   TESSERA_ASSIGN_OR_RETURN(Workload workload, WorkloadFromSpec(spec));
//   v1::Layout wire = LayoutToProto(layout);
#pragma once

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/model_overrides.h"
#include "core/workload.h"
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
// INVALID_ARGUMENT and name the field by its path in the spec. The training
// stack's name and options are taken as given: CheckedWorkloadFromSpec
// (service/plan_convert.h) checks them against the stack files.
absl::StatusOr<Workload> WorkloadFromSpec(const v1::StudySpec& spec);

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

}  // namespace tessera
