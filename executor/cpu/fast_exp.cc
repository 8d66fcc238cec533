#include "executor/cpu/fast_exp.h"

namespace tessera::executor::cpu {

// One build per instruction set, chosen at load time (GNU ifunc); the
// templates hold the loops, so every version computes the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSERA_VECTOR_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default"), flatten))
#else
#define TESSERA_VECTOR_CLONES
#endif

TESSERA_VECTOR_CLONES
void ExpShifted(const float* x, int64_t n, float shift, float* out) {
  ExpShifted<float>(x, n, shift, out);
}

TESSERA_VECTOR_CLONES
double ExpShiftedSum(const float* x, int64_t n, float shift, float* out) {
  return ExpShiftedSum<float>(x, n, shift, out);
}

}  // namespace tessera::executor::cpu
