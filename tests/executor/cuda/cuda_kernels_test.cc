// Every layer kernel of the CUDA backend against the CPU backend (the
// numerical reference) on the same inputs, on a GPU (skipped without one).
// Inputs are rounded to bf16 first, so both backends see identical values;
// the CPU computes in f32 from them. Tolerances, as ||gpu - cpu|| / ||cpu||
// over the output, by what the GPU rounds:
//   - an f32 output from the same f32 arithmetic in another order: 1e-5
//     (RMSNorm rstd, softmax statistics, losses, AdamW) or 1e-4 (column sums
//     over hundreds of rows);
//   - a bf16 output rounded once: 2^-9 per element, so 5e-3 over a tensor;
//   - attention: P and dS enter the tensor cores as bf16, so out, dq, dk, dv
//     carry bf16 rounding inside: 1e-2 (forward) and 2e-2 (backward); lse
//     comes from f32 scores: 1e-4 absolute;
//   - copies (embedding rows, v out of RoPE, the target logit, the row max)
//     are exact.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "executor/cpu/cpu_backend.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/engine/layer_context.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

namespace tessera::executor {
namespace {

using cuda_test::Download;
using cuda_test::Iota;
using cuda_test::MaxAbsDiff;
using cuda_test::RandomBf16Values;
using cuda_test::RandomInts;
using cuda_test::RelativeError;
using cuda_test::Upload;
using cuda_test::UploadInts;

constexpr DType kF32 = DType::kF32;
constexpr DType kBF16 = DType::kBF16;

class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
    absl::StatusOr<std::unique_ptr<CudaBackend>> gpu = CudaBackend::Create();
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    gpu_ = std::move(*gpu);
  }

  DeviceBuffer OnCpu(const std::vector<float>& v) {
    return Upload(cpu_, v, kF32);
  }
  DeviceBuffer OnGpu(const std::vector<float>& v, DType t = kBF16) {
    return Upload(*gpu_, v, t);
  }
  DeviceBuffer CpuZeros(int64_t n) {
    return std::move(*cpu_.Allocate(n, kF32, "z"));
  }
  DeviceBuffer GpuZeros(int64_t n, DType t) {
    return std::move(*gpu_->Allocate(n, t, "z"));
  }
  std::vector<float> FromCpu(const DeviceBuffer& b) {
    return Download(cpu_, b.view());
  }
  std::vector<float> FromGpu(const DeviceBuffer& b) {
    return Download(*gpu_, b.view());
  }

  CpuBackend cpu_{{.blas_threads = 1}};
  std::unique_ptr<CudaBackend> gpu_;
};

TEST_F(CudaKernelTest, RmsNorm) {
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{45, 300}, {1000, 128}}) {
    const std::vector<float> x = RandomBf16Values(rows * cols, 1);
    const std::vector<float> w = RandomBf16Values(cols, 2, 0.5, 1.5);
    const float eps = 1e-5f;
    DeviceBuffer cx = OnCpu(x), cw = OnCpu(w), cy = CpuZeros(rows * cols),
                 cr = CpuZeros(rows);
    cpu_.RmsNormForward(cx.view(), cw.view(), rows, cols, eps, cy.view(),
                        cr.view());
    DeviceBuffer gx = OnGpu(x), gw = OnGpu(w),
                 gy = GpuZeros(rows * cols, kBF16), gr = GpuZeros(rows, kF32);
    gpu_->RmsNormForward(gx.view(), gw.view(), rows, cols, eps, gy.view(),
                         gr.view());
    EXPECT_LE(RelativeError(FromGpu(gr), FromCpu(cr)), 1e-5) << rows;
    EXPECT_LE(RelativeError(FromGpu(gy), FromCpu(cy)), 5e-3) << rows;

    // Backward adds into dx (bf16 on the GPU) and dweight (f32).
    const std::vector<float> dy = RandomBf16Values(rows * cols, 3);
    const std::vector<float> dx0 = RandomBf16Values(rows * cols, 4);
    const std::vector<float> dw0 = RandomBf16Values(cols, 5);
    DeviceBuffer cdy = OnCpu(dy), cdx = OnCpu(dx0), cdw = OnCpu(dw0);
    cpu_.RmsNormBackward(cdy.view(), cx.view(), cw.view(), cr.view(), rows,
                         cols, cdx.view(), cdw.view());
    DeviceBuffer gdy = OnGpu(dy), gdx = OnGpu(dx0), gdw = OnGpu(dw0, kF32);
    gpu_->RmsNormBackward(gdy.view(), gx.view(), gw.view(), gr.view(), rows,
                          cols, gdx.view(), gdw.view());
    EXPECT_LE(RelativeError(FromGpu(gdx), FromCpu(cdx)), 5e-3) << rows;
    EXPECT_LE(RelativeError(FromGpu(gdw), FromCpu(cdw)), 1e-4) << rows;
  }
}

