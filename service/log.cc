#include "service/log.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera::service {

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warning") return LogLevel::kWarning;
  if (text == "error") return LogLevel::kError;
  if (text == "off") return LogLevel::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "--log: '", text, "' is not one of debug, info, warning, error, off"));
}

void Log::Debug(absl::string_view message) const {
  Write(LogLevel::kDebug, message);
}
void Log::Info(absl::string_view message) const {
  Write(LogLevel::kInfo, message);
}
void Log::Warning(absl::string_view message) const {
  Write(LogLevel::kWarning, message);
}
void Log::Error(absl::string_view message) const {
  Write(LogLevel::kError, message);
}

void Log::Write(LogLevel level, absl::string_view message) const {
  if (!Enabled(level) || level == LogLevel::kOff) return;
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  const std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                    absl::UTCTimeZone()),
                   " ", kNames[static_cast<int>(level)], " ", message, "\n");
  // One write(2) per line: lines of different threads do not interleave.
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n =
        ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

}  // namespace tessera::service
