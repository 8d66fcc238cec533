// One layout of a workload as the configuration of the real training
// framework, to paste into the real run:
//   torchtitan  a Python config function over torchtitan's Trainer.Config
//               (torchtitan main has no TOML job file any more: configs are
//               Python functions, torchtitan/config/README.md)
//   megatron    Megatron-LM command-line arguments, one per line
//   deepspeed   a DeepSpeed config JSON
//   nemo        a Megatron-Bridge (NeMo framework) recipe function over its
//               ConfigContainer
// Each target runs the layouts of one training stack (costmodel/stacks): only
// layouts that stack can run (TrainingStack::CanRun, CheckLayoutFitsModel)
// are exported, and a target refuses what its configuration cannot say
// (a DeepSpeed JSON cannot set pipeline parallelism) with the field named.
// The option names come from the frameworks' sources at the commits that
// each exporter's file cites.
//
//   TESSERA_ASSIGN_OR_RETURN(ExportTarget t, ParseExportTarget("megatron"));
//   TESSERA_ASSIGN_OR_RETURN(std::string args,
//                            ExportLayout(workload, layout, t));
//   // args: "--tensor-model-parallel-size 2\n--sequence-parallel\n..."
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/workload.h"

namespace tessera::exporters {

enum class ExportTarget { kTorchtitan, kMegatron, kDeepSpeed, kNemo };

// "torchtitan", "megatron", "deepspeed" or "nemo", in any case;
// INVALID_ARGUMENT
// "--export: 'x' is not torchtitan, megatron, deepspeed or nemo" with the
// near names ("(did you mean megatron?)" for 'megatron-lm').
absl::StatusOr<ExportTarget> ParseExportTarget(absl::string_view name);

// The name ParseExportTarget takes.
absl::string_view ExportTargetName(ExportTarget target);

// The stack whose layouts the target runs: torchtitan -> "torchtitan",
// megatron and nemo -> "megatron-core", deepspeed -> "deepspeed".
absl::string_view ExportTargetStack(ExportTarget target);

// The target whose configuration is `stack`'s own: torchtitan for
// "torchtitan", megatron for "megatron-core", deepspeed for "deepspeed";
// nullopt for a stack without an exporter (pytorch-fsdp, pytorch-ddp,
// nanotron, megatron-2021, tessera).
std::optional<ExportTarget> ExportTargetOfStack(absl::string_view stack);

// A file name for the target's export: "torchtitan_config.py",
// "megatron_args.txt", "ds_config.json", "nemo_recipe.py".
absl::string_view ExportFileName(ExportTarget target);

// The text of the target's configuration for `layout` of `workload`. The
// layout is resolved first (ResolveLayout for the workload's world size and
// global batch: a resolved layout comes back unchanged; its errors are
// INVALID_ARGUMENT, as are CheckLayoutFitsModel's). The stack options of
// workload.training apply when its stack is the target's; otherwise the
// target stack's defaults do. FAILED_PRECONDITION naming the field and the
// target when the target's stack cannot run the layout ("layout.cp: the
// deepspeed stack has no context parallelism (cp must be 1); not exported to
// deepspeed") or the target's configuration cannot express it
// ("layout.pp: a DeepSpeed config JSON cannot set pipeline parallelism
// (Megatron-DeepSpeed's --pipeline-model-parallel-size does)").
absl::StatusOr<std::string> ExportLayout(const Workload& workload,
                                         const Layout& layout,
                                         ExportTarget target);

// An export and what its file alone does not do.
struct LayoutExport {
  std::string text;  // as ExportLayout returns it
  // One sentence each: environment variables the framework checks
  // ("export CUDA_DEVICE_MAX_CONNECTIONS=1 ..."), warnings it raises for
  // this configuration, what the file leaves to the person (data,
  // tokenizer, what a JSON cannot switch on). Also in `text` as comments
  // where the target's format has comments (not DeepSpeed's JSON).
  std::vector<std::string> notes;
};

// ExportLayout with its notes; the same errors.
absl::StatusOr<LayoutExport> ExportLayoutWithNotes(const Workload& workload,
                                                   const Layout& layout,
                                                   ExportTarget target);

}  // namespace tessera::exporters