TEST_F(CudaKernelTest, VocabularyParallelEmbedding) {
  const int64_t n = 77, vocab_begin = 20, vocab_rows = 50, hidden = 64;
  const std::vector<int32_t> tokens = RandomInts(n, 1, 0, 99);  // some outside
  const std::vector<float> table = RandomBf16Values(vocab_rows * hidden, 2);
  DeviceBuffer ct = UploadInts(cpu_, tokens), cw = OnCpu(table),
               co = CpuZeros(n * hidden);
  cpu_.EmbeddingForward(ct.view(), cw.view(), n, vocab_begin, vocab_rows,
                        hidden, co.view());
  DeviceBuffer gt = UploadInts(*gpu_, tokens), gw = OnGpu(table),
               go = GpuZeros(n * hidden, kBF16);
  gpu_->EmbeddingForward(gt.view(), gw.view(), n, vocab_begin, vocab_rows,
                         hidden, go.view());
  EXPECT_EQ(FromGpu(go), FromCpu(co));  // rows copied exactly

  const std::vector<float> dout = RandomBf16Values(n * hidden, 3);
  const std::vector<float> dt0 = RandomBf16Values(vocab_rows * hidden, 4);
  DeviceBuffer cd = OnCpu(dout), cdt = OnCpu(dt0);
  cpu_.EmbeddingBackward(ct.view(), cd.view(), n, vocab_begin, vocab_rows,
                         hidden, cdt.view());
  DeviceBuffer gd = OnGpu(dout), gdt = OnGpu(dt0, kF32);
  gpu_->EmbeddingBackward(gt.view(), gd.view(), n, vocab_begin, vocab_rows,
                          hidden, gdt.view());
  EXPECT_LE(RelativeError(FromGpu(gdt), FromCpu(cdt)), 1e-6);
}

TEST_F(CudaKernelTest, RopeOnTheFusedQkvRows) {
  const int64_t tokens = 40, heads = 4, kv_heads = 2, hd = 16;
  const int64_t row = (heads + 2 * kv_heads) * hd;
  for (float theta : {10000.0f, 500000.0f}) {
    const std::vector<float> qkv = RandomBf16Values(tokens * row, 1);
    const std::vector<int32_t> pos = RandomInts(tokens, 2, 0, 100000);
    DeviceBuffer cqkv = OnCpu(qkv), cp = UploadInts(cpu_, pos);
    DeviceBuffer cq = CpuZeros(tokens * heads * hd),
                 ck = CpuZeros(tokens * kv_heads * hd),
                 cv = CpuZeros(tokens * kv_heads * hd);
    cpu_.RopeQkvForward(cqkv.view(), cp.view(), tokens, heads, kv_heads, hd,
                        theta, cq.view(), ck.view(), cv.view());
    DeviceBuffer gqkv = OnGpu(qkv), gp = UploadInts(*gpu_, pos);
    DeviceBuffer gq = GpuZeros(tokens * heads * hd, kBF16),
                 gk = GpuZeros(tokens * kv_heads * hd, kBF16),
                 gv = GpuZeros(tokens * kv_heads * hd, kBF16);
    gpu_->RopeQkvForward(gqkv.view(), gp.view(), tokens, heads, kv_heads, hd,
                         theta, gq.view(), gk.view(), gv.view());
    EXPECT_LE(RelativeError(FromGpu(gq), FromCpu(cq)), 5e-3) << theta;
    EXPECT_LE(RelativeError(FromGpu(gk), FromCpu(ck)), 5e-3) << theta;
    EXPECT_EQ(FromGpu(gv), FromCpu(cv));

    // Backward from f32 and from bf16 gradients.
    const std::vector<float> dq = RandomBf16Values(tokens * heads * hd, 3);
    const std::vector<float> dk = RandomBf16Values(tokens * kv_heads * hd, 4);
    const std::vector<float> dv = RandomBf16Values(tokens * kv_heads * hd, 5);
    DeviceBuffer cdq = OnCpu(dq), cdk = OnCpu(dk), cdv = OnCpu(dv),
                 cdqkv = CpuZeros(tokens * row);
    cpu_.RopeQkvBackward(cdq.view(), cdk.view(), cdv.view(), cp.view(), tokens,
                         heads, kv_heads, hd, theta, cdqkv.view());
    for (DType t : {kF32, kBF16}) {
      DeviceBuffer gdq = OnGpu(dq, t), gdk = OnGpu(dk, t), gdv = OnGpu(dv, t),
                   gdqkv = GpuZeros(tokens * row, kBF16);
      gpu_->RopeQkvBackward(gdq.view(), gdk.view(), gdv.view(), gp.view(),
                            tokens, heads, kv_heads, hd, theta, gdqkv.view());
      EXPECT_LE(RelativeError(FromGpu(gdqkv), FromCpu(cdqkv)), 5e-3)
          << theta << " " << DTypeName(t);
    }
  }
}

