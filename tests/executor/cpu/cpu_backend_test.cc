#include "executor/cpu/cpu_backend.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/usable_cpus.h"
#include "executor/cpu/adamw.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/rmsnorm.h"
#include "executor/cpu/rope.h"
#include "executor/cpu/swiglu.h"
#include "gtest/gtest.h"
#include "tests/core/scoped_cpu_affinity.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor {
namespace {

using cpu_test::Cast;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

// ---- Memory ---------------------------------------------------------------

TEST(CpuBackendMemoryTest, AllocationsAreZeroedAlignedAndCounted) {
  CpuBackend backend;
  EXPECT_EQ(backend.name(), "cpu");
  EXPECT_EQ(backend.compute_dtype(), DType::kF32);
  absl::StatusOr<DeviceBuffer> a = backend.Allocate(1000, DType::kF32, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<DeviceBuffer> ids = backend.Allocate(7, DType::kI32, "ids");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->view().data) % 64, 0u);
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(a->view().data_as<float>()[i], 0);
  EXPECT_EQ(ids->view().dtype, DType::kI32);
  EXPECT_EQ(backend.bytes_in_use(), 4000 + 28);
  EXPECT_EQ(backend.peak_bytes(), 4028);
  a->Reset();
  EXPECT_EQ(backend.bytes_in_use(), 28);
  EXPECT_EQ(backend.peak_bytes(), 4028);
  backend.ResetPeak();
  EXPECT_EQ(backend.peak_bytes(), 28);
  {
    DeviceBuffer moved = std::move(*ids);
    EXPECT_TRUE(ids->empty());
    EXPECT_EQ(backend.bytes_in_use(), 28);
  }
  EXPECT_EQ(backend.bytes_in_use(), 0);
  absl::StatusOr<DeviceBuffer> none = backend.Allocate(0, DType::kF32, "none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(CpuBackendMemoryTest, OverTheLimitIsResourceExhaustedAndChangesNothing) {
  CpuBackend backend({.memory_limit_bytes = 10000});
  absl::StatusOr<DeviceBuffer> a = backend.Allocate(2000, DType::kF32, "a");
  ASSERT_TRUE(a.ok());
  absl::StatusOr<DeviceBuffer> b =
      backend.Allocate(1000, DType::kF32, "layers.0.mlp.gate_up");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(b.status().message());
  for (const char* part :
       {"layers.0.mlp.gate_up", "4000 bytes", "8000", "12000", "10000"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  }
  EXPECT_EQ(backend.bytes_in_use(), 8000);
  EXPECT_EQ(backend.peak_bytes(), 8000);
  // Exactly at the limit is allowed.
  absl::StatusOr<DeviceBuffer> c = backend.Allocate(500, DType::kF32, "c");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(backend.bytes_in_use(), 10000);
  // Raising the limit (or 0 = none) lets it through.
  backend.SetMemoryLimit(0);
  EXPECT_TRUE(backend.Allocate(1000, DType::kF32, "b").ok());
  backend.SetMemoryLimit(9000);  // below what is in use: new ones fail
  EXPECT_FALSE(backend.Allocate(1, DType::kF32, "d").ok());
}

TEST(CpuBackendMemoryTest, RejectsBf16AndNegativeSizes) {
  CpuBackend backend;
  absl::StatusOr<DeviceBuffer> b = backend.Allocate(8, DType::kBF16, "w");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("bf16"), std::string::npos);
  EXPECT_FALSE(backend.Allocate(-1, DType::kF32, "neg").ok());
  EXPECT_EQ(backend.bytes_in_use(), 0);
}

// Eight threads allocate and free against one limit: the limit holds at
// every moment and the counters end where they began.
TEST(CpuBackendMemoryTest, CountersAreThreadSafe) {
  constexpr int64_t kBytes = 4 * 256;
  constexpr int64_t kLimit = 20 * kBytes;
  CpuBackend backend({.memory_limit_bytes = kLimit});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        std::vector<DeviceBuffer> held;
        for (int j = 0; j < 4; ++j) {
          absl::StatusOr<DeviceBuffer> b =
              backend.Allocate(256, DType::kF32, "x");
          if (b.ok()) {
            held.push_back(std::move(*b));
          } else {
            ++failures;
          }
          if (backend.bytes_in_use() > kLimit) std::abort();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(backend.bytes_in_use(), 0);
  EXPECT_LE(backend.peak_bytes(), kLimit);
  EXPECT_GE(backend.peak_bytes(), kBytes);
}

TEST(CpuBackendTest, BlasThreadsFollowTheLiveBackends) {
  const int hardware = UsableCpuCount();
  {
    CpuBackend one;
    EXPECT_EQ(cpu::BlasThreads(), hardware);
    {
      CpuBackend two;
      EXPECT_EQ(cpu::BlasThreads(), std::max(1, hardware / 2));
    }
    EXPECT_EQ(cpu::BlasThreads(), hardware);
    CpuBackend pinned({.blas_threads = 3});
    EXPECT_EQ(cpu::BlasThreads(), 3);
  }
}

// A process bound to fewer CPUs than the machine has (taskset, a Slurm
// task's binding, a second agent on the host) runs that many BLAS threads,
// not one per CPU of the machine.
TEST(CpuBackendTest, BlasThreadsFollowTheAffinityMask) {
  testing_util::ScopedOneCpuAffinity one;
  ASSERT_TRUE(one.ok());
  CpuBackend backend;
  EXPECT_EQ(cpu::BlasThreads(), 1);
}

// ---- Elementwise and copies -----------------------------------------------

class CpuBackendOpsTest : public testing::Test {
 protected:
  template <typename T>
  DeviceBuffer Upload(const std::vector<T>& host, DType dtype) {
    absl::StatusOr<DeviceBuffer> b =
        backend_.Allocate(static_cast<int64_t>(host.size()), dtype, "test");
    EXPECT_TRUE(b.ok()) << b.status();
    backend_.CopyFromHost(host.data(), b->view());
    return std::move(*b);
  }
  DeviceBuffer F32(const std::vector<float>& host) {
    return Upload(host, DType::kF32);
  }
  DeviceBuffer I32(const std::vector<int32_t>& host) {
    return Upload(host, DType::kI32);
  }
  DeviceBuffer Zeros(int64_t n) {
    return *backend_.Allocate(n, DType::kF32, "z");
  }
  std::vector<float> Download(const DeviceBuffer& b) {
    std::vector<float> host(b.view().numel);
    backend_.Synchronize();
    backend_.CopyToHost(b.view(), host.data());
    return host;
  }

  CpuBackend backend_;
};

TEST_F(CpuBackendOpsTest, ElementwiseByHand) {
  DeviceBuffer a = F32({1, -2, 3, 0.5f});
  DeviceBuffer b = F32({10, 20, 30, 40});
  backend_.Add(a.view(), b.view(), a.view(), 4);  // out aliases a
  EXPECT_EQ(Download(a), (std::vector<float>{11, 18, 33, 40.5f}));
  backend_.Scale(a.view(), 3, 2.f);
  EXPECT_EQ(Download(a), (std::vector<float>{22, 36, 66, 40.5f}));
  EXPECT_DOUBLE_EQ(backend_.SumSquares(b.view(), 4), 100 + 400 + 900 + 1600);
  backend_.Fill(b.view(), 2, -1.5f);
  EXPECT_EQ(Download(b), (std::vector<float>{-1.5f, -1.5f, 30, 40}));
  DeviceBuffer c = Zeros(4);
  backend_.Copy(b.view(), c.view(), 3);
  EXPECT_EQ(Download(c), (std::vector<float>{-1.5f, -1.5f, 30, 0}));
}

TEST_F(CpuBackendOpsTest, CopyConvertsBetweenF32AndBf16) {
  // 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7: rounds to even.
  const std::vector<float> src = {1.0f, 1.0f + 1.0f / 256, -3.140625f, 65536.f};
  DeviceBuffer s = F32(src);
  std::vector<uint16_t> bf(4);
  Tensor bf_view{bf.data(), DType::kBF16, 4};
  backend_.Copy(s.view(), bf_view, 4);
  EXPECT_EQ(bf[0], 0x3F80);
  EXPECT_EQ(bf[1], 0x3F80);
  EXPECT_EQ(bf[2], 0xC049);  // -3.140625 = -1.5703125 * 2
  DeviceBuffer back = Zeros(4);
  backend_.Copy(bf_view, back.view(), 4);
  EXPECT_EQ(Download(back), (std::vector<float>{1, 1, -3.140625f, 65536.f}));
}

TEST_F(CpuBackendOpsTest, GemmLeadingDimensionsFollowTheContract) {
  const int64_t m = 5, n = 7, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const auto a = RandomVector<float>(m * k, 1);
      const auto b = RandomVector<float>(k * n, 2);
      const auto c0 = RandomVector<float>(m * n, 3);
      std::vector<double> want(m * n);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t p = 0; p < k; ++p) {
            dot += double(ta ? a[p * m + i] : a[i * k + p]) *
                   (tb ? b[j * k + p] : b[p * n + j]);
          }
          want[i * n + j] = 0.5 * dot + 2.0 * c0[i * n + j];
        }
      }
      DeviceBuffer da = F32(a), db = F32(b), dc = F32(c0);
      backend_.Gemm(ta, tb, m, n, k, 0.5f, da.view(), db.view(), 2.f,
                    dc.view());
      ExpectAllNear(Download(dc), want, 1e-6, 1e-6,
                    testing::Message() << "ta=" << ta << " tb=" << tb);
    }
  }
}

