// MemoryOps over the memory of one GPU, so that the in-process communicator
// runs ranks as threads on a single device (the multi-rank check on one GPU):
// staging buffers come from the device's pool, copies are cudaMemcpyAsync
// (cudaMemcpyDefault, so host buffers work too), reductions are a kernel
// that combines the sources in the order given, exactly as HostMemoryOps
// does (f32 sums in order; bf16 reduced in float and rounded once; i32 sums
// wrap; max propagates NaN), so results match the host's bit for bit.
//
// Every call finishes on the device before it returns (MemoryOps' contract):
// each call takes a stream of its own from a small pool, so rank threads
// that copy or reduce at the same time do not wait for each other.
//
//   TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceMemoryOps> ops,
//                            DeviceMemoryOps::Create(/*device=*/0));
//   InProcessOptions options;
//   options.memory_ops = ops;
//   RunRanks(4, fn, options);  // each rank's backend on device 0
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "executor/comm/memory_ops.h"

namespace tessera::executor {

class DeviceMemoryOps final : public MemoryOps {
 public:
  // The most sources one Reduce combines (ranks of one group).
  static constexpr int kMaxSources = 64;

  // FAILED_PRECONDITION when the device does not exist.
  static absl::StatusOr<std::shared_ptr<DeviceMemoryOps>> Create(int device);
  ~DeviceMemoryOps() override;
  DeviceMemoryOps(const DeviceMemoryOps&) = delete;
  DeviceMemoryOps& operator=(const DeviceMemoryOps&) = delete;

  // Device memory; RESOURCE_EXHAUSTED when the device has no room.
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* buffer) override;
  absl::Status Copy(void* dst, const void* src, size_t bytes) override;
  // INVALID_ARGUMENT for more than kMaxSources sources.
  absl::Status Reduce(absl::Span<const void* const> srcs, void* dst,
                      int64_t count, DType dtype, ReduceOp op) override;

 private:
  explicit DeviceMemoryOps(int device) : device_(device) {}
  absl::StatusOr<cudaStream_t> AcquireStream();
  void ReleaseStream(cudaStream_t stream);

  const int device_;
  std::mutex mu_;
  std::vector<cudaStream_t> idle_streams_;  // guarded by mu_
  std::vector<cudaStream_t> all_streams_;   // guarded by mu_
};

}  // namespace tessera::executor
