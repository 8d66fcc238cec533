// Device helpers shared by the kernels: element loads and stores that convert
// bf16 <-> float (round to nearest even), warp and block reductions, and the
// grid-stride index. Reductions sum in a fixed order, so results do not
// depend on timing.
//
// defines: bf16, ToFloat, FromFloat, GridIndex, GridStride, WarpSum, WarpMax,
//          BlockSum, BlockMax, NegInf
//
//   for (int64_t i = GridIndex(); i < n; i += GridStride())
//     out[i] = FromFloat<T>(ToFloat(a[i]) + ToFloat(b[i]));
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tessera::executor::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 FromFloat<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

// -inf as a float (no <limits> in device code).
__device__ __forceinline__ float NegInf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ int64_t GridIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024),
// returned to every thread. `shared` holds 32 floats; every thread of the
// block must call this, the same number of times.
__device__ __forceinline__ float BlockSum(float v, float* shared) {
  v = WarpSum(v);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  __syncthreads();  // readers of an earlier call are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = 0.0f;
  const int warps = static_cast<int>(blockDim.x >> 5);
  for (int w = 0; w < warps; ++w) total += shared[w];
  return total;
}

// Max of v over the block, as BlockSum.
__device__ __forceinline__ float BlockMax(float v, float* shared) {
  v = WarpMax(v);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = NegInf();
  const int warps = static_cast<int>(blockDim.x >> 5);
  for (int w = 0; w < warps; ++w) total = fmaxf(total, shared[w]);
  return total;
}

}  // namespace tessera::executor::cuda
