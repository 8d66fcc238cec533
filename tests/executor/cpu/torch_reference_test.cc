// The CPU kernels against PyTorch (Debian's python3-torch, float64 autograd),
// an implementation independent of ours: attention (GQA, causal by
// positions, rows without keys), vocabulary-sharded cross-entropy, RoPE in
// Hugging Face Llama's form, RMSNorm + SwiGLU. The inputs go to a temporary
// folder, torch_reference.py runs once for all cases, and each test compares
// its outputs: the double kernels tightly, the float CpuBackend loosely.
// Skipped when /usr/bin/python3 (or $TESSERA_TORCH_PYTHON) cannot import
// torch.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/rmsnorm.h"
#include "executor/cpu/rope.h"
#include "executor/cpu/swiglu.h"
#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

#ifndef TESSERA_TORCH_REFERENCE_SCRIPT
#error "the build defines TESSERA_TORCH_REFERENCE_SCRIPT (torch_reference.py)"
#endif

namespace tessera::executor {
namespace {

using cpu_test::Cast;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

// Debian's python3-torch is installed for /usr/bin/python3 only.
std::string Python() {
  const char* override_path = std::getenv("TESSERA_TORCH_PYTHON");
  return override_path != nullptr ? override_path : "/usr/bin/python3";
}

// ---- The cases: deterministic inputs shared by the writer and the tests ---

struct AttentionCase {
  AttentionShape shape;
  std::vector<double> q, k, v, dout;
  std::vector<int32_t> q_pos, k_pos;
};

std::vector<int32_t> Iota(int64_t n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

AttentionCase MakeAttentionCase(const std::string& name) {
  AttentionCase c;
  if (name == "attn_causal") {  // self-attention over two 64-token tiles
    c.shape = {2, 96, 96, 6, 2, 8};
    c.q_pos = Iota(96, 0);
    c.k_pos = Iota(96, 0);
  } else {  // "attn_offset": a ring step; query rows 40..63 see no key
    c.shape = {1, 96, 96, 4, 1, 16};
    c.q_pos = Iota(96, 40);
    c.k_pos = Iota(96, 64);
  }
  const AttentionShape& s = c.shape;
  const int64_t qn = s.batch * s.q_len * s.heads * s.head_dim;
  const int64_t kvn = s.batch * s.kv_len * s.kv_heads * s.head_dim;
  c.q = RandomVector<double>(qn, 1, -2, 2);
  c.k = RandomVector<double>(kvn, 2, -2, 2);
  c.v = RandomVector<double>(kvn, 3);
  c.dout = RandomVector<double>(qn, 4);
  return c;
}

struct CrossEntropyCase {
  int64_t tokens = 10, vocab = 37;
  double grad_scale = 0.1;
  std::vector<double> logits;
  std::vector<int32_t> targets;
};

CrossEntropyCase MakeCrossEntropyCase() {
  CrossEntropyCase c;
  c.logits = RandomVector<double>(c.tokens * c.vocab, 5, -6, 6);
  c.targets = cpu_test::RandomInts(c.tokens, 6, 0, c.vocab - 1);
  return c;
}

struct RopeCase {
  int64_t tokens = 6, heads = 4, kv_heads = 2, head_dim = 16;
  double theta = 500000;
  std::vector<double> qkv, dq, dk, dv;
  std::vector<int32_t> positions = {0, 1, 7, 300, 4095, 8191};
};

RopeCase MakeRopeCase() {
  RopeCase c;
  c.qkv = RandomVector<double>(
      c.tokens * (c.heads + 2 * c.kv_heads) * c.head_dim, 7);
  c.dq = RandomVector<double>(c.tokens * c.heads * c.head_dim, 8);
  c.dk = RandomVector<double>(c.tokens * c.kv_heads * c.head_dim, 9);
  c.dv = RandomVector<double>(c.tokens * c.kv_heads * c.head_dim, 10);
  return c;
}

struct NormMlpCase {
  int64_t rows = 5, cols = 24;
  double eps = 1e-5;
  std::vector<double> x, weight, dout;
};

NormMlpCase MakeNormMlpCase() {
  NormMlpCase c;
  c.x = RandomVector<double>(c.rows * c.cols, 11, -3, 3);
  c.weight = RandomVector<double>(c.cols, 12, 0.5, 2);
  c.dout = RandomVector<double>(c.rows * c.cols / 2, 13);
  return c;
}

// ---- Files ---------------------------------------------------------------

template <typename T>
void WriteF64(const std::string& path, const std::vector<T>& values) {
  const std::vector<double> d(values.begin(), values.end());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(d.data()),
          static_cast<std::streamsize>(d.size() * sizeof(double)));
}

std::vector<double> ReadF64(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                          std::istreambuf_iterator<char>());
  std::vector<double> d(bytes.size() / sizeof(double));
  std::memcpy(d.data(), bytes.data(), d.size() * sizeof(double));
  return d;
}

class CpuTorchReferenceTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string python = Python();
    if (std::system(absl::StrCat(python, " -c 'import torch' >/dev/null 2>&1")
                        .c_str()) != 0) {
      skip_reason_ =
          absl::StrCat(python,
                       " cannot import torch (install Debian's python3-torch); "
                       "the PyTorch cross-check is skipped");
      return;
    }
    std::string tmpl = testing::TempDir() + "tessera_torch_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      setup_error_ = "cannot create a temporary folder";
      return;
    }
    dir_ = tmpl + "/";
    std::ofstream cases(dir_ + "cases.txt");
    for (const char* name : {"attn_causal", "attn_offset"}) {
      const AttentionCase c = MakeAttentionCase(name);
      const AttentionShape& s = c.shape;
      WriteArgs(name, {{"batch", s.batch},
                       {"q_len", s.q_len},
                       {"kv_len", s.kv_len},
                       {"heads", s.heads},
                       {"kv_heads", s.kv_heads},
                       {"head_dim", s.head_dim}});
      Write(name, "q", c.q);
      Write(name, "k", c.k);
      Write(name, "v", c.v);
      Write(name, "dout", c.dout);
      Write(name, "q_pos", c.q_pos);
      Write(name, "k_pos", c.k_pos);
      cases << name << " attention\n";
    }
    const CrossEntropyCase ce = MakeCrossEntropyCase();
    WriteArgs("ce", {{"tokens", ce.tokens},
                     {"vocab", ce.vocab},
                     {"grad_scale", ce.grad_scale}});
    Write("ce", "logits", ce.logits);
    Write("ce", "targets", ce.targets);
    cases << "ce cross_entropy\n";
    const RopeCase rope = MakeRopeCase();
    WriteArgs("rope", {{"tokens", rope.tokens},
                       {"heads", rope.heads},
                       {"kv_heads", rope.kv_heads},
                       {"head_dim", rope.head_dim},
                       {"theta", rope.theta}});
    Write("rope", "qkv", rope.qkv);
    Write("rope", "positions", rope.positions);
    Write("rope", "dq", rope.dq);
    Write("rope", "dk", rope.dk);
    Write("rope", "dv", rope.dv);
    cases << "rope rope\n";
    const NormMlpCase nm = MakeNormMlpCase();
    WriteArgs("norm_mlp",
              {{"rows", nm.rows}, {"cols", nm.cols}, {"eps", nm.eps}});
    Write("norm_mlp", "x", nm.x);
    Write("norm_mlp", "weight", nm.weight);
    Write("norm_mlp", "dout", nm.dout);
    cases << "norm_mlp rmsnorm_swiglu\n";
    cases.close();
    const std::string command =
        absl::StrCat(python, " ", TESSERA_TORCH_REFERENCE_SCRIPT, " ", dir_,
                     " 2> ", dir_, "stderr.txt");
    if (std::system(command.c_str()) != 0) {
      std::ifstream err(dir_ + "stderr.txt");
      setup_error_ =
          absl::StrCat("torch_reference.py failed: ",
                       std::string((std::istreambuf_iterator<char>(err)),
                                   std::istreambuf_iterator<char>()));
    }
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) {
      std::system(absl::StrCat("rm -rf '", dir_, "'").c_str());
    }
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  static void WriteArgs(const std::string& name,
                        const std::map<std::string, double>& args) {
    std::ofstream f(dir_ + name + ".args");
    f.precision(17);
    for (const auto& [key, value] : args) f << key << " " << value << "\n";
  }
  template <typename T>
  static void Write(const std::string& name, const std::string& what,
                    const std::vector<T>& values) {
    WriteF64(dir_ + name + "." + what + ".f64", values);
  }
  static std::vector<double> Torch(const std::string& name,
                                   const std::string& what) {
    return ReadF64(dir_ + name + "." + what + ".f64");
  }

  static inline std::string skip_reason_;
  static inline std::string setup_error_;
  static inline std::string dir_;
};