TEST_F(CudaKernelTest, SwiGlu) {
  const int64_t tokens = 33, ffn = 300;
  const std::vector<float> gu = RandomBf16Values(tokens * 2 * ffn, 1, -4, 4);
  DeviceBuffer cgu = OnCpu(gu), co = CpuZeros(tokens * ffn);
  cpu_.SwiGluForward(cgu.view(), tokens, ffn, co.view());
  DeviceBuffer ggu = OnGpu(gu), go = GpuZeros(tokens * ffn, kBF16);
  gpu_->SwiGluForward(ggu.view(), tokens, ffn, go.view());
  EXPECT_LE(RelativeError(FromGpu(go), FromCpu(co)), 5e-3);

  const std::vector<float> dout = RandomBf16Values(tokens * ffn, 2);
  DeviceBuffer cd = OnCpu(dout), cdgu = CpuZeros(tokens * 2 * ffn);
  cpu_.SwiGluBackward(cd.view(), cgu.view(), tokens, ffn, cdgu.view());
  DeviceBuffer gd = OnGpu(dout), gdgu = GpuZeros(tokens * 2 * ffn, kBF16);
  gpu_->SwiGluBackward(gd.view(), ggu.view(), tokens, ffn, gdgu.view());
  EXPECT_LE(RelativeError(FromGpu(gdgu), FromCpu(cdgu)), 5e-3);
}

TEST_F(CudaKernelTest, VocabularyParallelCrossEntropy) {
  const int64_t tokens = 37, vocab_begin = 100, vocab_rows = 300;
  const float grad_scale = 1.0f / tokens;
  const std::vector<int32_t> targets = RandomInts(tokens, 1, 0, 499);
  for (DType logits_type : {kF32, kBF16}) {
    const std::vector<float> logits =
        RandomBf16Values(tokens * vocab_rows, 2, -8, 8);
    DeviceBuffer cl = OnCpu(logits), ct = UploadInts(cpu_, targets);
    DeviceBuffer cmax = CpuZeros(tokens), cstats = CpuZeros(2 * tokens),
                 closs = CpuZeros(tokens), cd = CpuZeros(tokens * vocab_rows);
    cpu_.LogitsRowMax(cl.view(), tokens, vocab_rows, cmax.view());
    cpu_.LogitsSumExpAndTarget(cl.view(), ct.view(), cmax.view(), tokens,
                               vocab_begin, vocab_rows, cstats.view());
    cpu_.CrossEntropyBackward(cl.view(), ct.view(), cmax.view(), cstats.view(),
                              tokens, vocab_begin, vocab_rows, grad_scale,
                              closs.view(), cd.view());
    DeviceBuffer gl = OnGpu(logits, logits_type),
                 gt = UploadInts(*gpu_, targets);
    DeviceBuffer gmax = GpuZeros(tokens, kF32),
                 gstats = GpuZeros(2 * tokens, kF32),
                 gloss = GpuZeros(tokens, kF32);
    gpu_->LogitsRowMax(gl.view(), tokens, vocab_rows, gmax.view());
    EXPECT_EQ(FromGpu(gmax), FromCpu(cmax));
    gpu_->LogitsSumExpAndTarget(gl.view(), gt.view(), gmax.view(), tokens,
                                vocab_begin, vocab_rows, gstats.view());
    const std::vector<float> gs = FromGpu(gstats), cs = FromCpu(cstats);
    EXPECT_LE(
        RelativeError(std::vector<float>(gs.begin(), gs.begin() + tokens),
                      std::vector<float>(cs.begin(), cs.begin() + tokens)),
        1e-5);
    EXPECT_EQ(std::vector<float>(gs.begin() + tokens, gs.end()),
              std::vector<float>(cs.begin() + tokens, cs.end()));
    for (DType grad_type : {kF32, kBF16}) {
      DeviceBuffer gd = GpuZeros(tokens * vocab_rows, grad_type);
      gpu_->CrossEntropyBackward(gl.view(), gt.view(), gmax.view(),
                                 gstats.view(), tokens, vocab_begin, vocab_rows,
                                 grad_scale, gloss.view(), gd.view());
      EXPECT_LE(RelativeError(FromGpu(gloss), FromCpu(closs)), 1e-5);
      EXPECT_LE(RelativeError(FromGpu(gd), FromCpu(cd)),
                grad_type == kF32 ? 1e-5 : 5e-3)
          << DTypeName(logits_type) << " -> " << DTypeName(grad_type);
    }
    // The gradient may overwrite the logits.
    gpu_->CrossEntropyBackward(gl.view(), gt.view(), gmax.view(), gstats.view(),
                               tokens, vocab_begin, vocab_rows, grad_scale,
                               gloss.view(), gl.view());
    EXPECT_LE(RelativeError(FromGpu(gl), FromCpu(cd)),
              logits_type == kF32 ? 1e-5 : 5e-3);
  }
}

