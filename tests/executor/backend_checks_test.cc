// BackendChecks under the two parameterisations the backends use (an f32
// backend holding f32 and i32, as the CPU's; a bf16 backend holding every
// dtype, as CUDA's): well-formed arguments pass for every kernel, and each
// kind of misuse aborts with the message the backends have always printed,
// written out here by hand.
#include "executor/backend_checks.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

constexpr DType kF32 = DType::kF32;
constexpr DType kBF16 = DType::kBF16;
constexpr DType kI32 = DType::kI32;

// The checks never read the data: any non-null pointer stands for memory.
Tensor T(DType dtype, int64_t numel) {
  static char storage[16];
  return Tensor{storage, dtype, numel};
}

BackendChecks CpuLike() {
  return BackendChecks({.backend = "CpuBackend",
                        .act = kF32,
                        .held = {kF32, kI32},
                        .unheld_note = "bf16 is the CUDA backend's compute "
                                       "dtype; the cpu backend computes in "
                                       "f32"});
}

BackendChecks CudaLike() {
  return BackendChecks({.backend = "CudaBackend", .act = kBF16});
}

TEST(DTypeSetTest, MembersAndNamesInTheEnumsOrder) {
  const DTypeSet floats = {kBF16, kF32};
  EXPECT_TRUE(floats.contains(kF32));
  EXPECT_TRUE(floats.contains(kBF16));
  EXPECT_FALSE(floats.contains(kI32));
  EXPECT_EQ(floats.ToString(), "f32 or bf16");
  EXPECT_EQ((DTypeSet{kI32}).ToString(), "i32");
  EXPECT_EQ((DTypeSet{kF32, kF32}).ToString(), "f32");
  EXPECT_EQ((DTypeSet{kI32, kBF16, kF32}).ToString(), "f32 or bf16 or i32");
  EXPECT_EQ((DTypeSet{}).ToString(), "");
}

// Every kernel's checks with arguments of the right dtypes and sizes, on a
// backend whose act is `act`; `f32_or_act` stands where the contract allows
// either. Returns only if none aborts.
void RunEveryCheck(const BackendChecks& checks, DType act, DType f32_or_act) {
  checks.Copy(T(kF32, 8), T(kBF16, 8), 8);
  checks.Copy(T(kBF16, 8), T(kF32, 8), 8);
  checks.Copy(T(kI32, 8), T(kI32, 8), 8);
  checks.Fill(T(f32_or_act, 8), 8);
  checks.Add(T(f32_or_act, 8), T(f32_or_act, 8), T(f32_or_act, 8), 8);
  checks.Scale(T(f32_or_act, 8), 8);
  checks.SumSquares(T(f32_or_act, 8), 0);
  checks.Gemm(2, 3, 4, T(act, 8), T(act, 12), T(f32_or_act, 6));
  checks.Gemm(0, 0, 0, T(act, 0), T(act, 0), T(f32_or_act, 0));
  checks.RmsNormForward(T(act, 12), T(act, 4), 3, 4, T(act, 12), T(kF32, 3));
  checks.RmsNormBackward(T(act, 12), T(act, 12), T(act, 4), T(kF32, 3), 3, 4,
                         T(act, 12), T(kF32, 4));
  checks.EmbeddingForward(T(kI32, 5), T(act, 12), 5, 10, 3, 4, T(act, 20));
  checks.EmbeddingBackward(T(kI32, 5), T(act, 20), 5, 0, 3, 4, T(kF32, 12));
  // tokens 2, heads 4, kv_heads 2, head_dim 8: qkv rows of (4 + 2*2) * 8.
  checks.RopeQkvForward(T(act, 128), T(kI32, 2), 2, 4, 2, 8, T(act, 64),
                        T(act, 32), T(act, 32));
  checks.RopeQkvBackward(T(f32_or_act, 64), T(f32_or_act, 32),
                         T(f32_or_act, 32), T(kI32, 2), 2, 4, 2, 8,
                         T(act, 128));
  // batch 2, q_len 3, kv_len 5, heads 4, kv_heads 2, head_dim 8.
  const AttentionShape s{2, 3, 5, 4, 2, 8};
  checks.Attention("AttentionForward", s);
  checks.AttentionForward(s, T(act, 192), T(act, 160), T(act, 160), T(kI32, 3),
                          T(kI32, 5), T(f32_or_act, 192), T(kF32, 24));
  checks.AttentionBackward(s, T(act, 192), T(act, 192), T(act, 160),
                           T(act, 160), T(f32_or_act, 192), T(kF32, 24),
                           T(kI32, 3), T(kI32, 5), T(kF32, 192), T(kF32, 160),
                           T(kF32, 160));
  checks.Attention("AttentionForward", {1, 1, 0, 1, 1, 1});  // no keys yet
  checks.SwiGluForward(T(act, 30), 3, 5, T(act, 15));
  checks.SwiGluBackward(T(act, 15), T(act, 30), 3, 5, T(act, 30));
  checks.LogitsRowMax(T(f32_or_act, 21), 3, 7, T(kF32, 3));
  checks.LogitsSumExpAndTarget(T(f32_or_act, 21), T(kI32, 3), T(kF32, 3), 3, 7,
                               7, T(kF32, 6));
  const Tensor logits = T(f32_or_act, 21);
  checks.CrossEntropyBackward(logits, T(kI32, 3), T(kF32, 3), T(kF32, 6), 3, 0,
                              7, T(kF32, 3), logits);  // in place
  AdamWConfig config;
  checks.AdamW(config, T(kF32, 9), T(kF32, 9), T(kF32, 9), T(kF32, 9), 9);
}