// ---- Attention -------------------------------------------------------------

void CheckAttention(const std::string& name,
                    const std::map<std::string, std::vector<double>>& torch) {
  const AttentionCase c = MakeAttentionCase(name);
  const AttentionShape& s = c.shape;
  std::vector<double> out(c.q.size()), lse(s.batch * s.heads * s.q_len),
      dq(c.q.size(), 0), dk(c.k.size(), 0), dv(c.v.size(), 0);
  cpu::AttentionForward<double>(s, c.q.data(), c.k.data(), c.v.data(),
                                c.q_pos.data(), c.k_pos.data(), false,
                                out.data(), lse.data());
  cpu::AttentionBackward<double>(s, c.dout.data(), c.q.data(), c.k.data(),
                                 c.v.data(), out.data(), lse.data(),
                                 c.q_pos.data(), c.k_pos.data(), dq.data(),
                                 dk.data(), dv.data());
  ExpectAllNear(out, torch.at("out"), 1e-12, 1e-10, name + " out (double)");
  ExpectAllNear(lse, torch.at("lse"), 1e-12, 1e-10, name + " lse (double)");
  ExpectAllNear(dq, torch.at("dq"), 1e-12, 1e-10, name + " dq (double)");
  ExpectAllNear(dk, torch.at("dk"), 1e-12, 1e-10, name + " dk (double)");
  ExpectAllNear(dv, torch.at("dv"), 1e-12, 1e-10, name + " dv (double)");

  // The float backend, through Tensors.
  CpuBackend backend;
  auto up = [&](const auto& host, DType dtype) {
    DeviceBuffer b = *backend.Allocate(int64_t(host.size()), dtype, name);
    if (dtype == DType::kF32) {
      const std::vector<float> f(host.begin(), host.end());
      backend.CopyFromHost(f.data(), b.view());
    } else {
      backend.CopyFromHost(host.data(), b.view());
    }
    return b;
  };
  DeviceBuffer bq = up(c.q, DType::kF32), bk = up(c.k, DType::kF32),
               bv = up(c.v, DType::kF32), bdout = up(c.dout, DType::kF32),
               bqp = up(c.q_pos, DType::kI32), bkp = up(c.k_pos, DType::kI32);
  DeviceBuffer bout = up(out, DType::kF32), blse = up(lse, DType::kF32),
               bdq = up(std::vector<double>(dq.size()), DType::kF32),
               bdk = up(std::vector<double>(dk.size()), DType::kF32),
               bdv = up(std::vector<double>(dv.size()), DType::kF32);
  backend.AttentionForward(s, bq.view(), bk.view(), bv.view(), bqp.view(),
                           bkp.view(), false, bout.view(), blse.view());
  backend.AttentionBackward(s, bdout.view(), bq.view(), bk.view(), bv.view(),
                            bout.view(), blse.view(), bqp.view(), bkp.view(),
                            bdq.view(), bdk.view(), bdv.view());
  auto down = [&](const DeviceBuffer& b) {
    std::vector<float> h(b.view().numel);
    backend.CopyToHost(b.view(), h.data());
    return h;
  };
  ExpectAllNear(down(bout), torch.at("out"), 2e-5, 2e-5, name + " out (f32)");
  ExpectAllNear(down(blse), torch.at("lse"), 2e-5, 2e-5, name + " lse (f32)");
  ExpectAllNear(down(bdq), torch.at("dq"), 2e-4, 2e-4, name + " dq (f32)");
  ExpectAllNear(down(bdk), torch.at("dk"), 2e-4, 2e-4, name + " dk (f32)");
  ExpectAllNear(down(bdv), torch.at("dv"), 2e-4, 2e-4, name + " dv (f32)");
}