// ---- The float backend against the double kernels -------------------------

TEST_F(CpuBackendOpsTest, RmsNormAndSwiGluTrackDouble) {
  const int64_t rows = 9, cols = 40;
  const auto x = RandomVector<float>(rows * cols, 1);
  const auto w = RandomVector<float>(cols, 2, 0.5, 1.5);
  const auto dy = RandomVector<float>(rows * cols, 3);
  DeviceBuffer dx_ = F32(x), dw_ = F32(w), ddy = F32(dy);
  DeviceBuffer y = Zeros(rows * cols), rstd = Zeros(rows);
  DeviceBuffer dx = Zeros(rows * cols), dweight = Zeros(cols);
  backend_.RmsNormForward(dx_.view(), dw_.view(), rows, cols, 1e-5f, y.view(),
                          rstd.view());
  backend_.RmsNormBackward(ddy.view(), dx_.view(), dw_.view(), rstd.view(),
                           rows, cols, dx.view(), dweight.view());
  std::vector<double> y_d(rows * cols), rstd_d(rows), dx_d(rows * cols, 0),
      dw_d(cols, 0);
  const auto xd = Cast<double>(x), wd = Cast<double>(w), dyd = Cast<double>(dy);
  cpu::RmsNormForward<double>(xd.data(), wd.data(), rows, cols, 1e-5,
                              y_d.data(), rstd_d.data());
  cpu::RmsNormBackward<double>(dyd.data(), xd.data(), wd.data(), rstd_d.data(),
                               rows, cols, dx_d.data(), dw_d.data());
  ExpectAllNear(Download(y), y_d, 1e-6, 1e-5, "rmsnorm y");
  ExpectAllNear(Download(dx), dx_d, 1e-6, 1e-5, "rmsnorm dx");
  ExpectAllNear(Download(dweight), dw_d, 1e-5, 1e-5, "rmsnorm dweight");

  const int64_t tokens = 6, ffn = 50;
  const auto gu = RandomVector<float>(tokens * 2 * ffn, 4, -6, 6);
  const auto dout = RandomVector<float>(tokens * ffn, 5);
  DeviceBuffer dgu = F32(gu), ddout = F32(dout), out = Zeros(tokens * ffn),
               dgate_up = Zeros(tokens * 2 * ffn);
  backend_.SwiGluForward(dgu.view(), tokens, ffn, out.view());
  backend_.SwiGluBackward(ddout.view(), dgu.view(), tokens, ffn,
                          dgate_up.view());
  const auto gud = Cast<double>(gu), doutd = Cast<double>(dout);
  std::vector<double> out_d(tokens * ffn), dgu_d(tokens * 2 * ffn);
  cpu::SwiGluForward<double>(gud.data(), tokens, ffn, out_d.data());
  cpu::SwiGluBackward<double>(doutd.data(), gud.data(), tokens, ffn,
                              dgu_d.data());
  ExpectAllNear(Download(out), out_d, 1e-6, 1e-5, "swiglu out");
  ExpectAllNear(Download(dgate_up), dgu_d, 1e-6, 1e-5, "swiglu dgate_up");
}

