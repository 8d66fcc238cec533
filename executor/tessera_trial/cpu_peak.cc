#include "executor/tessera_trial/cpu_peak.h"

#include <algorithm>
#include <chrono>

#include "core/usable_cpus.h"
#include "executor/cpu/cpu_backend.h"

namespace tessera::executor {

double MeasureCpuPeakTflops(int n, int repeats) {
  CpuBackend backend({.blas_threads = UsableCpuCount()});
  auto a = backend.Allocate(int64_t{n} * n, DType::kF32, "peak a");
  auto b = backend.Allocate(int64_t{n} * n, DType::kF32, "peak b");
  auto c = backend.Allocate(int64_t{n} * n, DType::kF32, "peak c");
  if (!a.ok() || !b.ok() || !c.ok()) return 0;
  backend.Fill(a->view(), int64_t{n} * n, 0.5f);
  backend.Fill(b->view(), int64_t{n} * n, 0.25f);
  double best_s = 1e30;
  for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up
    const auto start = std::chrono::steady_clock::now();
    backend.Gemm(false, false, n, n, n, 1.0f, a->view(), b->view(), 0.0f,
                 c->view());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (r > 0) best_s = std::min(best_s, s);
  }
  return 2.0 * n * n * static_cast<double>(n) / best_s / 1e12;
}

}  // namespace tessera::executor