TEST_F(CpuTorchReferenceTest, AttentionGqaCausalMatchesTorch) {
  std::map<std::string, std::vector<double>> torch;
  for (const char* what : {"out", "lse", "dq", "dk", "dv"}) {
    torch[what] = Torch("attn_causal", what);
  }
  CheckAttention("attn_causal", torch);
}

TEST_F(CpuTorchReferenceTest, AttentionRowsWithoutKeysMatchTorch) {
  std::map<std::string, std::vector<double>> torch;
  for (const char* what : {"out", "lse", "dq", "dk", "dv"}) {
    torch[what] = Torch("attn_offset", what);
  }
  CheckAttention("attn_offset", torch);
}

// ---- Cross-entropy: three vocabulary shards combined as over tp ------------

TEST_F(CpuTorchReferenceTest, ShardedCrossEntropyMatchesTorch) {
  const CrossEntropyCase c = MakeCrossEntropyCase();
  const int64_t t = c.tokens;
  const std::vector<int64_t> cuts = {0, 10, 11, 37};
  std::vector<std::vector<double>> shard(3);
  std::vector<double> row_max(t, -INFINITY), stats(2 * t, 0), part(2 * t);
  for (int s = 0; s < 3; ++s) {
    const int64_t rows = cuts[s + 1] - cuts[s];
    for (int64_t i = 0; i < t; ++i) {
      shard[s].insert(shard[s].end(), c.logits.begin() + i * c.vocab + cuts[s],
                      c.logits.begin() + i * c.vocab + cuts[s + 1]);
    }
    cpu::LogitsRowMax<double>(shard[s].data(), t, rows, part.data());
    for (int64_t i = 0; i < t; ++i) row_max[i] = std::max(row_max[i], part[i]);
  }
  for (int s = 0; s < 3; ++s) {
    cpu::LogitsSumExpAndTarget<double>(shard[s].data(), c.targets.data(),
                                       row_max.data(), t, cuts[s],
                                       cuts[s + 1] - cuts[s], part.data());
    for (int64_t i = 0; i < 2 * t; ++i) stats[i] += part[i];
  }
  std::vector<double> loss(t), dlogits(t * c.vocab);
  for (int s = 0; s < 3; ++s) {
    const int64_t rows = cuts[s + 1] - cuts[s];
    std::vector<double> d(t * rows);
    cpu::CrossEntropyBackward<double>(
        shard[s].data(), c.targets.data(), row_max.data(), stats.data(), t,
        cuts[s], rows, c.grad_scale, loss.data(), d.data());
    for (int64_t i = 0; i < t; ++i) {
      std::copy_n(d.begin() + i * rows, rows,
                  dlogits.begin() + i * c.vocab + cuts[s]);
    }
  }
  ExpectAllNear(loss, Torch("ce", "loss"), 1e-12, 1e-12, "loss");
  ExpectAllNear(dlogits, Torch("ce", "dlogits"), 1e-14, 1e-11, "dlogits");
}

