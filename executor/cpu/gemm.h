// Row-major GEMM for the CPU backend: through CBLAS (OpenBLAS) when the build
// found one (TESSERA_HAVE_CBLAS), else through a blocked C++ loop nest that is
// also compiled in every build, so tests can compare the two.
//
// defines: Gemm, GemmBlocked, BlasAvailable, BlasDescription, SetBlasThreads,
//          BlasThreads
//
//   // c[m,n] = a[m,k] * b[n,k]^T (a linear layer's forward: y = x W^T).
//   cpu::Gemm<float>(/*trans_a=*/false, /*trans_b=*/true, m, n, k, 1.0f,
//                    x, k, w, k, 0.0f, y, n);
//
// Thread safety: any number of threads may call Gemm at once (the rank
// threads of the in-process engine do). How many threads ONE call may use is
// process-wide (OpenBLAS keeps one pool): SetBlasThreads changes it, waiting
// for the calls in flight, so that rank threads times BLAS threads need not
// oversubscribe the cores (CpuBackendOptions::blas_threads decides).
#pragma once

#include <cstdint>
#include <string>

namespace tessera::executor::cpu {

// c = alpha * op(a) * op(b) + beta * c, every matrix row-major; op(x) = x^T
// when its flag is set. op(a) is [m,k], op(b) is [k,n], c is [m,n]; lda, ldb
// and ldc are the row lengths of the stored matrices (a stored [m,lda] or,
// transposed, [k,lda]). beta = 0 overwrites c (NaN in c does not survive).
// T is float or double. Uses CBLAS when available, else GemmBlocked.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc);

// The same contract in plain C++ (cache-blocked, packed, single-threaded):
// the fallback when no BLAS was found, and an independent check of it.
template <typename T>
void GemmBlocked(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T beta, T* c, int64_t ldc);

// True when Gemm goes through CBLAS.
bool BlasAvailable();

// Which GEMM runs: OpenBLAS's configuration string when it is loaded, "cblas"
// for another CBLAS, or "blocked C++ fallback".
std::string BlasDescription();

// Sets how many threads one BLAS call may use (process-wide; >= 1). Waits for
// the Gemm calls in flight. A no-op without a BLAS that exposes
// openblas_set_num_threads.
void SetBlasThreads(int threads);

// The value last given to SetBlasThreads, or the BLAS's own default (0 when
// unknown).
int BlasThreads();

}  // namespace tessera::executor::cpu
