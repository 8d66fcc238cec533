#include "executor/memory_meter.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::executor {

MemoryMeter::MemoryMeter(absl::string_view owner, int64_t limit_bytes)
    : owner_(owner), limit_bytes_(std::max<int64_t>(0, limit_bytes)) {}

absl::StatusOr<int64_t> MemoryMeter::BytesFor(const MemoryRequest& request,
                                              int64_t slack_elements) const {
  if (request.numel < 0) {
    return AllocationError(
        absl::StatusCode::kInvalidArgument, request.what,
        absl::StrCat("numel = ", request.numel, " is negative"));
  }
  const int64_t elem = static_cast<int64_t>(DTypeSize(request.dtype));
  if (request.numel >
      std::numeric_limits<int64_t>::max() / elem - slack_elements) {
    return AllocationError(
        absl::StatusCode::kResourceExhausted, request.what,
        absl::StrCat(request.numel, " x ", DTypeName(request.dtype),
                     " overflows a 64-bit byte count"));
  }
  return request.numel * elem;
}

absl::StatusOr<int64_t> MemoryMeter::Reserve(const MemoryRequest& request) {
  const int64_t bytes = request.bytes();
  absl::MutexLock lock(&mu_);
  if (limit_bytes_ > 0 && in_use_bytes_ + bytes > limit_bytes_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: allocating %s (%d x %s = %d bytes) would take the bytes in use "
        "from %d to %d, past the memory limit of %d bytes",
        owner_, request.what, request.numel, DTypeName(request.dtype), bytes,
        in_use_bytes_, in_use_bytes_ + bytes, limit_bytes_));
  }
  const int64_t in_use_before = in_use_bytes_;
  in_use_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, in_use_bytes_);
  return in_use_before;
}

void MemoryMeter::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  in_use_bytes_ -= bytes;
}

absl::Status MemoryMeter::AllocationError(absl::StatusCode code,
                                          absl::string_view what,
                                          absl::string_view message) const {
  return absl::Status(
      code, absl::StrCat(owner_, ": allocating ", what, ": ", message));
}

absl::Status MemoryMeter::OutOfMemory(const MemoryRequest& request,
                                      absl::string_view memory,
                                      int64_t in_use_bytes,
                                      absl::string_view detail) const {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s: allocating %s (%d x %s = %d bytes): the %s is out of memory (%d "
      "bytes in use by this backend%s%s)",
      owner_, request.what, request.numel, DTypeName(request.dtype),
      request.bytes(), memory, in_use_bytes, detail.empty() ? "" : "; ",
      detail));
}

void MemoryMeter::SetLimit(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  limit_bytes_ = std::max<int64_t>(0, bytes);
}

int64_t MemoryMeter::limit_bytes() const {
  absl::MutexLock lock(&mu_);
  return limit_bytes_;
}

int64_t MemoryMeter::in_use_bytes() const {
  absl::MutexLock lock(&mu_);
  return in_use_bytes_;
}

int64_t MemoryMeter::peak_bytes() const {
  absl::MutexLock lock(&mu_);
  return peak_bytes_;
}

void MemoryMeter::ResetPeak() {
  absl::MutexLock lock(&mu_);
  peak_bytes_ = in_use_bytes_;
}

}  // namespace tessera::executor
