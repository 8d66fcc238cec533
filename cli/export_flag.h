// `--export torchtitan|megatron|deepspeed|nemo` and `--out FILE` of
// `tessera plan` (its best candidate), `tessera predict` (its layout) and
// `tessera best` (the study's recommendation): the layout as the framework's
// own configuration (export/layout_export.h), to paste into the real
// run. Without --out the export is all that is printed on standard output
// (so that it can be piped); with it the usual output is printed and the
// file written. What the file alone does not do (environment variables,
// warnings the framework raises, what is left to the person) goes to
// standard error as "note: ..." lines either way.
//
// A target runs one training stack (megatron and nemo: megatron-core). A
// layout ranked for another stack is never exported as if it were the
// target's: `plan` ranks again for the target's stack and says so;
// `predict` and `best` refuse, naming the flag that fixes it.
//
//   ExportFlags exports;
//   exports.Register(&flags);
//   ... parse ...
//   TESSERA_RETURN_IF_ERROR(exports.Validate());
//   TESSERA_RETURN_IF_ERROR(exports.CheckStack(workload, "this prediction",
//                                              "add --stack megatron-core"));
//   if (exports.requested()) return exports.Write(workload, layout, out, err);
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/flags.h"
#include "core/layout.h"
#include "core/workload.h"
#include "export/layout_export.h"

namespace tessera::cli {

struct ExportFlags {
  std::optional<std::string> target;  // --export
  std::optional<std::string> out;     // --out

  void Register(FlagSet* flags);
  // INVALID_ARGUMENT for an unknown target ("--export: ...", with the near
  // names) or --out without --export.
  absl::Status Validate() const;
  bool requested() const { return target.has_value(); }
  // Whether the usual output is printed too (the export goes to a file).
  bool to_file() const { return out.has_value(); }
  // The target (requested() and Validate() ok).
  exporters::ExportTarget Target() const;
  // The stack whose layouts the target runs ("megatron-core" for megatron).
  std::string TargetStack() const;
  // Whether `workload`'s stack is not the one the target runs.
  bool OtherStack(const Workload& workload) const;
  // OK when nothing is exported or `workload`'s stack is the target's; else
  // INVALID_ARGUMENT "--export megatron: megatron runs the megatron-core
  // stack, and <whose> layout was ranked for pytorch-fsdp: <fix>".
  absl::Status CheckStack(const Workload& workload, absl::string_view whose,
                          absl::string_view fix) const;
  // The export of `layout` (resolved or not) for `workload`, or why the
  // target refuses it: INVALID_ARGUMENT naming the field and the target (a
  // layout the target's stack cannot run or its configuration cannot say).
  absl::StatusOr<exporters::LayoutExport> Export(const Workload& workload,
                                               const Layout& layout) const;
  // Writes `e` to --out (atomically; "wrote FILE (torchtitan)" on `out`) or
  // to `out`, and its notes to `err` ("note: ...").
  absl::Status Write(const exporters::LayoutExport& e, std::ostream& out,
                     std::ostream& err) const;
  // Export, then Write.
  absl::Status Write(const Workload& workload, const Layout& layout,
                     std::ostream& out, std::ostream& err) const;
};

}  // namespace tessera::cli
