#include "export/layout_export.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/known_names.h"
#include "core/status_macros.h"
#include "export/exporters.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::exporters {

using costmodel::EnabledOptions;
using costmodel::FindStack;
using costmodel::StackOption;
using costmodel::TrainingStack;

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

std::string NoteComments(const std::vector<std::string>& notes,
                         absl::string_view prefix) {
  constexpr size_t kColumns = 79;
  std::string out;
  for (const std::string& note : notes) {
    std::string line = absl::StrCat(prefix, "note:");
    for (absl::string_view word :
         absl::StrSplit(note, ' ', absl::SkipEmpty())) {
      if (line.size() + 1 + word.size() > kColumns &&
          line.size() > prefix.size() + 6) {
        absl::StrAppend(&out, line, "\n");
        line = absl::StrCat(prefix, " ");
      }
      absl::StrAppend(&line, " ", word);
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

bool BeforeBlackwell(const Workload& workload) {
  const std::string& arch = workload.cluster.gpu.architecture;
  return arch != "blackwell" && arch != "cpu";
}

absl::Status CannotExpress(absl::string_view field, absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(field, ": ", what));
}

absl::StatusOr<ExportTarget> ParseExportTarget(absl::string_view name) {
  for (ExportTarget t : {ExportTarget::kTorchtitan, ExportTarget::kMegatron,
                         ExportTarget::kDeepSpeed, ExportTarget::kNemo}) {
    if (absl::EqualsIgnoreCase(name, ExportTargetName(t))) return t;
  }
  const std::vector<std::string> near =
      NearNames(name, {"torchtitan", "megatron", "deepspeed", "nemo"});
  return absl::InvalidArgumentError(absl::StrCat(
      "--export: '", name, "' is not torchtitan, megatron, deepspeed or nemo",
      near.empty() ? "" : absl::StrCat(" (did you mean ", OrList(near), "?)")));
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
  TESSERA_ASSIGN_OR_RETURN(LayoutExport e,
                           ExportLayoutWithNotes(workload, layout, target));
  return std::move(e.text);
}

absl::StatusOr<LayoutExport> ExportLayoutWithNotes(const Workload& workload,
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
  LayoutExport e;
  absl::StatusOr<std::string> text =
      absl::InternalError("ExportLayout: unknown target");
  switch (target) {
    case ExportTarget::kTorchtitan:
      text = exporters::ExportTorchtitan(in);
      e.notes = exporters::TorchtitanNotes(in);
      break;
    case ExportTarget::kMegatron:
      text = exporters::ExportMegatron(in);
      e.notes = exporters::MegatronNotes(in);
      break;
    case ExportTarget::kDeepSpeed:
      text = exporters::ExportDeepSpeed(in);
      e.notes = exporters::DeepSpeedNotes(in);
      break;
    case ExportTarget::kNemo:
      text = exporters::ExportNemo(in);
      e.notes = exporters::NemoNotes(in);
      break;
  }
  if (!text.ok()) return text.status();
  e.text = *std::move(text);
  return e;
}

}  // namespace tessera::exporters
