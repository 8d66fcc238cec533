#include "cli/calibration_command.h"

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/operands.h"
#include "cli/planner_client.h"
#include "core/file_io.h"
#include "core/flags.h"
#include "core/status_macros.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera calibration";

constexpr char kAbout[] =
    "Usage: tessera calibration import FILE [--planner HOST:PORT]\n"
    "       tessera calibration export --gpu NAME [--out FILE]\n"
    "                                  [--planner HOST:PORT]\n"
    "\n"
    "import: sends a calibration file (from `tessera calibrate`) to the\n"
    "planner, which keeps it for the GPU it names: every later study, plan\n"
    "and prediction on that GPU starts from it (its stack's coefficients\n"
    "for a study of that stack, its hardware coefficients and measured\n"
    "collectives for any other), and trials on that GPU refine it. The file\n"
    "is checked first; a bad one is refused whole, naming the field.\n"
    "\n"
    "export: writes what the planner plans with on that GPU as a calibration\n"
    "file (to --out, else stdout): the latest import, or the latest fit of\n"
    "trials when it is newer (with the import's measured collectives).\n"
    "\n"
    "Examples:\n"
    "  tessera calibrate --measurements runs.jsonl --collectives ag.txt \\\n"
    "      --out cluster.json && tessera calibration import cluster.json\n"
    "  tessera calibration export --gpu h100-sxm --out h100.json\n"
    "  tessera plan ... --calibration h100.json\n";

// Parses `args` into `flags` (which holds `planner`'s), checks `planner`,
// and returns the operands, exactly `names` of them.
absl::StatusOr<Operands> ParseArgs(const std::vector<std::string>& args,
                                   const std::vector<std::string>& names,
                                   absl::string_view usage, FlagSet& flags,
                                   PlannerFlags& planner) {
  Operands operands = SplitOperands(args, {});
  TESSERA_RETURN_IF_ERROR(flags.Parse(operands.flags));
  TESSERA_RETURN_IF_ERROR(planner.Validate());
  TESSERA_RETURN_IF_ERROR(ExpectOperands(operands, names, usage));
  return operands;
}

int Import(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err) {
  FlagSet flags(kCommand);
  PlannerFlags planner;
  planner.Register(&flags, kPlannerFlagHelp);
  absl::StatusOr<Operands> operands = ParseArgs(
      args, {"FILE"}, "tessera calibration import FILE", flags, planner);
  if (!operands.ok()) return ReportError(err, kCommand, operands.status());
  absl::StatusOr<v1::ImportCalibrationRequest> request =
      ImportRequestOfFile(operands->operands[0]);
  if (!request.ok()) return ReportError(err, kCommand, request.status());
  PlannerClient client(planner.Address(), planner.Timeout(),
                       planner.Credentials());
  absl::StatusOr<v1::ImportCalibrationResponse> r =
      client.ImportCalibration(*request);
  if (!r.ok()) return ReportError(err, kCommand, r.status());
  out << "imported " << request->source() << " as calibration "
      << r->import_id() << " for " << r->gpu() << ": " << r->stack()
      << " stack, " << r->samples() << " measured runs, " << r->collectives()
      << " measured collective points\n";
  return kExitOk;
}

int Export(const std::vector<std::string>& args, std::ostream& out,
           std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<std::string> gpu;
  std::optional<std::string> out_path;
  flags.AddString("gpu", "NAME", "the GPU preset (h100-sxm, a100-sxm-80g, ...)",
                  &gpu);
  flags.AddString("out", "FILE", "write the file here (default: stdout)",
                  &out_path);
  PlannerFlags planner;
  planner.Register(&flags, kPlannerFlagHelp);
  absl::StatusOr<Operands> operands = ParseArgs(
      args, {}, "tessera calibration export --gpu NAME", flags, planner);
  if (!operands.ok()) return ReportError(err, kCommand, operands.status());
  if (!gpu.has_value() || gpu->empty()) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError("--gpu: required"));
  }
  PlannerClient client(planner.Address(), planner.Timeout(),
                       planner.Credentials());
  v1::ExportCalibrationRequest request;
  request.set_gpu(*gpu);
  absl::StatusOr<v1::ExportCalibrationResponse> r =
      client.ExportCalibration(request);
  if (!r.ok()) return ReportError(err, kCommand, r.status());
  std::string text = r->calibration_json();
  if (text.empty() || text.back() != '\n') text += "\n";
  if (!out_path.has_value()) {
    out << text;
    return kExitOk;
  }
  if (absl::Status s = WriteFileAtomically(*out_path, text); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  out << "wrote " << *out_path << ": " << r->origin() << "\n";
  return kExitOk;
}

}  // namespace

absl::StatusOr<v1::ImportCalibrationRequest> ImportRequestOfFile(
    const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  v1::ImportCalibrationRequest request;
  request.set_calibration_json(*std::move(text));
  request.set_source(path);
  return request;
}

int RunCalibration(const std::vector<std::string>& args, std::ostream& out,
                   std::ostream& err) {
  FlagSet help_flags(kCommand);
  PlannerFlags planner;
  planner.Register(&help_flags, kPlannerFlagHelp);
  if (args.empty() || FlagSet::WantsHelp(args)) {
    if (args.empty()) {
      err << kAbout;
      return kExitBadInput;
    }
    out << kAbout << help_flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "import") return Import(rest, out, err);
  if (args[0] == "export") return Export(rest, out, err);
  return ReportError(
      err, kCommand,
      absl::InvalidArgumentError(absl::StrCat(
          "'", args[0], "' is not a subcommand (import or export)")));
}

}  // namespace tessera::cli