TEST_F(CpuBackendOpsTest, EmbeddingAndRopeTrackDouble) {
  const int64_t vocab_rows = 20, begin = 10, hidden = 8, n = 12;
  const auto table = RandomVector<float>(vocab_rows * hidden, 1);
  const auto tokens = cpu_test::RandomInts(n, 2, 0, 40);
  const auto dout = RandomVector<float>(n * hidden, 3);
  DeviceBuffer dtab = F32(table), dtok = I32(tokens), ddout = F32(dout);
  DeviceBuffer out = Zeros(n * hidden), dtable = Zeros(vocab_rows * hidden);
  backend_.EmbeddingForward(dtok.view(), dtab.view(), n, begin, vocab_rows,
                            hidden, out.view());
  backend_.EmbeddingBackward(dtok.view(), ddout.view(), n, begin, vocab_rows,
                             hidden, dtable.view());
  std::vector<double> out_d(n * hidden), dtable_d(vocab_rows * hidden, 0);
  const auto tabd = Cast<double>(table), doutd = Cast<double>(dout);
  cpu::EmbeddingForward<double>(tokens.data(), tabd.data(), n, begin,
                                vocab_rows, hidden, out_d.data());
  cpu::EmbeddingBackward<double>(tokens.data(), doutd.data(), n, begin,
                                 vocab_rows, hidden, dtable_d.data());
  ExpectAllNear(Download(out), out_d, 0, 0, "embedding out");
  ExpectAllNear(Download(dtable), dtable_d, 1e-6, 1e-6, "embedding dtable");

  const int64_t t = 5, heads = 4, kv = 2, d = 8, row = (heads + 2 * kv) * d;
  const auto qkv = RandomVector<float>(t * row, 4);
  const std::vector<int32_t> pos = {0, 1, 2, 1000, 4095};
  DeviceBuffer dqkv_in = F32(qkv), dpos = I32(pos);
  DeviceBuffer q = Zeros(t * heads * d), k = Zeros(t * kv * d),
               v = Zeros(t * kv * d), dqkv = Zeros(t * row);
  backend_.RopeQkvForward(dqkv_in.view(), dpos.view(), t, heads, kv, d, 10000.f,
                          q.view(), k.view(), v.view());
  backend_.RopeQkvBackward(q.view(), k.view(), v.view(), dpos.view(), t, heads,
                           kv, d, 10000.f, dqkv.view());
  std::vector<double> qd(t * heads * d), kd(t * kv * d), vd(t * kv * d);
  const auto qkvd = Cast<double>(qkv);
  cpu::RopeQkvForward<double>(qkvd.data(), pos.data(), t, heads, kv, d, 10000.0,
                              qd.data(), kd.data(), vd.data());
  ExpectAllNear(Download(q), qd, 1e-6, 1e-6, "rope q");
  ExpectAllNear(Download(k), kd, 1e-6, 1e-6, "rope k");
  ExpectAllNear(Download(v), vd, 0, 0, "rope v");
  ExpectAllNear(Download(dqkv), qkvd, 1e-6, 1e-6, "rope backward(forward)");
}

