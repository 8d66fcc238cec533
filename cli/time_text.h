// Times as the service commands read and print them. Filters (--since,
// --until) take an RFC 3339 time, a date (midnight UTC), or a span back from
// now; the planner's times (Unix milliseconds) print as RFC 3339 in UTC.
//
//   absl::Time now = absl::Now();
//   ParseTimeBound("2024-05-01T12:00:00Z", now);  // that instant
//   ParseTimeBound("2024-05-01", now);            // 2024-05-01T00:00:00Z
//   ParseTimeBound("7d", now);                    // now - 7 days
//   FormatUnixMs(1714564800000);                  // "2024-05-01T12:00:00Z"
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tessera::cli {

// `text` as an instant: RFC 3339 ("2024-05-01T12:00:00Z",
// "2024-05-01T14:00:00.5+02:00"), a date "2024-05-01" (midnight UTC), or a
// span before `now`: a number and a unit, s (seconds), m (minutes), h
// (hours), d (days) or w (weeks): "90s", "30m", "2h", "1.5d", "2w".
// INVALID_ARGUMENT otherwise (the caller adds the flag).
absl::StatusOr<absl::Time> ParseTimeBound(absl::string_view text,
                                          absl::Time now);

// Milliseconds since the Unix epoch, as for the planner's *_unix_ms fields.
int64_t ToUnixMs(absl::Time time);

// "2024-05-01T12:00:00Z" (UTC, whole seconds); "" for 0 (not set).
std::string FormatUnixMs(int64_t unix_ms);

}  // namespace tessera::cli
