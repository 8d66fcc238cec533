#include "cli/time_text.h"

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera::cli {
namespace {

// The length of one unit of a relative span, or zero for an unknown unit.
absl::Duration Unit(char unit) {
  switch (unit) {
    case 's':
      return absl::Seconds(1);
    case 'm':
      return absl::Minutes(1);
    case 'h':
      return absl::Hours(1);
    case 'd':
      return absl::Hours(24);
    case 'w':
      return absl::Hours(24 * 7);
    default:
      return absl::ZeroDuration();
  }
}

absl::Status Malformed(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text,
      "' is not a time (RFC 3339 like 2024-05-01T12:00:00Z, a date like "
      "2024-05-01, or a span back from now like 30m, 2h, 7d, 2w)"));
}

// `text` read as one of the three forms, before any range check.
absl::StatusOr<absl::Time> ParseAnyForm(absl::string_view text,
                                        absl::Time now) {
  if (text.empty()) return Malformed(text);
  absl::Time time;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, text, &time, &error)) return time;
  if (absl::ParseTime("%Y-%m-%d", text, absl::UTCTimeZone(), &time, &error)) {
    return time;
  }
  const absl::Duration unit = Unit(text.back());
  double count = 0;
  if (unit == absl::ZeroDuration() ||
      text.find_first_not_of("0123456789.") != text.size() - 1 ||
      !absl::SimpleAtod(text.substr(0, text.size() - 1), &count) ||
      !std::isfinite(count)) {
    return Malformed(text);
  }
  return now - count * unit;
}

}  // namespace

absl::StatusOr<absl::Time> ParseTimeBound(absl::string_view text,
                                          absl::Time now) {
  absl::StatusOr<absl::Time> time = ParseAnyForm(text, now);
  if (time.ok() && *time < absl::UnixEpoch()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is before 1970-01-01T00:00:00Z"));
  }
  return time;
}

int64_t ToUnixMs(absl::Time time) { return absl::ToUnixMillis(time); }

std::string FormatUnixMs(int64_t unix_ms) {
  if (unix_ms == 0) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

}  // namespace tessera::cli
