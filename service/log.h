// The planner service's log: one line per event on stderr, with the UTC time
// and the level, at or above a threshold chosen by --log.
//
//   Log log(LogLevel::kInfo);
//   log.Info(absl::StrCat("study ", id, " submitted"));
//   // 2024-05-01T12:00:00.123Z INFO study 3 submitted
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::service {

enum class LogLevel { kDebug, kInfo, kWarning, kError, kOff };

// "debug", "info", "warning", "error" or "off"; errors name "--log".
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text);

// Writes whole lines to stderr (one write each, so that threads do not
// interleave within a line). Thread-safe; cheap when below the threshold.
class Log {
 public:
  explicit Log(LogLevel threshold = LogLevel::kInfo) : threshold_(threshold) {}

  void Debug(absl::string_view message) const;
  void Info(absl::string_view message) const;
  void Warning(absl::string_view message) const;
  void Error(absl::string_view message) const;

  bool Enabled(LogLevel level) const { return level >= threshold_; }

 private:
  void Write(LogLevel level, absl::string_view message) const;

  LogLevel threshold_;
};

}  // namespace tessera::service
