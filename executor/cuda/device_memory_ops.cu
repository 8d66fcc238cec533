#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/device_memory_ops.h"
#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor {
namespace {

using cuda::bf16;

// The sources of one reduction, passed by value in the kernel's parameters.
struct Sources {
  const void* at[DeviceMemoryOps::kMaxSources];
  int count;
};

// As memory_ops.cc: NaN wins, so an overflow on any rank is seen by all.
__device__ __forceinline__ float MaxWithNan(float a, float b) {
  return (b > a || isnan(b)) && !isnan(a) ? b : a;
}

template <typename T>
struct Load;
template <>
struct Load<float> {
  __device__ static float At(const void* p, int64_t i) {
    return static_cast<const float*>(p)[i];
  }
};
template <>
struct Load<bf16> {
  __device__ static float At(const void* p, int64_t i) {
    return __bfloat162float(static_cast<const bf16*>(p)[i]);
  }
};

// dst[i] = op(srcs[0][i], srcs[1][i], ...), in source order, in float.
template <typename T, bool kMax>
__global__ void ReduceFloatKernel(Sources srcs, T* dst, int64_t count) {
  for (int64_t i = cuda::GridIndex(); i < count; i += cuda::GridStride()) {
    float acc = Load<T>::At(srcs.at[0], i);
    for (int k = 1; k < srcs.count; ++k) {
      const float x = Load<T>::At(srcs.at[k], i);
      acc = kMax ? MaxWithNan(acc, x) : acc + x;
    }
    dst[i] = cuda::FromFloat<T>(acc);
  }
}

// i32: sums wrap (unsigned arithmetic), max is max.
template <bool kMax>
__global__ void ReduceI32Kernel(Sources srcs, int32_t* dst, int64_t count) {
  for (int64_t i = cuda::GridIndex(); i < count; i += cuda::GridStride()) {
    int32_t first = static_cast<const int32_t*>(srcs.at[0])[i];
    uint32_t sum = static_cast<uint32_t>(first);
    int32_t mx = first;
    for (int k = 1; k < srcs.count; ++k) {
      const int32_t x = static_cast<const int32_t*>(srcs.at[k])[i];
      sum += static_cast<uint32_t>(x);
      mx = x > mx ? x : mx;
    }
    dst[i] = kMax ? mx : static_cast<int32_t>(sum);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceMemoryOps>> DeviceMemoryOps::Create(
    int device) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        cuda::CudaCallStatus(e, "cudaGetDeviceCount").message());
  }
  if (device < 0 || device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("device memory ops: device ", device, " does not exist (",
                     count, " visible)"));
  }
  return std::shared_ptr<DeviceMemoryOps>(new DeviceMemoryOps(device));
}

DeviceMemoryOps::~DeviceMemoryOps() {
  cudaSetDevice(device_);
  for (cudaStream_t s : all_streams_) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  cudaGetLastError();
}

absl::StatusOr<cudaStream_t> DeviceMemoryOps::AcquireStream() {
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_streams_.empty()) {
      cudaStream_t s = idle_streams_.back();
      idle_streams_.pop_back();
      return s;
    }
  }
  cudaStream_t s = nullptr;
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::lock_guard<std::mutex> lock(mu_);
  all_streams_.push_back(s);
  return s;
}

void DeviceMemoryOps::ReleaseStream(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_streams_.push_back(stream);
}

absl::StatusOr<void*> DeviceMemoryOps::Allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  TESSERA_ASSIGN_OR_RETURN(cudaStream_t stream, AcquireStream());
  void* buffer = nullptr;
  cudaError_t e = cudaMallocAsync(&buffer, bytes, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  ReleaseStream(stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    const absl::Status s = cuda::CudaCallStatus(e, "cudaMallocAsync");
    return absl::Status(s.code(), absl::StrCat("device staging buffer of ",
                                               bytes, " bytes: ", s.message()));
  }
  return buffer;
}

void DeviceMemoryOps::Free(void* buffer) {
  if (buffer == nullptr) return;
  absl::StatusOr<cudaStream_t> stream = AcquireStream();
  if (!stream.ok()) {
    cuda::Die("DeviceMemoryOps::Free", stream.status().message());
  }
  TESSERA_CUDA_CHECK(cudaFreeAsync(buffer, *stream));
  ReleaseStream(*stream);
}

absl::Status DeviceMemoryOps::Copy(void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(cudaStream_t stream, AcquireStream());
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  ReleaseStream(stream);
  if (e == cudaSuccess) e = synced;
  return cuda::CudaCallStatus(e, "device memory ops: cudaMemcpyAsync");
}

absl::Status DeviceMemoryOps::Reduce(absl::Span<const void* const> srcs,
                                     void* dst, int64_t count, DType dtype,
                                     ReduceOp op) {
  if (srcs.empty()) {
    return absl::InvalidArgumentError("reduce: no source buffers");
  }
  if (srcs.size() > static_cast<size_t>(kMaxSources)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduce: ", srcs.size(), " sources, at most ", kMaxSources,
                     " on one device"));
  }
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("reduce: count ", count));
  }
  if (count == 0) return absl::OkStatus();
  Sources sources{};
  sources.count = static_cast<int>(srcs.size());
  for (size_t k = 0; k < srcs.size(); ++k) sources.at[k] = srcs[k];
  TESSERA_ASSIGN_OR_RETURN(cudaStream_t stream, AcquireStream());
  const cuda::Launch l = cuda::ElementwiseLaunch(count);
  const bool max = op == ReduceOp::kMax;
  switch (dtype) {
    case DType::kF32:
      if (max) {
        ReduceFloatKernel<float, true><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<float*>(dst), count);
      } else {
        ReduceFloatKernel<float, false><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<float*>(dst), count);
      }
      break;
    case DType::kBF16:
      if (max) {
        ReduceFloatKernel<bf16, true><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<bf16*>(dst), count);
      } else {
        ReduceFloatKernel<bf16, false><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<bf16*>(dst), count);
      }
      break;
    case DType::kI32:
      if (max) {
        ReduceI32Kernel<true><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<int32_t*>(dst), count);
      } else {
        ReduceI32Kernel<false><<<l.blocks, l.threads, 0, stream>>>(
            sources, static_cast<int32_t*>(dst), count);
      }
      break;
  }
  cudaError_t e = cudaGetLastError();
  const cudaError_t synced = cudaStreamSynchronize(stream);
  ReleaseStream(stream);
  if (e == cudaSuccess) e = synced;
  return cuda::CudaCallStatus(e, "device memory ops: reduce kernel");
}

}  // namespace tessera::executor