TEST_F(CpuBackendOpsTest, AttentionWithAccumulateTracksDouble) {
  const AttentionShape whole{2, 80, 80, 4, 2, 16};
  const auto q = RandomVector<float>(2 * 80 * 4 * 16, 1);
  const auto k = RandomVector<float>(2 * 80 * 2 * 16, 2);
  const auto v = RandomVector<float>(2 * 80 * 2 * 16, 3);
  const auto dout = RandomVector<float>(q.size(), 4);
  std::vector<int32_t> pos(80);
  for (int i = 0; i < 80; ++i) pos[i] = i;
  // Double reference: one call.
  const auto qd = Cast<double>(q), kd = Cast<double>(k), vd = Cast<double>(v),
             doutd = Cast<double>(dout);
  std::vector<double> out_d(q.size()), lse_d(2 * 4 * 80), dq_d(q.size(), 0),
      dk_d(k.size(), 0), dv_d(v.size(), 0);
  cpu::AttentionForward<double>(whole, qd.data(), kd.data(), vd.data(),
                                pos.data(), pos.data(), false, out_d.data(),
                                lse_d.data());
  cpu::AttentionBackward<double>(whole, doutd.data(), qd.data(), kd.data(),
                                 vd.data(), out_d.data(), lse_d.data(),
                                 pos.data(), pos.data(), dq_d.data(),
                                 dk_d.data(), dv_d.data());
  // Backend: the keys as two blocks of 40 (batch-major copies), merged.
  DeviceBuffer dq_in = F32(q), ddout = F32(dout), dpos = I32(pos);
  DeviceBuffer out = Zeros(q.size()), lse = Zeros(2 * 4 * 80),
               dq = Zeros(q.size());
  std::vector<float> dk(k.size()), dv(v.size());
  const int64_t row = 2 * 16;
  for (int blk = 0; blk < 2; ++blk) {
    AttentionShape s = whole;
    s.kv_len = 40;
    std::vector<float> kb(2 * 40 * row), vb(2 * 40 * row);
    for (int b = 0; b < 2; ++b) {
      std::copy_n(k.begin() + (b * 80 + blk * 40) * row, 40 * row,
                  kb.begin() + b * 40 * row);
      std::copy_n(v.begin() + (b * 80 + blk * 40) * row, 40 * row,
                  vb.begin() + b * 40 * row);
    }
    DeviceBuffer dkb = F32(kb), dvb = F32(vb);
    const Tensor kpos = dpos.view().Slice(blk * 40, 40);
    backend_.AttentionForward(s, dq_in.view(), dkb.view(), dvb.view(),
                              dpos.view(), kpos, blk > 0, out.view(),
                              lse.view());
  }
  for (int blk = 0; blk < 2; ++blk) {
    AttentionShape s = whole;
    s.kv_len = 40;
    std::vector<float> kb(2 * 40 * row), vb(2 * 40 * row);
    for (int b = 0; b < 2; ++b) {
      std::copy_n(k.begin() + (b * 80 + blk * 40) * row, 40 * row,
                  kb.begin() + b * 40 * row);
      std::copy_n(v.begin() + (b * 80 + blk * 40) * row, 40 * row,
                  vb.begin() + b * 40 * row);
    }
    DeviceBuffer dkb = F32(kb), dvb = F32(vb);
    DeviceBuffer gk = Zeros(kb.size()), gv = Zeros(vb.size());
    backend_.AttentionBackward(s, ddout.view(), dq_in.view(), dkb.view(),
                               dvb.view(), out.view(), lse.view(), dpos.view(),
                               dpos.view().Slice(blk * 40, 40), dq.view(),
                               gk.view(), gv.view());
    const auto gkh = Download(gk), gvh = Download(gv);
    for (int b = 0; b < 2; ++b) {
      std::copy_n(gkh.begin() + b * 40 * row, 40 * row,
                  dk.begin() + (b * 80 + blk * 40) * row);
      std::copy_n(gvh.begin() + b * 40 * row, 40 * row,
                  dv.begin() + (b * 80 + blk * 40) * row);
    }
  }
  ExpectAllNear(Download(out), out_d, 1e-5, 1e-5, "out");
  ExpectAllNear(Download(lse), lse_d, 1e-5, 1e-5, "lse");
  ExpectAllNear(Download(dq), dq_d, 1e-4, 1e-4, "dq");
  ExpectAllNear(dk, dk_d, 1e-4, 1e-4, "dk");
  ExpectAllNear(dv, dv_d, 1e-4, 1e-4, "dv");
}