TEST_F(CudaKernelTest, AdamW) {
  const int64_t n = 1001;
  const std::vector<float> w = RandomBf16Values(n, 1);
  const std::vector<float> g = RandomBf16Values(n, 2, -1e-2, 1e-2);
  const std::vector<float> m = RandomBf16Values(n, 3, -1e-3, 1e-3);
  const std::vector<float> v = RandomBf16Values(n, 4, 0, 1e-4);
  for (bool decay : {true, false}) {
    const AdamWConfig config{.lr = 1e-3f, .step = 3};
    DeviceBuffer cw = OnCpu(w), cg = OnCpu(g), cm = OnCpu(m), cv = OnCpu(v);
    cpu_.AdamW(config, decay, cw.view(), cg.view(), cm.view(), cv.view(), n);
    DeviceBuffer gw = OnGpu(w, kF32), gg = OnGpu(g, kF32), gm = OnGpu(m, kF32),
                 gv = OnGpu(v, kF32);
    gpu_->AdamW(config, decay, gw.view(), gg.view(), gm.view(), gv.view(), n);
    EXPECT_LE(RelativeError(FromGpu(gw), FromCpu(cw)), 1e-6) << decay;
    EXPECT_LE(RelativeError(FromGpu(gm), FromCpu(cm)), 1e-6) << decay;
    EXPECT_LE(RelativeError(FromGpu(gv), FromCpu(cv)), 1e-6) << decay;
  }
}

// ---- Attention ------------------------------------------------------------

struct AttentionRun {
  std::vector<float> out, lse;
};

class CudaAttentionTest : public CudaKernelTest {
 protected:
  // One forward call (or a merge into `running`) on both backends, with
  // the same inputs; returns (gpu, cpu).
  std::pair<AttentionRun, AttentionRun> Forward(
      const AttentionShape& s, const std::vector<float>& q,
      const std::vector<float>& k, const std::vector<float>& v,
      const std::vector<int32_t>& q_pos, const std::vector<int32_t>& k_pos,
      bool accumulate, const std::pair<AttentionRun, AttentionRun>* running,
      DType out_type = DType::kBF16) {
    const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
    const int64_t rows = s.batch * s.heads * s.q_len;
    DeviceBuffer cq = OnCpu(q), ck = OnCpu(k), cv = OnCpu(v),
                 cqp = UploadInts(cpu_, q_pos), ckp = UploadInts(cpu_, k_pos);
    DeviceBuffer cout =
        running ? OnCpu(running->second.out) : CpuZeros(q_numel);
    DeviceBuffer clse = running ? OnCpu(running->second.lse) : CpuZeros(rows);
    cpu_.AttentionForward(s, cq.view(), ck.view(), cv.view(), cqp.view(),
                          ckp.view(), accumulate, cout.view(), clse.view());
    DeviceBuffer gq = OnGpu(q), gk = OnGpu(k), gv = OnGpu(v),
                 gqp = UploadInts(*gpu_, q_pos), gkp = UploadInts(*gpu_, k_pos);
    DeviceBuffer gout = running ? OnGpu(running->first.out, out_type)
                                : GpuZeros(q_numel, out_type);
    DeviceBuffer glse =
        running ? OnGpu(running->first.lse, kF32) : GpuZeros(rows, kF32);
    gpu_->AttentionForward(s, gq.view(), gk.view(), gv.view(), gqp.view(),
                           gkp.view(), accumulate, gout.view(), glse.view());
    return {{FromGpu(gout), FromGpu(glse)}, {FromCpu(cout), FromCpu(clse)}};
  }
};

