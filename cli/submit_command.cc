#include "cli/submit_command.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/calibration_command.h"
#include "cli/exit_codes.h"
#include "cli/operands.h"
#include "cli/planner_client.h"
#include "cli/watch_command.h"
#include "core/flags.h"
#include "proto/convert.h"
#include "proto/spec_json.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera submit";

constexpr char kAbout[] =
    "Usage: tessera submit STUDY.json [--wait] [--calibration FILE]\n"
    "                      [--planner HOST:PORT]\n"
    "\n"
    "Sends the study in STUDY.json (a StudySpec: model, cluster, training,\n"
    "search and trial options; see deploy/examples/study.json) to the\n"
    "planner, which ranks its layouts with the cost model and queues the\n"
    "best as trials for the agents. Prints the study's id alone on a line.\n"
    "With --wait, then follows the study as `tessera watch` does and ends\n"
    "with the recommendation. With --calibration, the study starts from\n"
    "that calibration file (from `tessera calibrate`): it is checked with\n"
    "the spec and imported for the study's GPU, as `tessera calibration\n"
    "import` does, so later studies on that GPU start from it too.\n"
    "\n"
    "Example:\n"
    "  ID=$(tessera submit deploy/examples/study.json)\n"
    "  tessera submit deploy/examples/study.json --wait\n";

// The file's own errors already start "spec: FILE: "; the planner's and the
// conversion's name the field only.
absl::Status InFile(absl::string_view path, const absl::Status& s) {
  if (absl::StartsWith(s.message(), "spec: ")) return s;
  return absl::Status(s.code(),
                      absl::StrCat("spec: ", path, ": ", s.message()));
}

}  // namespace

int RunSubmit(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  FlagSet flags(kCommand);
  bool wait = false;
  flags.AddSwitch("wait",
                  "follow the study until it ends and print the "
                  "recommendation",
                  &wait);
  std::optional<std::string> calibration_path;
  flags.AddString("calibration", "FILE",
                  "start from this calibration file (imported for the "
                  "study's GPU)",
                  &calibration_path);
  PlannerFlags planner;
  planner.Register(&flags, kPlannerFlagHelp);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  const Operands operands = SplitOperands(args, {"wait"});
  if (absl::Status s = flags.Parse(operands.flags); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s = planner.Validate(); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s = ExpectOperands(operands, {"STUDY.json"},
                                      "tessera submit STUDY.json [--wait]");
      !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  const std::string& path = operands.operands[0];
  absl::StatusOr<v1::StudySpec> spec = ReadStudySpecFile(path);
  if (!spec.ok()) return ReportError(err, kCommand, spec.status());
  std::optional<v1::ImportCalibrationRequest> calibration;
  if (calibration_path.has_value()) {
    absl::StatusOr<v1::ImportCalibrationRequest> c =
        ImportRequestOfFile(*calibration_path);
    if (!c.ok()) {
      return ReportError(
          err, kCommand,
          absl::Status(c.status().code(),
                       absl::StrCat("--calibration: ", c.status().message())));
    }
    calibration = *std::move(c);
  }
  // The file is well-formed; what it asks for is the planner's to judge (it
  // knows presets a local check does not, such as the "agents" GPU).
  PlannerClient client(planner.Address(), planner.Timeout(),
                       planner.Credentials());
  std::string agent_note;
  absl::StatusOr<int64_t> id = client.SubmitStudy(
      *spec, calibration.has_value() ? &*calibration : nullptr, &agent_note);
  if (!id.ok()) {
    absl::Status s = id.status();
    if (s.code() == absl::StatusCode::kInvalidArgument &&
        !absl::StartsWith(s.message(), "calibration: ")) {
      s = InFile(path, s);
    }
    return ReportError(err, kCommand, s);
  }
  out << *id << "\n" << std::flush;
  // The id stays alone on stdout (scripts read it); the note goes with the
  // errors.
  if (!agent_note.empty()) {
    err << "note: study " << *id << ": " << agent_note << "\n";
  }
  if (!wait) return kExitOk;
  return FollowStudy(client, *id, IsTerminal(out), absl::Seconds(60), kCommand,
                     out, err);
}

}  // namespace tessera::cli