// A self-causal block is the whole sequence: its backward writes dq, dk, dv
// (what they held is ignored), where a block of a ring adds.
TEST_F(CpuBackendOpsTest, ASelfCausalBackwardWritesTheGradients) {
  AttentionShape s{2, 24, 24, 4, 2, 8};
  const auto q = RandomVector<float>(2 * 24 * 4 * 8, 1);
  const auto k = RandomVector<float>(2 * 24 * 2 * 8, 2);
  const auto v = RandomVector<float>(2 * 24 * 2 * 8, 3);
  const auto dout = RandomVector<float>(q.size(), 4);
  std::vector<int32_t> pos(24);
  for (int i = 0; i < 24; ++i) pos[i] = i;
  DeviceBuffer dq_in = F32(q), dk_in = F32(k), dv_in = F32(v),
               ddout = F32(dout), dpos = I32(pos);
  DeviceBuffer out = Zeros(q.size()), lse = Zeros(2 * 4 * 24);
  backend_.AttentionForward(s, dq_in.view(), dk_in.view(), dv_in.view(),
                            dpos.view(), dpos.view(), false, out.view(),
                            lse.view());
  auto backward = [&](bool self_causal, float held) {
    s.self_causal = self_causal;
    DeviceBuffer dq = F32(std::vector<float>(q.size(), held)),
                 dk = F32(std::vector<float>(k.size(), held)),
                 dv = F32(std::vector<float>(v.size(), held));
    backend_.AttentionBackward(s, ddout.view(), dq_in.view(), dk_in.view(),
                               dv_in.view(), out.view(), lse.view(),
                               dpos.view(), dpos.view(), dq.view(), dk.view(),
                               dv.view());
    return std::vector<std::vector<float>>{Download(dq), Download(dk),
                                           Download(dv)};
  };
  const auto added_to_zero = backward(false, 0.0f);
  const auto written = backward(true, 7.0f);
  const auto added_to_seven = backward(false, 7.0f);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(written[g], added_to_zero[g]) << g;
    EXPECT_NE(added_to_seven[g], added_to_zero[g]) << g;
  }
}