TEST(BackendChecksTest, WellFormedArgumentsPassOnBothBackends) {
  RunEveryCheck(CpuLike(), kF32, kF32);
  RunEveryCheck(CudaLike(), kBF16, kBF16);
  RunEveryCheck(CudaLike(), kBF16, kF32);
}

TEST(BackendChecksDeathTest, DTypeMisuseNamesKernelArgumentAndWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // A dtype the backend does not hold gets its note.
  EXPECT_DEATH(CpuLike().Gemm(2, 2, 2, T(kBF16, 4), T(kF32, 4), T(kF32, 4)),
               "CpuBackend::Gemm: a is bf16, expected f32 \\(bf16 is the CUDA "
               "backend's compute dtype; the cpu backend computes in f32\\)");
  // A held dtype in the wrong place does not.
  EXPECT_DEATH(CpuLike().EmbeddingForward(T(kF32, 2), T(kF32, 4), 2, 0, 1, 4,
                                          T(kF32, 8)),
               "CpuBackend::EmbeddingForward: tokens is f32, expected i32\n");
  EXPECT_DEATH(CudaLike().Gemm(2, 2, 2, T(kF32, 4), T(kBF16, 4), T(kF32, 4)),
               "CudaBackend::Gemm: a is f32, expected bf16\n");
  EXPECT_DEATH(CudaLike().Gemm(2, 2, 2, T(kBF16, 4), T(kBF16, 4), T(kI32, 4)),
               "CudaBackend::Gemm: c is i32, expected f32 or bf16\n");
  // "The same dtype as" arguments.
  EXPECT_DEATH(CudaLike().Add(T(kBF16, 4), T(kF32, 4), T(kBF16, 4), 4),
               "CudaBackend::Add: b is f32, expected bf16\n");
  EXPECT_DEATH(
      CudaLike().RopeQkvBackward(T(kF32, 64), T(kBF16, 32), T(kF32, 32),
                                 T(kI32, 2), 2, 4, 2, 8, T(kBF16, 128)),
      "CudaBackend::RopeQkvBackward: dk is bf16, expected f32\n");
  // Attention gradients are f32 on every backend.
  const AttentionShape s{1, 1, 1, 1, 1, 2};
  EXPECT_DEATH(CudaLike().AttentionBackward(
                   s, T(kBF16, 2), T(kBF16, 2), T(kBF16, 2), T(kBF16, 2),
                   T(kBF16, 2), T(kF32, 1), T(kI32, 1), T(kI32, 1), T(kBF16, 2),
                   T(kF32, 2), T(kF32, 2)),
               "CudaBackend::AttentionBackward: dq is bf16, expected f32\n");
  // ... but a self-causal block writes them, in f32 or act, all alike.
  const AttentionShape self{1, 1, 1, 1, 1, 2, /*self_causal=*/true};
  CudaLike().AttentionBackward(self, T(kBF16, 2), T(kBF16, 2), T(kBF16, 2),
                               T(kBF16, 2), T(kBF16, 2), T(kF32, 1),
                               T(kI32, 1), T(kI32, 1), T(kBF16, 2),
                               T(kBF16, 2), T(kBF16, 2));
  EXPECT_DEATH(CudaLike().AttentionBackward(
                   self, T(kBF16, 2), T(kBF16, 2), T(kBF16, 2), T(kBF16, 2),
                   T(kBF16, 2), T(kF32, 1), T(kI32, 1), T(kI32, 1), T(kBF16, 2),
                   T(kF32, 2), T(kBF16, 2)),
               "CudaBackend::AttentionBackward: dk is f32, expected bf16\n");
  EXPECT_DEATH(CudaLike().Attention("AttentionBackward",
                                    {1, 2, 3, 1, 1, 2, /*self_causal=*/true}),
               "CudaBackend::AttentionBackward: shape.self_causal with "
               "q_len = 2 != kv_len = 3\n");
  EXPECT_DEATH(CudaLike().Copy(T(kI32, 4), T(kF32, 4), 4),
               "CudaBackend::Copy: cannot convert i32 to f32\n");
  const Tensor shared = T(kBF16, 21);
  const Tensor shared_f32{shared.data, kF32, 21};
  EXPECT_DEATH(CudaLike().CrossEntropyBackward(shared, T(kI32, 3), T(kF32, 3),
                                               T(kF32, 6), 3, 0, 7, T(kF32, 3),
                                               shared_f32),
               "CudaBackend::CrossEntropyBackward: dlogits may alias logits "
               "only with the same dtype\n");
}

