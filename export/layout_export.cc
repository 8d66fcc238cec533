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

namespace {

// One export target: what callers ask of it and the two functions of its
// file (exporters.h).
struct TargetRow {
  ExportTarget target;
  const char* name;       // what --export takes
  const char* stack;      // the stack whose layouts it runs
  const char* file_name;  // a file name for its text
  // Its text is the stack's own configuration (ExportTargetOfStack): NeMo's
  // recipe wraps the same fields as Megatron-LM's arguments, which are
  // megatron-core's own form.
  bool stacks_own_format;
  absl::StatusOr<std::string> (*text)(const ExportInput&);
  std::vector<std::string> (*notes)(const ExportInput&);
};

// Every target, in the order --export lists them. A new target is its own
// file (its text and notes functions, declared in exporters.h), a row here
// and its ExportTarget value.
const std::vector<TargetRow>& Targets() {
  static const std::vector<TargetRow> rows = {
      {ExportTarget::kTorchtitan, "torchtitan", "torchtitan",
       "torchtitan_config.py", true, &ExportTorchtitan, &TorchtitanNotes},
      {ExportTarget::kMegatron, "megatron", "megatron-core",
       "megatron_args.txt", true, &ExportMegatron, &MegatronNotes},
      {ExportTarget::kDeepSpeed, "deepspeed", "deepspeed", "ds_config.json",
       true, &ExportDeepSpeed, &DeepSpeedNotes},
      {ExportTarget::kNemo, "nemo", "megatron-core", "nemo_recipe.py", false,
       &ExportNemo, &NemoNotes},
  };
  return rows;
}

const TargetRow& RowOf(ExportTarget target) {
  for (const TargetRow& row : Targets()) {
    if (row.target == target) return row;
  }
  return Targets().front();  // every ExportTarget has a row
}

}  // namespace

absl::StatusOr<ExportTarget> ParseExportTarget(absl::string_view name) {
  std::vector<std::string> names;
  for (const TargetRow& row : Targets()) {
    if (absl::EqualsIgnoreCase(name, row.name)) return row.target;
    names.push_back(row.name);
  }
  const std::vector<std::string> near = NearNames(name, names);
  return absl::InvalidArgumentError(absl::StrCat(
      "--export: '", name, "' is not ", OrList(names),
      near.empty() ? "" : absl::StrCat(" (did you mean ", OrList(near), "?)")));
}

absl::string_view ExportTargetName(ExportTarget target) {
  return RowOf(target).name;
}

absl::string_view ExportTargetStack(ExportTarget target) {
  return RowOf(target).stack;
}

std::optional<ExportTarget> ExportTargetOfStack(absl::string_view stack) {
  for (const TargetRow& row : Targets()) {
    if (row.stacks_own_format && row.stack == stack) return row.target;
  }
  return std::nullopt;
}

absl::string_view ExportFileName(ExportTarget target) {
  return RowOf(target).file_name;
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

  ExportInput in{workload, resolved, std::string(stack_name), {}};
  for (const StackOption* o : enabled) in.options.push_back(o->name);
  LayoutExport e;
  const TargetRow& row = RowOf(target);
  absl::StatusOr<std::string> text = row.text(in);
  e.notes = row.notes(in);
  if (!text.ok()) return text.status();
  e.text = *std::move(text);
  return e;
}

}  // namespace tessera::exporters
