// The CPU backend's peak for MFU: measured, not assumed. A square fp32 GEMM
// through the same BLAS the backend uses, on all cores, best of a few runs.
//
//   double tflops = MeasureCpuPeakTflops();  // the whole machine
#pragma once

namespace tessera::executor {

// TFLOP/s of the best of `repeats` n x n x n sgemm calls (n = 1024 by
// default) through the backend, using every CPU the process may run on
// (core/usable_cpus.h).
double MeasureCpuPeakTflops(int n = 1024, int repeats = 3);

}  // namespace tessera::executor