TEST(BackendChecksDeathTest, SizeAndShapeMisuseNamesTheFigures) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(CpuLike().RmsNormForward(T(kF32, 16), T(kF32, 4), 5, 4,
                                        T(kF32, 20), T(kF32, 5)),
               "CpuBackend::RmsNormForward: x holds 16 elements, the shape "
               "needs 20\n");
  EXPECT_DEATH(CpuLike().Fill(Tensor{nullptr, kF32, 4}, 4),
               "CpuBackend::Fill: dst is empty\n");
  EXPECT_DEATH(CpuLike().SwiGluForward(T(kF32, 8), 4, 0, T(kF32, 8)),
               "CpuBackend::SwiGluForward: ffn = 0, must be positive\n");
  EXPECT_DEATH(CudaLike().Scale(T(kBF16, 4), -1),
               "CudaBackend::Scale: n = -1, must be >= 0\n");
  EXPECT_DEATH(CudaLike().RopeQkvForward(T(kBF16, 6), T(kI32, 1), 1, 1, 1, 3,
                                         T(kBF16, 3), T(kBF16, 3), T(kBF16, 3)),
               "CudaBackend::RopeQkvForward: head_dim = 3, must be even\n");
  EXPECT_DEATH(CpuLike().Attention("AttentionForward", {1, 4, 4, 3, 2, 2}),
               "CpuBackend::AttentionForward: shape.kv_heads = 2 does not "
               "divide shape.heads = 3\n");
  EXPECT_DEATH(CudaLike().Attention("AttentionBackward", {1, 4, -1, 2, 2, 2}),
               "CudaBackend::AttentionBackward: shape.kv_len = -1, must be "
               ">= 0\n");
  AdamWConfig config;
  config.step = 0;
  EXPECT_DEATH(CpuLike().AdamW(config, T(kF32, 1), T(kF32, 1), T(kF32, 1),
                               T(kF32, 1), 1),
               "CpuBackend::AdamW: config.step = 0, must be positive\n");
  EXPECT_DEATH(CudaLike().Fail("Free", "cudaFreeAsync: invalid argument"),
               "CudaBackend::Free: cudaFreeAsync: invalid argument\n");
}

}  // namespace
}  // namespace tessera::executor
