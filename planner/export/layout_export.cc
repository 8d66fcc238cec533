#include "planner/export/layout_export.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "planner/export/exporters.h"
#include "planner/stacks/training_stack.h"

namespace tessera::planner {

namespace exporters {

bool ExportInput::OptionOn(absl::string_view name) const {
  return std::find(options.begin(), options.end(), name) != options.end();
}

std::vector<ModelChunk> ModelChunks(const Layout& layout, int64_t layers) {
  std::vector<ModelChunk> chunks;
  for (int64_t v = 0; v < layout.vpp; ++v) {
    for (int64_t s = 0; s < layout.pp; ++s) {
      const LayerRange r = StageLayers(layers, layout.pp, layout.vpp, s, v);
      chunks.push_back({s, v, r.begin, r.end});
    }
  }
  return chunks;
}

bool EvenChunks(const Layout& layout, int64_t layers) {
  return layers % (layout.pp * layout.vpp) == 0;
}

std::string DescribeRun(const ExportInput& in, absl::string_view prefix) {
  const Layout& l = in.layout;
  const ModelConfig& m = in.workload.model;
  const ClusterConfig& c = in.workload.cluster;
  const TrainingConfig& t = in.workload.training;
  std::string out;
  absl::StrAppend(&out, prefix, "Tessera layout ", FormatLayout(l), "\n");
  absl::StrAppend(&out, prefix, "model ", m.name, ": ", m.layers,
                  " layers, hidden ", m.hidden, ", ", m.heads, " heads, ",
                  m.kv_heads, " kv heads, ffn ", m.ffn_hidden, ", vocab ",
                  m.vocab, "\n");
  absl::StrAppend(&out, prefix, c.world_size(), " GPUs (", c.nodes, " x ",
                  c.gpus_per_node, " ", c.gpu.name, "), ", in.stack, " stack, ",
                  PrecisionName(t.precision), "\n");
  absl::StrAppend(&out, prefix, "global batch ", t.global_batch,
                  " sequences of ", t.seq_len, " tokens = micro-batch ",
                  l.micro_batch, " x dp ", l.dp, " x grad-accum ", l.grad_accum,
                  "\n");
  return out;
}

absl::Status CannotExpress(absl::string_view field, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(field, ": ", what));
}

}  // namespace exporters

absl::StatusOr<ExportTarget> ParseExportTarget(absl::string_view name) {
  for (ExportTarget t : {ExportTarget::kTorchtitan, ExportTarget::kMegatron,
                         ExportTarget::kDeepSpeed, ExportTarget::kNemo}) {
    if (name == ExportTargetName(t)) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--export: '", name, "' is not torchtitan, megatron, deepspeed or nemo"));
}

absl::string_view ExportTargetName(ExportTarget target) {
  switch (target) {
    case ExportTarget::kTorchtitan:
      return "torchtitan";
    case ExportTarget::kMegatron:
      return "megatron";
    case ExportTarget::kDeepSpeed:
      return "deepspeed";
    case ExportTarget::kNemo:
      return "nemo";
  }
  return "unknown";
}

absl::string_view ExportTargetStack(ExportTarget target) {
  switch (target) {
    case ExportTarget::kTorchtitan:
      return "torchtitan";
    case ExportTarget::kMegatron:
    case ExportTarget::kNemo:
      return "megatron-core";
    case ExportTarget::kDeepSpeed:
      return "deepspeed";
  }
  return "unknown";
}

std::optional<ExportTarget> ExportTargetOfStack(absl::string_view stack) {
  // megatron-core's own form is Megatron-LM's arguments (NeMo's recipe
  // wraps the same fields).
  for (ExportTarget t : {ExportTarget::kTorchtitan, ExportTarget::kMegatron,
                         ExportTarget::kDeepSpeed}) {
    if (ExportTargetStack(t) == stack) return t;
  }
  return std::nullopt;
}

absl::string_view ExportFileName(ExportTarget target) {
  switch (target) {
    case ExportTarget::kTorchtitan:
      return "torchtitan_config.py";
    case ExportTarget::kMegatron:
      return "megatron_args.txt";
    case ExportTarget::kDeepSpeed:
      return "ds_config.json";
    case ExportTarget::kNemo:
      return "nemo_recipe.py";
  }
  return "export.txt";
}

absl::StatusOr<std::string> ExportLayout(const Workload& workload,
                                         const Layout& layout,
                                         ExportTarget target) {
  TESSERA_ASSIGN_OR_RETURN(const Layout resolved,
                           ResolveLayout(layout, workload.cluster.world_size(),
                                         workload.training.global_batch));
  const absl::string_view stack_name = ExportTargetStack(target);
  TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack, FindStack(stack_name));
  // The workload's options belong to its own stack; another stack's
  // defaults apply when the target runs a different one.
  const std::vector<std::string> no_changes;
  TESSERA_ASSIGN_OR_RETURN(
      const std::vector<const StackOption*> enabled,
      EnabledOptions(*stack, workload.training.stack == stack_name
                                 ? workload.training.stack_options
                                 : no_changes));
  if (absl::Status s = stack->CanRun(resolved, workload.training.precision);
      !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        s.message(), "; not exported to ", ExportTargetName(target)));
  }
  TESSERA_RETURN_IF_ERROR(
      CheckLayoutFitsModel(resolved, workload.model, workload.training.seq_len,
                           stack->layouts.uneven_interleaving));

  exporters::ExportInput in{workload, resolved, std::string(stack_name), {}};
  for (const StackOption* o : enabled) in.options.push_back(o->name);
  switch (target) {
    case ExportTarget::kTorchtitan:
      return exporters::ExportTorchtitan(in);
    case ExportTarget::kMegatron:
      return exporters::ExportMegatron(in);
    case ExportTarget::kDeepSpeed:
      return exporters::ExportDeepSpeed(in);
    case ExportTarget::kNemo:
      return exporters::ExportNemo(in);
  }
  return absl::InternalError("ExportLayout: unknown target");
}

}  // namespace tessera::planner
