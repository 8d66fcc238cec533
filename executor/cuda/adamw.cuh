// AdamW (Loshchilov & Hutter 2019, decoupled weight decay; Kingma & Ba 2015
// bias correction) on the GPU over a flat f32 shard of master weights, one
// thread per element. The bias corrections are computed on the host in
// double, as the CPU reference does.
//
// defines: AdamWParams, AdamWKernel, LaunchAdamW
//
//   LaunchAdamW(AdamWParamsFor(config, decay), master, grad, m, v, n, stream);
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "executor/backend.h"
#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

struct AdamWParams {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  float inv_bias_correction1 = 1;  // 1 / (1 - beta1^step)
  float inv_bias_correction2 = 1;  // 1 / (1 - beta2^step)
};

inline AdamWParams AdamWParamsFor(const AdamWConfig& c, bool decay) {
  const double step = static_cast<double>(c.step);
  AdamWParams p;
  p.lr = c.lr;
  p.beta1 = c.beta1;
  p.beta2 = c.beta2;
  p.eps = c.eps;
  p.weight_decay = decay ? c.weight_decay : 0.0f;
  p.inv_bias_correction1 =
      static_cast<float>(1.0 / (1.0 - std::pow(double(c.beta1), step)));
  p.inv_bias_correction2 =
      static_cast<float>(1.0 / (1.0 - std::pow(double(c.beta2), step)));
  return p;
}

// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// w -= lr (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd w).
__global__ void AdamWKernel(AdamWParams p, float* master, const float* grad,
                            float* m, float* v, int64_t n) {
  for (int64_t i = GridIndex(); i < n; i += GridStride()) {
    const float g = grad[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * g;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float update = mi * p.inv_bias_correction1 /
                         (sqrtf(vi * p.inv_bias_correction2) + p.eps);
    master[i] -= p.lr * (update + p.weight_decay * master[i]);
  }
}

inline cudaError_t LaunchAdamW(const AdamWParams& p, float* master,
                               const float* grad, float* m, float* v, int64_t n,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(n);
  AdamWKernel<<<l.blocks, l.threads, 0, stream>>>(p, master, grad, m, v, n);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
