#include "service/outage_watch.h"

#include "absl/strings/str_cat.h"

namespace tessera::service {

bool StoreCannotWrite(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

void OutageWatch::StoreFailed(absl::Time now, const absl::Status& status) {
  if (!StoreCannotWrite(status)) return;
  absl::MutexLock lock(&mu_);
  if (open_.has_value()) return;  // the first failure says when it began
  open_ = absl::StrCat("the store refused writes from ",
                       absl::FormatTime("%H:%M:%E3S", now, absl::UTCTimeZone()),
                       " UTC (", status.message(), ")");
}

void OutageWatch::Stalled(absl::Time, absl::Duration gap) {
  absl::MutexLock lock(&mu_);
  const std::string stall =
      absl::StrCat("the planner did not run for ",
                   absl::FormatDuration(absl::Trunc(gap, absl::Milliseconds(100))));
  open_ = open_.has_value() ? absl::StrCat(*open_, "; ", stall) : stall;
}

std::optional<std::string> OutageWatch::Open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

void OutageWatch::Over(const std::string& seen) {
  absl::MutexLock lock(&mu_);
  if (open_ == seen) open_.reset();
}

}  // namespace tessera::service