TEST_F(CudaAttentionTest, CausalForwardAcrossShapes) {
  const std::vector<AttentionShape> shapes = {
      {2, 100, 100, 4, 2, 16},   // GQA, lengths not multiples of the tiles
      {1, 64, 64, 8, 8, 32},     // MHA, one tile
      {2, 130, 130, 4, 1, 64},   // MQA
      {1, 200, 200, 2, 2, 128},  // Llama's head_dim
      {1, 70, 70, 3, 3, 80},    {1, 65, 65, 2, 1, 96}};
  for (const AttentionShape& s : shapes) {
    const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
    const int64_t kv_numel = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    const std::vector<float> q = RandomBf16Values(q_numel, 1, -2, 2);
    const std::vector<float> k = RandomBf16Values(kv_numel, 2, -2, 2);
    const std::vector<float> v = RandomBf16Values(kv_numel, 3);
    auto [gpu, cpu] =
        Forward(s, q, k, v, Iota(s.q_len), Iota(s.kv_len), false, nullptr);
    EXPECT_LE(RelativeError(gpu.out, cpu.out), 1e-2)
        << "head_dim " << s.head_dim;
    EXPECT_LE(MaxAbsDiff(gpu.lse, cpu.lse), 1e-4) << "head_dim " << s.head_dim;
  }
}

TEST_F(CudaAttentionTest, F32OutputAndEmptyRows) {
  // Queries at positions 0..15 see no key at 100..163: lse -inf, out 0.
  const AttentionShape s{1, 16, 64, 2, 1, 32};
  const std::vector<float> q = RandomBf16Values(16 * 2 * 32, 1);
  const std::vector<float> k = RandomBf16Values(64 * 32, 2);
  const std::vector<float> v = RandomBf16Values(64 * 32, 3);
  auto [gpu, cpu] =
      Forward(s, q, k, v, Iota(16), Iota(64, 100), false, nullptr, DType::kF32);
  for (float l : gpu.lse) EXPECT_EQ(l, -std::numeric_limits<float>::infinity());
  for (float o : gpu.out) EXPECT_EQ(o, 0.0f);
  EXPECT_EQ(gpu.lse, cpu.lse);
}

// Ring attention's block form: cp = 2 with load-balanced chunks; the local
// block first, then the peer's merged in.
TEST_F(CudaAttentionTest, RingBlocksMergeLikeTheCpu) {
  const int64_t seq = 256, cp = 2;
  const std::vector<int32_t> mine = ContextParallelPositions(seq, cp, 0);
  const std::vector<int32_t> peer = ContextParallelPositions(seq, cp, 1);
  const AttentionShape s{2, 128, 128, 4, 2, 64};
  const int64_t q_numel = 2 * 128 * 4 * 64, kv_numel = 2 * 128 * 2 * 64;
  const std::vector<float> q = RandomBf16Values(q_numel, 1, -2, 2);
  const std::vector<float> k0 = RandomBf16Values(kv_numel, 2, -2, 2);
  const std::vector<float> v0 = RandomBf16Values(kv_numel, 3);
  const std::vector<float> k1 = RandomBf16Values(kv_numel, 4, -2, 2);
  const std::vector<float> v1 = RandomBf16Values(kv_numel, 5);
  for (DType out_type : {DType::kBF16, DType::kF32}) {
    auto first = Forward(s, q, k0, v0, mine, mine, false, nullptr, out_type);
    // The GPU merges into its own running rows, the CPU into its own.
    auto merged = Forward(s, q, k1, v1, mine, peer, true, &first, out_type);
    EXPECT_LE(RelativeError(merged.first.out, merged.second.out), 1e-2)
        << DTypeName(out_type);
    EXPECT_LE(MaxAbsDiff(merged.first.lse, merged.second.lse), 1e-4)
        << DTypeName(out_type);
  }
}

