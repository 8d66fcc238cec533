// The memory accounting of a Backend (backend.h): the bytes its allocations
// hold against a limit, and their high-water mark, with the errors every
// backend words alike. A backend reserves an allocation's bytes before it asks
// its allocator for them and releases them when it frees (or when the
// allocator refuses), so the limit holds at every moment, whichever thread
// allocates.
//
//   MemoryMeter meter("cpu backend", /*limit_bytes=*/int64_t{1} << 30);
//   const MemoryRequest request{"layers.0.mlp.gate_up", numel, DType::kF32};
//   TESSERA_ASSIGN_OR_RETURN(int64_t bytes,
//                            meter.BytesFor(request, /*slack_elements=*/64));
//   TESSERA_ASSIGN_OR_RETURN(int64_t in_use_before, meter.Reserve(request));
//   void* data = std::malloc(bytes);
//   if (data == nullptr) {
//     meter.Release(bytes);
//     return meter.OutOfMemory(request, "host", in_use_before, "");
//   }
//   ...
//   std::free(data);
//   meter.Release(bytes);
//
// Thread-safe: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "executor/tensor.h"

namespace tessera::executor {

// What one Allocate call asks for: `numel` elements of `dtype`, for `what`
// (a name for messages: "layers.0.mlp.gate_up").
struct MemoryRequest {
  absl::string_view what;
  int64_t numel = 0;
  DType dtype = DType::kF32;

  // numel x the dtype's size; meaningful once BytesFor accepted the request.
  int64_t bytes() const {
    return numel * static_cast<int64_t>(DTypeSize(dtype));
  }
};

class MemoryMeter {
 public:
  // `owner` starts every message ("cpu backend"); a limit <= 0 is none.
  MemoryMeter(absl::string_view owner, int64_t limit_bytes);
  MemoryMeter(const MemoryMeter&) = delete;
  MemoryMeter& operator=(const MemoryMeter&) = delete;

  // The request's byte count: INVALID_ARGUMENT for a negative numel, and
  // RESOURCE_EXHAUSTED when numel is within `slack_elements` of overflowing a
  // 64-bit byte count (the slack leaves the backend room to round up).
  // Counts nothing.
  absl::StatusOr<int64_t> BytesFor(const MemoryRequest& request,
                                   int64_t slack_elements) const;

  // Counts the request's bytes as in use and raises the peak to match, unless
  // that would take the bytes in use past the limit: then RESOURCE_EXHAUSTED
  // naming `what`, the sizes, the bytes in use before and after, and the
  // limit, and nothing changes. Returns the bytes in use before the request.
  absl::StatusOr<int64_t> Reserve(const MemoryRequest& request);
  // Gives back bytes that Reserve counted (memory freed, or an allocation the
  // allocator refused after all). The peak stays.
  void Release(int64_t bytes);

  // `code` with "<owner>: allocating <what>: <message>".
  absl::Status AllocationError(absl::StatusCode code, absl::string_view what,
                               absl::string_view message) const;
  // RESOURCE_EXHAUSTED "<owner>: allocating <what> (<numel> x <dtype> =
  // <bytes> bytes): the <memory> is out of memory (<in_use_bytes> bytes in use
  // by this backend[; <detail>])": the allocator, not the limit, said no.
  // `memory` is "host" or "device"; an empty `detail` is left out.
  absl::Status OutOfMemory(const MemoryRequest& request,
                           absl::string_view memory, int64_t in_use_bytes,
                           absl::string_view detail) const;

  // A limit <= 0 is none. A limit below the bytes in use fails the next
  // Reserve; what is held stays.
  void SetLimit(int64_t bytes);
  int64_t limit_bytes() const;
  int64_t in_use_bytes() const;
  // The most bytes in use at once since construction or ResetPeak.
  int64_t peak_bytes() const;
  // The peak becomes the bytes in use now.
  void ResetPeak();

 private:
  const std::string owner_;
  mutable absl::Mutex mu_;
  int64_t limit_bytes_ ABSL_GUARDED_BY(mu_);
  int64_t in_use_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::executor
