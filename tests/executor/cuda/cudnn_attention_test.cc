// cuDNN's fused attention (executor/cuda/cudnn_attention.h, through the CUDA
// backend's plain causal blocks) against the CPU backend and against
// Tessera's own CUDA kernels, on the same bf16 inputs; on a GPU with cuDNN
// (skipped without one, saying why). Tolerances as cuda_kernels_test.cc's
// for attention (P and dS enter the tensor cores as bf16): out 1e-2,
// gradients 2e-2 relative; lse 1e-3 absolute (cuDNN's statistics come from
// its own order of f32 sums). cuDNN's gradients are bf16 (cast to f32 where
// the caller's are): within the same 2e-2.
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/cuda/cuda_backend.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

namespace tessera::executor {
namespace {

using cuda_test::Download;
using cuda_test::Iota;
using cuda_test::MaxAbsDiff;
using cuda_test::RandomBf16Values;
using cuda_test::RelativeError;
using cuda_test::Upload;
using cuda_test::UploadInts;

constexpr DType kF32 = DType::kF32;
constexpr DType kBF16 = DType::kBF16;

// Shapes of plain causal blocks: GQA, MQA and MHA, lengths that are not
// multiples of any tile, the head dims of Llama models, and the 1B
// benchmark's heads at a shorter sequence.
const std::vector<AttentionShape>& Shapes() {
  static const std::vector<AttentionShape> shapes = {
      {2, 100, 100, 4, 2, 64, true},    {1, 130, 130, 4, 1, 128, true},
      {1, 256, 256, 8, 8, 64, true},    {1, 77, 77, 2, 2, 96, true},
      {2, 512, 512, 16, 8, 128, true},
  };
  return shapes;
}

// "2x100, 4/2 heads of 64".
std::string Describe(const AttentionShape& s) {
  return absl::StrCat(s.batch, "x", s.q_len, ", ", s.heads, "/", s.kv_heads,
                      " heads of ", s.head_dim);
}

// Seeded bf16-rounded q, k and v of a shape (the same in every test).
std::tuple<std::vector<float>, std::vector<float>, std::vector<float>>
RandomInputs(const AttentionShape& s) {
  const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
  const int64_t kv_numel = s.batch * s.kv_len * s.kv_heads * s.head_dim;
  return {RandomBf16Values(q_numel, 1, -2, 2),
          RandomBf16Values(kv_numel, 2, -2, 2), RandomBf16Values(kv_numel, 3)};
}

class CudnnAttentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
    absl::StatusOr<std::unique_ptr<CudaBackend>> gpu = CudaBackend::Create();
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = std::move(*gpu);
    if (gpu_->attention_kernels().rfind("cuDNN", 0) != 0) {
      GTEST_SKIP() << "cuDNN attention unavailable: "
                   << gpu_->attention_kernels();
    }
    absl::StatusOr<std::unique_ptr<CudaBackend>> own = CudaBackend::Create(
        {.attention = CudaAttentionKernels::kOwn});
    ASSERT_TRUE(own.ok()) << own.status();
    own_ = std::move(*own);
  }

  struct Forwarded {
    std::vector<float> out, lse;
  };
  // One plain causal forward on `backend` (out of `out_type`).
  static Forwarded Forward(Backend& backend, const AttentionShape& s,
                           const std::vector<float>& q,
                           const std::vector<float>& k,
                           const std::vector<float>& v, DType act,
                           DType out_type) {
    const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
    DeviceBuffer bq = Upload(backend, q, act), bk = Upload(backend, k, act),
                 bv = Upload(backend, v, act),
                 pos = UploadInts(backend, Iota(s.q_len));
    DeviceBuffer out = Upload(backend, std::vector<float>(q_numel), out_type);
    DeviceBuffer lse = Upload(
        backend, std::vector<float>(s.batch * s.heads * s.q_len), kF32);
    backend.AttentionForward(s, bq.view(), bk.view(), bv.view(), pos.view(),
                             pos.view(), false, out.view(), lse.view());
    return {Download(backend, out.view()), Download(backend, lse.view())};
  }

  struct Grads {
    std::vector<float> dq, dk, dv;
  };
  // One plain causal backward on `backend` into gradients of `grad_type`
  // that hold `held` before (a self-causal block writes them: what they
  // held must not show); returns them.
  static Grads Backward(Backend& backend, const AttentionShape& s,
                        const std::vector<float>& q,
                        const std::vector<float>& k,
                        const std::vector<float>& v,
                        const std::vector<float>& out,
                        const std::vector<float>& lse,
                        const std::vector<float>& dout, float held, DType act,
                        DType out_type, DType grad_type) {
    DeviceBuffer bq = Upload(backend, q, act), bk = Upload(backend, k, act),
                 bv = Upload(backend, v, act), bo = Upload(backend, out, out_type),
                 bdo = Upload(backend, dout, act),
                 blse = Upload(backend, lse, kF32),
                 pos = UploadInts(backend, Iota(s.q_len));
    DeviceBuffer dq = Upload(backend, std::vector<float>(q.size(), held),
                             grad_type),
                 dk = Upload(backend, std::vector<float>(k.size(), held),
                             grad_type),
                 dv = Upload(backend, std::vector<float>(v.size(), held),
                             grad_type);
    backend.AttentionBackward(s, bdo.view(), bq.view(), bk.view(), bv.view(),
                              bo.view(), blse.view(), pos.view(), pos.view(),
                              dq.view(), dk.view(), dv.view());
    return {Download(backend, dq.view()), Download(backend, dk.view()),
            Download(backend, dv.view())};
  }

