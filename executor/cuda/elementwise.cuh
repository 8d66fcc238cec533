// Elementwise kernels of the CUDA backend and their launchers: dtype casts
// (f32 <-> bf16), fill, the residual add, scaling, and the first pass of the
// sum of squares. Casts and adds move 8 elements per thread per step when
// every pointer is aligned to a whole pack (16-byte bf16 loads), else one.
// Arithmetic is in float; bf16 results round once, to nearest even.
//
// defines: Vec, PackAligned, CastKernel, LaunchCast, FillKernel, LaunchFill,
//          AddKernel, LaunchAdd, ScaleKernel, LaunchScale,
//          SumSquaresKernel, LaunchSumSquares
//
//   LaunchAdd<bf16>(x, o, x_mid, n, stream);  // x_mid = x + o
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

// N elements loaded or stored at once.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// True when every pointer is aligned to a pack of 8 elements of its type.
template <typename... Ts>
inline bool PackAligned(const Ts*... pointers) {
  return ((reinterpret_cast<uintptr_t>(pointers) % (8 * sizeof(Ts)) == 0) &&
          ...);
}

// dst[i] = Dst(src[i]).
template <typename Src, typename Dst>
__global__ void CastKernel(const Src* __restrict__ src, Dst* __restrict__ dst,
                           int64_t n, bool packed) {
  int64_t begin = 0;
  if (packed) {
    const int64_t packs = n / 8;
    const auto* in = reinterpret_cast<const Vec<Src, 8>*>(src);
    auto* out = reinterpret_cast<Vec<Dst, 8>*>(dst);
    for (int64_t p = GridIndex(); p < packs; p += GridStride()) {
      const Vec<Src, 8> a = in[p];
      Vec<Dst, 8> r;
#pragma unroll
      for (int j = 0; j < 8; ++j) r.v[j] = FromFloat<Dst>(ToFloat(a.v[j]));
      out[p] = r;
    }
    begin = packs * 8;
  }
  for (int64_t i = begin + GridIndex(); i < n; i += GridStride()) {
    dst[i] = FromFloat<Dst>(ToFloat(src[i]));
  }
}

template <typename Src, typename Dst>
cudaError_t LaunchCast(const Src* src, Dst* dst, int64_t n,
                       cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const bool packed = PackAligned(src, dst);
  const Launch l = ElementwiseLaunch(packed ? (n + 7) / 8 : n);
  CastKernel<Src, Dst><<<l.blocks, l.threads, 0, stream>>>(src, dst, n, packed);
  return cudaGetLastError();
}

// dst[i] = value.
template <typename T>
__global__ void FillKernel(T* dst, int64_t n, float value) {
  const T v = FromFloat<T>(value);
  for (int64_t i = GridIndex(); i < n; i += GridStride()) dst[i] = v;
}

template <typename T>
cudaError_t LaunchFill(T* dst, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(n);
  FillKernel<T><<<l.blocks, l.threads, 0, stream>>>(dst, n, value);
  return cudaGetLastError();
}

// out[i] = a[i] + b[i]; out may be a or b (each element is read before it is
// written, by the same thread).
template <typename T>
__global__ void AddKernel(const T* a, const T* b, T* out, int64_t n,
                          bool packed) {
  int64_t begin = 0;
  if (packed) {
    const int64_t packs = n / 8;
    for (int64_t p = GridIndex(); p < packs; p += GridStride()) {
      const Vec<T, 8> x = reinterpret_cast<const Vec<T, 8>*>(a)[p];
      const Vec<T, 8> y = reinterpret_cast<const Vec<T, 8>*>(b)[p];
      Vec<T, 8> r;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        r.v[j] = FromFloat<T>(ToFloat(x.v[j]) + ToFloat(y.v[j]));
      }
      reinterpret_cast<Vec<T, 8>*>(out)[p] = r;
    }
    begin = packs * 8;
  }
  for (int64_t i = begin + GridIndex(); i < n; i += GridStride()) {
    out[i] = FromFloat<T>(ToFloat(a[i]) + ToFloat(b[i]));
  }
}

template <typename T>
cudaError_t LaunchAdd(const T* a, const T* b, T* out, int64_t n,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const bool packed = PackAligned(a, b, out);
  const Launch l = ElementwiseLaunch(packed ? (n + 7) / 8 : n);
  AddKernel<T><<<l.blocks, l.threads, 0, stream>>>(a, b, out, n, packed);
  return cudaGetLastError();
}

// x[i] *= alpha.
template <typename T>
__global__ void ScaleKernel(T* x, int64_t n, float alpha) {
  for (int64_t i = GridIndex(); i < n; i += GridStride()) {
    x[i] = FromFloat<T>(ToFloat(x[i]) * alpha);
  }
}

template <typename T>
cudaError_t LaunchScale(T* x, int64_t n, float alpha, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(n);
  ScaleKernel<T><<<l.blocks, l.threads, 0, stream>>>(x, n, alpha);
  return cudaGetLastError();
}

// partials[blockIdx.x] = sum of x[i]^2 (in double) over the block's
// grid-stride elements; the caller adds the partials in block order.
template <typename T>
__global__ void SumSquaresKernel(const T* x, int64_t n, double* partials) {
  __shared__ double warp_sums[32];
  double sum = 0;
  for (int64_t i = GridIndex(); i < n; i += GridStride()) {
    const double v = ToFloat(x[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) {
      total += warp_sums[w];
    }
    partials[blockIdx.x] = total;
  }
}

// Writes SumSquaresBlocks(n) partials.
template <typename T>
cudaError_t LaunchSumSquares(const T* x, int64_t n, double* partials,
                             cudaStream_t stream) {
  const int64_t blocks = SumSquaresBlocks(n);
  SumSquaresKernel<T>
      <<<blocks, kElementwiseThreads, 0, stream>>>(x, n, partials);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