// ---- RoPE (Hugging Face's rotate_half) and RMSNorm + SwiGLU ----------------

TEST_F(CpuTorchReferenceTest, RopeMatchesHuggingFaceLlama) {
  const RopeCase c = MakeRopeCase();
  std::vector<double> q(c.dq.size()), k(c.dk.size()), v(c.dv.size()),
      dqkv(c.qkv.size());
  cpu::RopeQkvForward<double>(c.qkv.data(), c.positions.data(), c.tokens,
                              c.heads, c.kv_heads, c.head_dim, c.theta,
                              q.data(), k.data(), v.data());
  cpu::RopeQkvBackward<double>(c.dq.data(), c.dk.data(), c.dv.data(),
                               c.positions.data(), c.tokens, c.heads,
                               c.kv_heads, c.head_dim, c.theta, dqkv.data());
  ExpectAllNear(q, Torch("rope", "q"), 1e-12, 1e-10, "q");
  ExpectAllNear(k, Torch("rope", "k"), 1e-12, 1e-10, "k");
  ExpectAllNear(v, Torch("rope", "v"), 0, 0, "v");
  ExpectAllNear(dqkv, Torch("rope", "dqkv"), 1e-12, 1e-10, "dqkv");
}

TEST_F(CpuTorchReferenceTest, RmsNormThenSwiGluMatchTorch) {
  const NormMlpCase c = MakeNormMlpCase();
  const int64_t ffn = c.cols / 2;
  std::vector<double> y(c.x.size()), rstd(c.rows), out(c.rows * ffn),
      dy(c.x.size()), dx(c.x.size(), 0), dweight(c.cols, 0);
  cpu::RmsNormForward<double>(c.x.data(), c.weight.data(), c.rows, c.cols,
                              c.eps, y.data(), rstd.data());
  cpu::SwiGluForward<double>(y.data(), c.rows, ffn, out.data());
  cpu::SwiGluBackward<double>(c.dout.data(), y.data(), c.rows, ffn, dy.data());
  cpu::RmsNormBackward<double>(dy.data(), c.x.data(), c.weight.data(),
                               rstd.data(), c.rows, c.cols, dx.data(),
                               dweight.data());
  ExpectAllNear(y, Torch("norm_mlp", "y"), 1e-13, 1e-12, "rmsnorm y");
  ExpectAllNear(out, Torch("norm_mlp", "out"), 1e-13, 1e-12, "swiglu out");
  ExpectAllNear(dx, Torch("norm_mlp", "dx"), 1e-12, 1e-11, "dx");
  ExpectAllNear(dweight, Torch("norm_mlp", "dweight"), 1e-12, 1e-11, "dweight");
}

}  // namespace
}  // namespace tessera::executor
