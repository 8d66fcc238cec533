// `--export torchtitan|megatron|deepspeed|nemo` and `--out FILE` of
// `tessera plan` (its best candidate) and `tessera predict` (its layout): the
// layout as the framework's own configuration (planner/export/
// layout_export.h), to paste into the real run. Without --out the export is
// all that is printed (so that it can be piped); with it the usual output is
// printed and the file written.
//
//   ExportFlags exports;
//   exports.Register(&flags);
//   ... parse ...
//   TESSERA_RETURN_IF_ERROR(exports.Validate());
//   if (exports.requested()) return exports.Write(workload, layout, out);
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "core/flags.h"
#include "core/layout.h"
#include "core/workload.h"

namespace tessera::cli {

struct ExportFlags {
  std::optional<std::string> target;  // --export
  std::optional<std::string> out;     // --out

  void Register(FlagSet* flags);
  // INVALID_ARGUMENT for an unknown target ("--export: ...") or --out
  // without --export.
  absl::Status Validate() const;
  bool requested() const { return target.has_value(); }
  // Whether the usual output is printed too (the export goes to a file).
  bool to_file() const { return out.has_value(); }
  // Writes the export of `layout` (resolved) for `workload` to --out
  // (atomically; "wrote FILE (torchtitan)" on `out`) or to `out`. The
  // exporter's error (a layout the target cannot run) as it is.
  absl::Status Write(const Workload& workload, const Layout& layout,
                     std::ostream& out) const;
};

}  // namespace tessera::cli