TEST_F(CudaAttentionTest, BackwardAddsIntoTheGradients) {
  const std::vector<AttentionShape> shapes = {
      {2, 100, 100, 4, 2, 16}, {1, 130, 130, 4, 1, 64}, {1, 96, 96, 2, 2, 128}};
  for (const AttentionShape& s : shapes) {
    const int64_t q_numel = s.batch * s.q_len * s.heads * s.head_dim;
    const int64_t kv_numel = s.batch * s.kv_len * s.kv_heads * s.head_dim;
    const int64_t rows = s.batch * s.heads * s.q_len;
    const std::vector<float> q = RandomBf16Values(q_numel, 1, -2, 2);
    const std::vector<float> k = RandomBf16Values(kv_numel, 2, -2, 2);
    const std::vector<float> v = RandomBf16Values(kv_numel, 3);
    const std::vector<int32_t> pos = Iota(s.q_len);
    // The CPU's forward, its out rounded to bf16, is both backwards' input.
    DeviceBuffer cq = OnCpu(q), ck = OnCpu(k), cv = OnCpu(v),
                 cp = UploadInts(cpu_, pos), cout = CpuZeros(q_numel),
                 clse = CpuZeros(rows);
    cpu_.AttentionForward(s, cq.view(), ck.view(), cv.view(), cp.view(),
                          cp.view(), false, cout.view(), clse.view());
    std::vector<float> out = FromCpu(cout);
    for (float& o : out) o = Bf16ToFloat(FloatToBf16(o));
    const std::vector<float> lse = FromCpu(clse);
    const std::vector<float> dout = RandomBf16Values(q_numel, 4);
    const std::vector<float> dq0 = RandomBf16Values(q_numel, 5);
    const std::vector<float> dk0 = RandomBf16Values(kv_numel, 6);
    const std::vector<float> dv0 = RandomBf16Values(kv_numel, 7);
    DeviceBuffer co = OnCpu(out), cdo = OnCpu(dout), cdq = OnCpu(dq0),
                 cdk = OnCpu(dk0), cdv = OnCpu(dv0);
    cpu_.AttentionBackward(s, cdo.view(), cq.view(), ck.view(), cv.view(),
                           co.view(), clse.view(), cp.view(), cp.view(),
                           cdq.view(), cdk.view(), cdv.view());
    DeviceBuffer gq = OnGpu(q), gk = OnGpu(k), gv = OnGpu(v),
                 gp = UploadInts(*gpu_, pos), go = OnGpu(out),
                 glse = OnGpu(lse, kF32), gdo = OnGpu(dout);
    DeviceBuffer gdq = OnGpu(dq0, kF32), gdk = OnGpu(dk0, kF32),
                 gdv = OnGpu(dv0, kF32);
    gpu_->AttentionBackward(s, gdo.view(), gq.view(), gk.view(), gv.view(),
                            go.view(), glse.view(), gp.view(), gp.view(),
                            gdq.view(), gdk.view(), gdv.view());
    // Compare the added part, so the initial values do not hide errors.
    auto added = [](std::vector<float> total, const std::vector<float>& init) {
      for (size_t i = 0; i < total.size(); ++i) total[i] -= init[i];
      return total;
    };
    EXPECT_LE(RelativeError(added(FromGpu(gdq), dq0), added(FromCpu(cdq), dq0)),
              2e-2)
        << "dq, head_dim " << s.head_dim;
    EXPECT_LE(RelativeError(added(FromGpu(gdk), dk0), added(FromCpu(cdk), dk0)),
              2e-2)
        << "dk, head_dim " << s.head_dim;
    EXPECT_LE(RelativeError(added(FromGpu(gdv), dv0), added(FromCpu(cdv), dv0)),
              2e-2)
        << "dv, head_dim " << s.head_dim;
  }
}

}  // namespace
}  // namespace tessera::executor