  CpuBackend cpu_;
  std::unique_ptr<CudaBackend> gpu_;  // cuDNN where it applies
  std::unique_ptr<CudaBackend> own_;  // Tessera's kernels only
};

TEST_F(CudnnAttentionTest, ForwardMatchesTheCpuAndTheOwnKernels) {
  for (const AttentionShape& s : Shapes()) {
    SCOPED_TRACE(Describe(s));
    const auto [q, k, v] = RandomInputs(s);
    const int64_t calls = gpu_->cudnn_attention_calls();
    for (DType out_type : {kBF16, kF32}) {
      const Forwarded cudnn = Forward(*gpu_, s, q, k, v, kBF16, out_type);
      const Forwarded own = Forward(*own_, s, q, k, v, kBF16, out_type);
      const Forwarded cpu = Forward(cpu_, s, q, k, v, kF32, kF32);
      EXPECT_LE(RelativeError(cudnn.out, cpu.out), 1e-2) << DTypeName(out_type);
      EXPECT_LE(RelativeError(cudnn.out, own.out), 1e-2) << DTypeName(out_type);
      EXPECT_LE(MaxAbsDiff(cudnn.lse, cpu.lse), 1e-3) << DTypeName(out_type);
    }
    EXPECT_EQ(gpu_->cudnn_attention_calls(), calls + 2)
        << "cuDNN did not run: " << gpu_->attention_kernels();
    EXPECT_EQ(own_->cudnn_attention_calls(), 0);
  }
}

// The backward of a plain causal block writes dq, dk and dv, f32 (ring
// attention's accumulators) or bf16 (the engine's without context
// parallelism: cuDNN writes them in place), on cuDNN and on the own kernels.
TEST_F(CudnnAttentionTest, BackwardWritesWhatTheCpuAndTheOwnKernelsWrite) {
  for (const AttentionShape& s : Shapes()) {
    SCOPED_TRACE(Describe(s));
    const auto [q, k, v] = RandomInputs(s);
    // The CPU's forward, out rounded to bf16, is every backward's input.
    const Forwarded f = Forward(cpu_, s, q, k, v, kF32, kF32);
    std::vector<float> out = f.out;
    for (float& o : out) o = Bf16ToFloat(FloatToBf16(o));
    const std::vector<float> dout =
        RandomBf16Values(static_cast<int64_t>(q.size()), 4);
    const Grads cpu = Backward(cpu_, s, q, k, v, out, f.lse, dout, 0.5f, kF32,
                               kF32, kF32);
    const int64_t calls = gpu_->cudnn_attention_calls();
    for (DType grad_type : {kF32, kBF16}) {
      for (DType out_type : {kBF16, kF32}) {
        SCOPED_TRACE(testing::Message() << "gradients " << DTypeName(grad_type)
                                        << ", out " << DTypeName(out_type));
        const Grads cudnn = Backward(*gpu_, s, q, k, v, out, f.lse, dout, 0.5f,
                                     kBF16, out_type, grad_type);
        const Grads own = Backward(*own_, s, q, k, v, out, f.lse, dout, 0.5f,
                                   kBF16, out_type, grad_type);
        EXPECT_LE(RelativeError(cudnn.dq, cpu.dq), 2e-2);
        EXPECT_LE(RelativeError(cudnn.dk, cpu.dk), 2e-2);
        EXPECT_LE(RelativeError(cudnn.dv, cpu.dv), 2e-2);
        EXPECT_LE(RelativeError(own.dq, cpu.dq), 2e-2);
        EXPECT_LE(RelativeError(own.dk, cpu.dk), 2e-2);
        EXPECT_LE(RelativeError(own.dv, cpu.dv), 2e-2);
      }
    }
    EXPECT_EQ(gpu_->cudnn_attention_calls(), calls + 4)
        << "cuDNN did not run: " << gpu_->attention_kernels();
    EXPECT_EQ(own_->cudnn_attention_calls(), 0);
  }
}

// Ring attention's blocks (positions other than 0..n-1, merges) are not
// cuDNN's: they run on Tessera's kernels even where cuDNN is loaded.
TEST_F(CudnnAttentionTest, BlocksThatAreNotPlainCausalRunTheOwnKernels) {
  AttentionShape s = Shapes()[0];
  s.self_causal = false;
  const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
  const int64_t kv_numel = s.batch * s.kv_len * s.kv_heads * s.head_dim;
  const std::vector<float> q = RandomBf16Values(q_numel, 1);
  const std::vector<float> k = RandomBf16Values(kv_numel, 2);
  const std::vector<float> v = RandomBf16Values(kv_numel, 3);
  const int64_t calls = gpu_->cudnn_attention_calls();
  const Forwarded g = Forward(*gpu_, s, q, k, v, kBF16, kBF16);
  const Forwarded c = Forward(cpu_, s, q, k, v, kF32, kF32);
  EXPECT_LE(RelativeError(g.out, c.out), 1e-2);
  EXPECT_EQ(gpu_->cudnn_attention_calls(), calls);
}

}  // namespace
}  // namespace tessera::executor
