#include "cli/watch_command.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/recommendation_output.h"
#include "cli/service_names.h"
#include "cli/study_progress.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera watch";
constexpr double kDefaultReconnectS = 60;

constexpr char kAbout[] =
    "Usage: tessera watch ID [--planner HOST:PORT]\n"
    "\n"
    "Follows study ID until it ends: trials done of total, trials running,\n"
    "the successive-halving rung, and the best layout and tokens/s measured\n"
    "so far, redrawn in place on a terminal or one line per event when the\n"
    "output is a file or a pipe. Then prints the recommendation: the best\n"
    "throughput and best energy layouts, each number MEASURED or\n"
    "PREDICTED, the full run's days, MWh and GPU-hours, why, how well the\n"
    "calibration fits the trials, and where the history is kept.\n"
    "\n"
    "Example:\n"
    "  tessera watch 7\n";

// Draws one event: on a terminal, its message as a line and the progress
// line redrawn under it; otherwise one line per event.
class ProgressPrinter {
 public:
  ProgressPrinter(bool redraw, std::ostream& out)
      : redraw_(redraw), out_(out) {}

  void Event(const v1::StudyEvent& event, const StudyProgress& progress) {
    if (!redraw_) {
      out_ << EventLine(event, progress) << "\n" << std::flush;
      return;
    }
    out_ << "\r\x1b[K";
    if (!event.message().empty()) out_ << event.message() << "\n";
    out_ << ProgressLine(progress) << "\x1b[K" << std::flush;
    drawn_ = true;
  }

  // Ends the redrawn line, if one is drawn.
  void Finish() {
    if (drawn_) out_ << "\n";
    drawn_ = false;
  }

 private:
  bool redraw_;
  std::ostream& out_;
  bool drawn_ = false;
};

}  // namespace

bool IsTerminal(const std::ostream& out) {
  return &out == &std::cout && isatty(STDOUT_FILENO) == 1;
}

int FollowStudy(PlannerClient& client, int64_t study_id, bool redraw,
                absl::Duration reconnect_for, absl::string_view command,
                std::ostream& out, std::ostream& err) {
  absl::StatusOr<v1::GetStudyResponse> start = client.GetStudy(study_id);
  if (!start.ok()) return ReportError(err, command, start.status());
  StudyProgress progress;
  progress.study = start->study();
  ProgressPrinter printer(redraw, out);
  std::optional<absl::Time> give_up;  // set while reconnecting
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    int64_t received = 0;
    const absl::Status s = client.WatchStudy(
        study_id,
        [&](const v1::StudyEvent& event) {
          progress.Update(event);
          printer.Event(event, progress);
        },
        &received);
    if (s.ok() && IsFinal(progress.study.state())) break;
    if (received > 0) {
      give_up.reset();
      backoff = absl::Milliseconds(200);
    }
    // A stream that never delivered an event and failed is an answer, not a
    // lost connection.
    const bool broken = !s.ok() && s.code() == absl::StatusCode::kUnavailable;
    if (!s.ok() && (!broken || progress.events == 0)) {
      printer.Finish();
      return ReportError(err, command, s);
    }
    if (!give_up.has_value()) {
      give_up = absl::Now() + reconnect_for;
      printer.Finish();
      err << command << ": lost the stream of study " << study_id << " ("
          << (s.ok() ? "it ended before the study did" : s.message())
          << "); reconnecting for up to " << absl::FormatDuration(reconnect_for)
          << "\n"
          << std::flush;
    }
    if (absl::Now() >= *give_up) {
      printer.Finish();
      return ReportError(err, command,
                         s.ok() ? absl::UnavailableError(absl::StrCat(
                                      "the planner at ", client.address(),
                                      " ended the watch of study ", study_id,
                                      " before the study did"))
                                : s);
    }
    absl::SleepFor(backoff);
    backoff = std::min(2 * backoff, absl::Seconds(5));
  }
  printer.Finish();
  const v1::StudySummary& study = progress.study;
  out << "study " << study_id << " " << StudyStateName(study.state());
  if (!study.state_reason().empty()) out << ": " << study.state_reason();
  out << "\n";
  absl::StatusOr<v1::Recommendation> recommendation =
      client.GetRecommendation(study_id);
  if (recommendation.ok()) {
    PrintRecommendation(*recommendation, out);
  } else if (study.state() == v1::STUDY_DONE) {
    return ReportError(err, command, recommendation.status());
  }
  return study.state() == v1::STUDY_DONE ? kExitOk : kExitStudyNotDone;
}

int RunWatch(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err) {
  FlagSet flags(kCommand);
  PlannerFlags planner;
  planner.Register(&flags, kPlannerFlagHelp);
  std::optional<double> reconnect_s;
  flags.AddDouble("reconnect", "SECONDS",
                  "how long to keep trying when the planner goes away "
                  "mid-study (default 60)",
                  &reconnect_s);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  absl::StatusOr<int64_t> id =
      ParseStudyArgs(args, {}, "tessera watch ID", flags, planner);
  if (!id.ok()) return ReportError(err, kCommand, id.status());
  if (reconnect_s.has_value() && *reconnect_s < 0) {
    return ReportError(
        err, kCommand,
        absl::InvalidArgumentError(absl::StrCat(
            "--reconnect: must not be negative, got ", *reconnect_s)));
  }
  PlannerClient client(planner.Address(), planner.Timeout(),
                       planner.Credentials());
  return FollowStudy(client, *id, IsTerminal(out),
                     absl::Seconds(reconnect_s.value_or(kDefaultReconnectS)),
                     kCommand, out, err);
}

}  // namespace tessera::cli
