#include "cli/export_flag.h"

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "core/file_io.h"
#include "core/status_macros.h"

namespace tessera::cli {

void ExportFlags::Register(FlagSet* flags) {
  flags->AddSection("Export");
  flags->AddString("export", "torchtitan|megatron|deepspeed|nemo",
                   "print the layout as that framework's configuration "
                   "(a torchtitan Python config, Megatron-LM arguments, a "
                   "DeepSpeed JSON, a NeMo / Megatron-Bridge recipe) instead "
                   "of the table; notes on what the file does not do go to "
                   "standard error",
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
    TESSERA_RETURN_IF_ERROR(exporters::ParseExportTarget(*target).status());
  }
  return absl::OkStatus();
}

exporters::ExportTarget ExportFlags::Target() const {
  return exporters::ParseExportTarget(target.value_or(""))
      .value_or(exporters::ExportTarget::kMegatron);
}

std::string ExportFlags::TargetStack() const {
  return std::string(exporters::ExportTargetStack(Target()));
}

bool ExportFlags::OtherStack(const Workload& workload) const {
  return requested() && workload.training.stack != TargetStack();
}

absl::Status ExportFlags::CheckStack(const Workload& workload,
                                     absl::string_view whose,
                                     absl::string_view fix) const {
  if (!OtherStack(workload)) return absl::OkStatus();
  const absl::string_view name = exporters::ExportTargetName(Target());
  return absl::InvalidArgumentError(
      absl::StrCat("--export ", name, ": ", name, " runs the ", TargetStack(),
                   " stack, and ", whose, " was ranked for ",
                   workload.training.stack, ": ", fix));
}

absl::StatusOr<exporters::LayoutExport> ExportFlags::Export(
    const Workload& workload, const Layout& layout) const {
  absl::StatusOr<exporters::LayoutExport> e =
      exporters::ExportLayoutWithNotes(workload, layout, Target());
  if (!e.ok() && e.status().code() == absl::StatusCode::kFailedPrecondition) {
    // The layout is what the user asked for: bad input, not a failure.
    return absl::InvalidArgumentError(
        absl::StrCat("--export: ", e.status().message()));
  }
  return e;
}

absl::Status ExportFlags::Write(const exporters::LayoutExport& e,
                                std::ostream& stream, std::ostream& err) const {
  if (!out.has_value()) {
    stream << e.text;
  } else {
    if (absl::Status s = WriteFileAtomically(*out, e.text); !s.ok()) {
      return OutPathError(*out, s);
    }
    stream << "wrote " << *out << " (" << exporters::ExportTargetName(Target())
           << ")\n";
  }
  for (const std::string& note : e.notes) err << "note: " << note << "\n";
  return absl::OkStatus();
}

absl::Status ExportFlags::Write(const Workload& workload, const Layout& layout,
                                std::ostream& stream, std::ostream& err) const {
  TESSERA_ASSIGN_OR_RETURN(const exporters::LayoutExport e,
                           Export(workload, layout));
  return Write(e, stream, err);
}

}  // namespace tessera::cli
