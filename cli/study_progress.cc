#include "cli/study_progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/service_names.h"
#include "cli/time_text.h"

namespace tessera::cli {

void StudyProgress::Update(const v1::StudyEvent& event) {
  ++events;
  if (event.has_study()) study = event.study();
  if (event.has_trial()) rung = std::max(rung, event.trial().rung());
}

std::string ProgressBar(int64_t done, int64_t total, int width) {
  int filled = 0;
  if (total > 0) {
    const int64_t clamped = std::clamp<int64_t>(done, 0, total);
    filled = static_cast<int>(clamped * width / total);
  }
  return absl::StrCat("[", std::string(filled, '#'),
                      std::string(width - filled, '-'), "]");
}

std::string ProgressLine(const StudyProgress& p) {
  const v1::StudySummary& s = p.study;
  std::string line =
      absl::StrFormat("study %d %s %s %d/%d trials, %d running", s.id(),
                      StudyStateName(s.state()),
                      ProgressBar(s.trials_done(), s.trials_total(), 20),
                      s.trials_done(), s.trials_total(), s.trials_running());
  if (p.rung >= 0) absl::StrAppend(&line, ", rung ", p.rung);
  if (s.has_best_layout() && s.best_tokens_per_s() > 0) {
    absl::StrAppend(
        &line, absl::StrFormat("; best %.0f tokens/s %s", s.best_tokens_per_s(),
                               CompactLayout(s.best_layout())));
  } else {
    absl::StrAppend(&line, "; no trial measured yet");
  }
  return line;
}

std::string EventLine(const v1::StudyEvent& event,
                      const StudyProgress& progress) {
  std::string line = FormatUnixMs(event.unix_ms());
  if (!line.empty()) line += " ";
  if (!event.message().empty()) absl::StrAppend(&line, event.message(), " | ");
  absl::StrAppend(&line, ProgressLine(progress));
  return line;
}

}  // namespace tessera::cli
