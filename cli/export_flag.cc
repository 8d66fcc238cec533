#include "cli/export_flag.h"

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/status_macros.h"
#include "planner/export/layout_export.h"

namespace tessera::cli {

void ExportFlags::Register(FlagSet* flags) {
  flags->AddSection("Export");
  flags->AddString("export", "torchtitan|megatron|deepspeed|nemo",
                   "print the layout as that framework's configuration "
                   "(a torchtitan Python config, Megatron-LM arguments, a "
                   "DeepSpeed JSON, a NeMo / Megatron-Bridge recipe) instead "
                   "of the table",
                   &target);
  flags->AddString("out", "FILE",
                   "write the --export to FILE and print the usual output",
                   &out);
}

absl::Status ExportFlags::Validate() const {
  if (out.has_value() && !target.has_value()) {
    return absl::InvalidArgumentError(
        "--out: only with --export (the file is the export)");
  }
  if (target.has_value()) {
    TESSERA_RETURN_IF_ERROR(planner::ParseExportTarget(*target).status());
  }
  return absl::OkStatus();
}

absl::Status ExportFlags::Write(const Workload& workload, const Layout& layout,
                                std::ostream& stream) const {
  TESSERA_ASSIGN_OR_RETURN(const planner::ExportTarget t,
                           planner::ParseExportTarget(*target));
  TESSERA_ASSIGN_OR_RETURN(const std::string text,
                           planner::ExportLayout(workload, layout, t));
  if (!out.has_value()) {
    stream << text;
    return absl::OkStatus();
  }
  if (absl::Status s = WriteFileAtomically(*out, text); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("--out: ", s.message()));
  }
  stream << "wrote " << *out << " (" << planner::ExportTargetName(t) << ")\n";
  return absl::OkStatus();
}

}  // namespace tessera::cli