TEST_F(CpuBackendOpsTest, CrossEntropyAndAdamWTrackDouble) {
  const int64_t tokens = 7, vocab = 300;
  const auto logits = RandomVector<float>(tokens * vocab, 1, -8, 8);
  const auto targets = cpu_test::RandomInts(tokens, 2, 0, vocab - 1);
  DeviceBuffer dl = F32(logits), dt = I32(targets);
  DeviceBuffer row_max = Zeros(tokens), stats = Zeros(2 * tokens),
               loss = Zeros(tokens);
  backend_.LogitsRowMax(dl.view(), tokens, vocab, row_max.view());
  backend_.LogitsSumExpAndTarget(dl.view(), dt.view(), row_max.view(), tokens,
                                 0, vocab, stats.view());
  backend_.CrossEntropyBackward(dl.view(), dt.view(), row_max.view(),
                                stats.view(), tokens, 0, vocab, 0.5f,
                                loss.view(), dl.view());  // in place
  const auto ld = Cast<double>(logits);
  std::vector<double> mx(tokens), st(2 * tokens), loss_d(tokens),
      dl_d(tokens * vocab);
  cpu::LogitsRowMax<double>(ld.data(), tokens, vocab, mx.data());
  cpu::LogitsSumExpAndTarget<double>(ld.data(), targets.data(), mx.data(),
                                     tokens, 0, vocab, st.data());
  cpu::CrossEntropyBackward<double>(ld.data(), targets.data(), mx.data(),
                                    st.data(), tokens, 0, vocab, 0.5,
                                    loss_d.data(), dl_d.data());
  ExpectAllNear(Download(loss), loss_d, 1e-5, 1e-6, "loss");
  ExpectAllNear(Download(dl), dl_d, 1e-7, 1e-5, "dlogits");

  const int64_t n = 100;
  const auto w = RandomVector<float>(n, 3), g = RandomVector<float>(n, 4);
  DeviceBuffer dw = F32(w), dg = F32(g), m = Zeros(n), v = Zeros(n);
  AdamWConfig config{.step = 1};
  backend_.AdamW(config, true, dw.view(), dg.view(), m.view(), v.view(), n);
  auto wd = Cast<double>(w);
  const auto gd = Cast<double>(g);
  std::vector<double> md(n, 0), vd(n, 0);
  cpu::AdamWStep<double>(config, true, wd.data(), gd.data(), md.data(),
                         vd.data(), n);
  ExpectAllNear(Download(dw), wd, 1e-6, 1e-6, "adamw w");
}

// ---- Misuse aborts with a message naming the kernel and argument ----------

TEST_F(CpuBackendOpsTest, MisuseAbortsWithANamedMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint16_t> bf(16);
  const Tensor bf16{bf.data(), DType::kBF16, 16};
  DeviceBuffer w = Zeros(4), y = Zeros(16), rstd = Zeros(4);
  EXPECT_DEATH(backend_.RmsNormForward(bf16, w.view(), 4, 4, 1e-5f, y.view(),
                                       rstd.view()),
               "RmsNormForward: x is bf16, expected f32 .bf16 is the CUDA");
  EXPECT_DEATH(backend_.RmsNormForward(y.view(), w.view(), 5, 4, 1e-5f,
                                       y.view(), rstd.view()),
               "RmsNormForward: x holds 16 elements, the shape needs 20");
  DeviceBuffer ids = I32({1, 2});
  EXPECT_DEATH(
      backend_.EmbeddingForward(y.view(), w.view(), 2, 0, 1, 4, y.view()),
      "EmbeddingForward: tokens is f32, expected i32");
  const AttentionShape bad{1, 4, 4, 3, 2, 2};
  EXPECT_DEATH(
      backend_.AttentionForward(bad, y.view(), y.view(), y.view(), ids.view(),
                                ids.view(), false, y.view(), y.view()),
      "shape.kv_heads = 2 does not divide shape.heads = 3");
}

}  // namespace
}  // namespace tessera::executor
