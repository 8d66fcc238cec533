// RMSNorm (Zhang & Sennrich 2019) on the GPU: one block per row for the
// forward and the input gradient, and a two-pass column sum for the weight
// gradient (launch_config.h's ColumnReducePlan), so that it is deterministic.
// x, y, dy, dx and weight are bf16; rstd, dweight and the sums are f32.
//
// defines: RmsNormForwardKernel, LaunchRmsNormForward,
//          RmsNormBackwardInputKernel, RmsNormWeightPartialsKernel,
//          RmsNormWeightFinishKernel, LaunchRmsNormBackward
//
//   LaunchRmsNormForward(x, w, rows, cols, 1e-5f, y, rstd, stream);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

// y = x * rstd * weight, rstd[r] = 1 / sqrt(mean_c(x[r,c]^2) + eps).
__global__ void RmsNormForwardKernel(const bf16* x, const bf16* weight,
                                     int64_t rows, int64_t cols, float eps,
                                     bf16* y, float* rstd) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const bf16* xr = x + r * cols;
    float sum_sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float v = ToFloat(xr[c]);
      sum_sq += v * v;
    }
    sum_sq = BlockSum(sum_sq, shared);
    const float s = 1.0f / sqrtf(sum_sq / static_cast<float>(cols) + eps);
    if (threadIdx.x == 0) rstd[r] = s;
    bf16* yr = y + r * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      yr[c] = FromFloat<bf16>(ToFloat(xr[c]) * s * ToFloat(weight[c]));
    }
  }
}

inline cudaError_t LaunchRmsNormForward(const bf16* x, const bf16* weight,
                                        int64_t rows, int64_t cols, float eps,
                                        bf16* y, float* rstd,
                                        cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RmsNormForwardKernel<<<RowBlocks(rows), RowThreads(cols), 0, stream>>>(
      x, weight, rows, cols, eps, y, rstd);
  return cudaGetLastError();
}

// dx += s g - x s^3 mean_c(g x), g = dy * weight, s = rstd[r] (Zhang &
// Sennrich 2019, the RMS gradient).
__global__ void RmsNormBackwardInputKernel(const bf16* dy, const bf16* x,
                                           const bf16* weight,
                                           const float* rstd, int64_t rows,
                                           int64_t cols, bf16* dx) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const bf16* xr = x + r * cols;
    const bf16* dyr = dy + r * cols;
    float dot = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      dot += ToFloat(dyr[c]) * ToFloat(weight[c]) * ToFloat(xr[c]);
    }
    dot = BlockSum(dot, shared);
    const float s = rstd[r];
    const float coef = dot / static_cast<float>(cols) * s * s * s;
    bf16* dxr = dx + r * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = ToFloat(dyr[c]) * ToFloat(weight[c]);
      dxr[c] = FromFloat<bf16>(ToFloat(dxr[c]) + s * g - coef * ToFloat(xr[c]));
    }
  }
}

// Pass 1 of dweight = sum_r dy x s: block (x, chunk) writes
// partials[chunk * cols + c] for its columns over its chunk of rows.
__global__ void RmsNormWeightPartialsKernel(const bf16* dy, const bf16* x,
                                            const float* rstd, int64_t rows,
                                            int64_t cols,
                                            int64_t rows_per_chunk,
                                            float* partials) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rows_per_chunk;
  const int64_t end =
      begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float sum = 0.0f;
  for (int64_t r = begin; r < end; ++r) {
    sum += ToFloat(dy[r * cols + c]) * ToFloat(x[r * cols + c]) * rstd[r];
  }
  partials[chunk * cols + c] = sum;
}

// Pass 2: dweight[c] += the chunks' partials, in chunk order.
__global__ void RmsNormWeightFinishKernel(const float* partials,
                                          int64_t row_chunks, int64_t cols,
                                          float* dweight) {
  for (int64_t c = GridIndex(); c < cols; c += GridStride()) {
    float sum = 0.0f;
    for (int64_t k = 0; k < row_chunks; ++k) sum += partials[k * cols + c];
    dweight[c] += sum;
  }
}

// `partials` holds PlanColumnReduce(rows, cols).scratch_floats() floats.
inline cudaError_t LaunchRmsNormBackward(const bf16* dy, const bf16* x,
                                         const bf16* weight, const float* rstd,
                                         int64_t rows, int64_t cols, bf16* dx,
                                         float* dweight, float* partials,
                                         cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  RmsNormBackwardInputKernel<<<RowBlocks(rows), RowThreads(cols), 0, stream>>>(
      dy, x, weight, rstd, rows, cols, dx);
  const ColumnReducePlan plan = PlanColumnReduce(rows, cols);
  const dim3 grid(static_cast<unsigned>(plan.col_blocks),
                  static_cast<unsigned>(plan.row_chunks));
  RmsNormWeightPartialsKernel<<<grid, plan.threads, 0, stream>>>(
      dy, x, rstd, rows, cols, plan.rows_per_chunk, partials);
  const Launch l = ElementwiseLaunch(cols);
  RmsNormWeightFinishKernel<<<l.blocks, l.threads, 0, stream>>>(
      partials, plan.row_chunks, cols, dweight);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
