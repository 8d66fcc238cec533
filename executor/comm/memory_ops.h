// The memory primitives an in-process communicator needs: staging buffers,
// byte copies and multi-source reductions. The communicator never touches a
// buffer except through these, so the same rendezvous logic runs over host
// memory (HostMemoryOps, the default) or over device memory when a CUDA
// backend passes device-side ops (several ranks on one GPU).
//
// Every call completes before it returns: the rendezvous that follows orders
// it before the peers read the result.
//
//   HostMemoryOps& ops = HostMemoryOps::Get();
//   const void* srcs[] = {a.data, b.data};
//   TESSERA_RETURN_IF_ERROR(
//       ops.Reduce(srcs, out.data, out.numel, DType::kF32, ReduceOp::kSum));
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "executor/comm/communicator.h"
#include "executor/tensor.h"

namespace tessera::executor {

class MemoryOps {
 public:
  virtual ~MemoryOps() = default;

  // A staging buffer of `bytes` bytes (eager sends park their payload there).
  // Zero bytes may give nullptr. RESOURCE_EXHAUSTED when there is no room.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  // Releases a buffer from Allocate; nullptr is ignored.
  virtual void Free(void* buffer) = 0;

  // Copies `bytes` bytes from src to dst. dst == src is a no-op; the ranges
  // must not overlap otherwise.
  virtual absl::Status Copy(void* dst, const void* src, size_t bytes) = 0;

  // dst[i] = op(srcs[0][i], srcs[1][i], ...) for i < count, combining the
  // sources in the order given (so the result does not depend on timing).
  // kBF16 reduces in float and rounds once to bf16; kI32 sums wrap around
  // (two's complement). kMax propagates NaN. dst may be one of the sources
  // (the same address), never a partial overlap.
  virtual absl::Status Reduce(absl::Span<const void* const> srcs, void* dst,
                              int64_t count, DType dtype, ReduceOp op) = 0;
};

// MemoryOps over host memory.
class HostMemoryOps final : public MemoryOps {
 public:
  // The process-wide instance (stateless, thread-safe).
  static HostMemoryOps& Get();

  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* buffer) override;
  absl::Status Copy(void* dst, const void* src, size_t bytes) override;
  absl::Status Reduce(absl::Span<const void* const> srcs, void* dst,
                      int64_t count, DType dtype, ReduceOp op) override;
};

}  // namespace tessera::executor
