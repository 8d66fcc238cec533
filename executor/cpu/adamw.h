// AdamW (Loshchilov & Hutter 2019, decoupled weight decay; Kingma & Ba 2015
// bias correction) on the CPU over a flat shard of master weights. T is float
// or double.
//
// defines: AdamWStep
//
//   AdamWConfig config{.lr = 3e-4f, .step = 1};
//   cpu::AdamWStep<float>(config, /*decay=*/true, master, grad, m, v, n);
#pragma once

#include <cmath>
#include <cstdint>

#include "executor/backend.h"

namespace tessera::executor::cpu {

// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// w -= lr (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd w), the wd
// term only when `decay`. master, grad, m, v are [n]; all but grad updated.
template <typename T>
void AdamWStep(const AdamWConfig& config, bool decay, T* master, const T* grad,
               T* m, T* v, int64_t n) {
  const T b1 = config.beta1;
  const T b2 = config.beta2;
  const T lr = config.lr;
  const T eps = config.eps;
  const T wd = decay ? T(config.weight_decay) : T(0);
  const double step = double(config.step);
  const T inv_bc1 = T(1.0 / (1.0 - std::pow(double(config.beta1), step)));
  const T inv_bc2 = T(1.0 / (1.0 - std::pow(double(config.beta2), step)));
  for (int64_t i = 0; i < n; ++i) {
    const T g = grad[i];
    const T mi = b1 * m[i] + (T(1) - b1) * g;
    const T vi = b2 * v[i] + (T(1) - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const T update = mi * inv_bc1 / (std::sqrt(vi * inv_bc2) + eps);
    master[i] -= lr * (update + wd * master[i]);
  }
}

}  // namespace tessera::executor::cpu
