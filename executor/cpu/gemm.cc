#include "executor/cpu/gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#ifdef TESSERA_HAVE_CBLAS
#include <cblas.h>
#endif

namespace tessera::executor::cpu {
namespace {

// Readers: Gemm calls in flight. Writer: SetBlasThreads. absl::Mutex lets a
// waiting writer in even while readers keep arriving.
absl::Mutex& BlasConfigMutex() {
  static absl::Mutex* const mu = new absl::Mutex;
  return *mu;
}

std::atomic<int> g_blas_threads{0};

// c = beta * c over an m x n block (beta = 0 writes zeros).
template <typename T>
void ScaleC(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// Cache blocking (Goto & van de Geijn 2008): a kKc x kNc panel of op(b) and a
// kMc x kKc block of op(a) are packed contiguous, then 4 rows of c at a time
// take rank-1 updates along the packed panel.
constexpr int64_t kMc = 64;
constexpr int64_t kKc = 256;
constexpr int64_t kNc = 1024;

template <typename T>
void MicroRows(int64_t rows, int64_t kb, int64_t nb, const T* ap, const T* bp,
               T* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    T* __restrict c0 = c + i * ldc;
    T* __restrict c1 = c0 + ldc;
    T* __restrict c2 = c1 + ldc;
    T* __restrict c3 = c2 + ldc;
    for (int64_t p = 0; p < kb; ++p) {
      const T a0 = ap[i * kb + p], a1 = ap[(i + 1) * kb + p];
      const T a2 = ap[(i + 2) * kb + p], a3 = ap[(i + 3) * kb + p];
      const T* __restrict brow = bp + p * nb;
      for (int64_t j = 0; j < nb; ++j) {
        const T bj = brow[j];
        c0[j] += a0 * bj;
        c1[j] += a1 * bj;
        c2[j] += a2 * bj;
        c3[j] += a3 * bj;
      }
    }
  }
  for (; i < rows; ++i) {
    T* __restrict ci = c + i * ldc;
    for (int64_t p = 0; p < kb; ++p) {
      const T ai = ap[i * kb + p];
      const T* __restrict brow = bp + p * nb;
      for (int64_t j = 0; j < nb; ++j) ci[j] += ai * brow[j];
    }
  }
}

#ifdef TESSERA_HAVE_CBLAS
bool FitsBlasInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

void CallBlas(bool ta, bool tb, int m, int n, int k, float alpha,
              const float* a, int lda, const float* b, int ldb, float beta,
              float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

void CallBlas(bool ta, bool tb, int m, int n, int k, double alpha,
              const double* a, int lda, const double* b, int ldb, double beta,
              double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}
#endif

}  // namespace

template <typename T>
void GemmBlocked(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  ScaleC(m, n, beta, c, ldc);
  if (k <= 0 || alpha == T(0)) return;
  std::vector<T> a_pack(kMc * kKc);
  std::vector<T> b_pack(kKc * std::min(kNc, n));
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nb = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kb = std::min(kKc, k - pc);
      for (int64_t p = 0; p < kb; ++p) {  // b_pack[p][j] = op(b)[pc+p][jc+j]
        T* dst = b_pack.data() + p * nb;
        if (trans_b) {
          for (int64_t j = 0; j < nb; ++j) dst[j] = b[(jc + j) * ldb + pc + p];
        } else {
          std::copy_n(b + (pc + p) * ldb + jc, nb, dst);
        }
      }
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mb = std::min(kMc, m - ic);
        for (int64_t i = 0; i < mb; ++i) {  // a_pack[i][p] = alpha op(a)[..]
          T* dst = a_pack.data() + i * kb;
          for (int64_t p = 0; p < kb; ++p) {
            dst[p] = alpha * (trans_a ? a[(pc + p) * lda + ic + i]
                                      : a[(ic + i) * lda + pc + p]);
          }
        }
        MicroRows(mb, kb, nb, a_pack.data(), b_pack.data(), c + ic * ldc + jc,
                  ldc);
      }
    }
  }
}

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
          int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef TESSERA_HAVE_CBLAS
  // k = 0 is c = beta c; BLAS would also reject the then-empty lda.
  if (k > 0 && FitsBlasInt(m) && FitsBlasInt(n) && FitsBlasInt(k) &&
      FitsBlasInt(lda) && FitsBlasInt(ldb) && FitsBlasInt(ldc)) {
    absl::ReaderMutexLock lock(&BlasConfigMutex());
    CallBlas(trans_a, trans_b, static_cast<int>(m), static_cast<int>(n),
             static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
             static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
    return;
  }
#endif
  GemmBlocked(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                          const float*, int64_t, const float*, int64_t, float,
                          float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                           const double*, int64_t, const double*, int64_t,
                           double, double*, int64_t);
template void GemmBlocked<float>(bool, bool, int64_t, int64_t, int64_t, float,
                                 const float*, int64_t, const float*, int64_t,
                                 float, float*, int64_t);
template void GemmBlocked<double>(bool, bool, int64_t, int64_t, int64_t, double,
                                  const double*, int64_t, const double*,
                                  int64_t, double, double*, int64_t);

bool BlasAvailable() {
#ifdef TESSERA_HAVE_CBLAS
  return true;
#else
  return false;
#endif
}

std::string BlasDescription() {
#ifdef TESSERA_HAVE_CBLAS
  // Looked up by name: the linked CBLAS need not be OpenBLAS.
  using ConfigFn = char* (*)();
  if (auto fn = reinterpret_cast<ConfigFn>(
          dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    return std::string("OpenBLAS ") + fn();
  }
  return "cblas";
#else
  return "blocked C++ fallback";
#endif
}

void SetBlasThreads(int threads) {
  threads = std::max(threads, 1);
  using SetFn = void (*)(int);
  auto fn =
      reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  absl::MutexLock lock(&BlasConfigMutex());
  if (fn != nullptr) fn(threads);
  g_blas_threads.store(threads);
}

int BlasThreads() {
  const int set = g_blas_threads.load();
  if (set > 0) return set;
  using GetFn = int (*)();
  if (auto fn = reinterpret_cast<GetFn>(
          dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) {
    return fn();
  }
  return 0;
}

}  // namespace tessera::executor::cpu
