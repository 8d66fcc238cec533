// The CUDA backend's memory, copies and GEMMs on a GPU (skipped without one):
// zero-filled allocations and the high-water mark, the memory limit and the
// device's own exhaustion as RESOURCE_EXHAUSTED (the backend still works
// after), f32 <-> bf16 casts bit-exact against the host's rounding, every
// transpose combination of the cuBLASLt GEMM against a CPU GEMM on the same
// bf16 values, and misuse that aborts with the kernel and argument named.
#include "executor/cuda/cuda_backend.h"

#include <cmath>
#include <string>
#include <vector>

#include "executor/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

namespace tessera::executor {
namespace {

using cuda_test::Download;
using cuda_test::RandomBf16Values;
using cuda_test::RelativeError;
using cuda_test::Upload;

std::unique_ptr<CudaBackend> MakeGpu(int64_t limit = 0) {
  absl::StatusOr<std::unique_ptr<CudaBackend>> gpu =
      CudaBackend::Create({.device = 0, .memory_limit_bytes = limit});
  EXPECT_TRUE(gpu.ok()) << gpu.status();
  return gpu.ok() ? std::move(*gpu) : nullptr;
}

TEST(CudaBackendTest, AllocationsAreZeroedAndCounted) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  EXPECT_EQ(gpu->name(), "cuda");
  EXPECT_EQ(gpu->compute_dtype(), DType::kBF16);
  {
    absl::StatusOr<DeviceBuffer> a = gpu->Allocate(1000, DType::kF32, "a");
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<DeviceBuffer> b = gpu->Allocate(3000, DType::kBF16, "b");
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(gpu->bytes_in_use(), 4000 + 6000);
    for (float v : Download(*gpu, a->view())) ASSERT_EQ(v, 0.0f);
    for (float v : Download(*gpu, b->view())) ASSERT_EQ(v, 0.0f);
  }
  EXPECT_EQ(gpu->bytes_in_use(), 0);
  EXPECT_EQ(gpu->peak_bytes(), 10000);
  gpu->ResetPeak();
  EXPECT_EQ(gpu->peak_bytes(), 0);
  absl::StatusOr<DeviceBuffer> empty = gpu->Allocate(0, DType::kI32, "empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(gpu->Allocate(-1, DType::kF32, "neg").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaBackendTest, MemoryLimitIsResourceExhausted) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu(/*limit=*/1 << 20);
  absl::StatusOr<DeviceBuffer> ok = gpu->Allocate(1 << 17, DType::kF32, "half");
  ASSERT_TRUE(ok.ok());
  absl::StatusOr<DeviceBuffer> over =
      gpu->Allocate(1 << 18, DType::kF32, "activations");
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(over.status().message()).find("activations"),
            std::string::npos);
  EXPECT_NE(std::string(over.status().message()).find("memory limit"),
            std::string::npos)
      << over.status();
  EXPECT_EQ(gpu->bytes_in_use(), 1 << 19);
}

TEST(CudaBackendTest, DeviceOutOfMemoryIsResourceExhaustedAndRecoverable) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  // 4 PiB: more than any device has.
  absl::StatusOr<DeviceBuffer> huge =
      gpu->Allocate(int64_t{1} << 50, DType::kF32, "huge");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(huge.status().message()).find("out of memory"),
            std::string::npos)
      << huge.status();
  EXPECT_EQ(gpu->bytes_in_use(), 0);
  // The backend is still usable.
  const std::vector<float> x = RandomBf16Values(100, 1);
  DeviceBuffer a = Upload(*gpu, x, DType::kF32);
  gpu->Scale(a.view(), 100, 2.0f);
  const std::vector<float> y = Download(*gpu, a.view());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(y[i], 2 * x[i]);
}

TEST(CudaBackendTest, CastsRoundLikeTheHost) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  // Values that are not bf16: the cast must round to nearest even.
  std::vector<float> x(1003);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37f * i) * std::pow(10.0f, (i % 9) - 4.0f);
  }
  DeviceBuffer f32 = Upload(*gpu, x, DType::kF32);
  absl::StatusOr<DeviceBuffer> bf = gpu->Allocate(1003, DType::kBF16, "bf");
  ASSERT_TRUE(bf.ok());
  // Offsets 0 and 1: the packed and the scalar path.
  for (int64_t offset : {0, 1}) {
    const int64_t n = 1003 - offset;
    gpu->Copy(f32.view().Slice(offset, n), bf->view().Slice(offset, n), n);
    std::vector<uint16_t> bits(n);
    gpu->CopyToHost(bf->view().Slice(offset, n), bits.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits[i], FloatToBf16(x[offset + i])) << "offset " << offset;
    }
    absl::StatusOr<DeviceBuffer> back = gpu->Allocate(n, DType::kF32, "back");
    gpu->Copy(bf->view().Slice(offset, n), back->view(), n);
    const std::vector<float> y = Download(*gpu, back->view());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], Bf16ToFloat(bits[i]));
  }
}

TEST(CudaBackendTest, ElementwiseOpsMatchTheHost) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  const int64_t n = 1029;
  const std::vector<float> a = RandomBf16Values(n, 1),
                           b = RandomBf16Values(n, 2);
  for (DType t : {DType::kF32, DType::kBF16}) {
    DeviceBuffer da = Upload(*gpu, a, t), db = Upload(*gpu, b, t);
    gpu->Add(da.view(), db.view(), da.view(), n);  // in place: out == a
    std::vector<float> sum = Download(*gpu, da.view());
    for (int64_t i = 0; i < n; ++i) {
      const float want = t == DType::kF32
                             ? a[i] + b[i]
                             : Bf16ToFloat(FloatToBf16(a[i] + b[i]));
      ASSERT_EQ(sum[i], want) << DTypeName(t) << " " << i;
    }
    gpu->Fill(db.view(), n, 0.5f);
    gpu->Scale(db.view(), n, 3.0f);
    for (float v : Download(*gpu, db.view())) ASSERT_EQ(v, 1.5f);
    double want_sq = 0;
    for (float v : sum) want_sq += double(v) * v;
    EXPECT_NEAR(gpu->SumSquares(da.view(), n), want_sq, 1e-9 * want_sq);
  }
}

struct GemmCase {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
};

TEST(CudaBackendTest, GemmMatchesTheCpuOnTheSameBf16Values) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  CpuBackend cpu({.blas_threads = 1});
  const std::vector<GemmCase> cases = {
      {false, true, 37, 29, 53, 1.0f, 0.0f},  // a linear forward
      {false, false, 37, 29, 53, 1.0f, 0.0f},
      {true, false, 29, 53, 37, 1.0f, 1.0f},  // a weight gradient, += into f32
      {true, true, 16, 16, 16, 0.5f, 0.25f},
      {false, true, 256, 384, 128, 1.0f, 0.0f},
      {false, false, 1, 7, 300, 2.0f, 0.0f}};
  for (const GemmCase& g : cases) {
    const std::vector<float> a = RandomBf16Values(g.m * g.k, 3);
    const std::vector<float> b = RandomBf16Values(g.k * g.n, 4);
    const std::vector<float> c0 = RandomBf16Values(g.m * g.n, 5);
    DeviceBuffer ca = Upload(cpu, a, DType::kF32),
                 cb = Upload(cpu, b, DType::kF32);
    DeviceBuffer cc = Upload(cpu, c0, DType::kF32);
    cpu.Gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, ca.view(), cb.view(),
             g.beta, cc.view());
    const std::vector<float> want = Download(cpu, cc.view());
    DeviceBuffer ga = Upload(*gpu, a, DType::kBF16);
    DeviceBuffer gb = Upload(*gpu, b, DType::kBF16);
    // f32 C: the same products summed in another order (~1e-6).
    DeviceBuffer gc = Upload(*gpu, c0, DType::kF32);
    gpu->Gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, ga.view(),
              gb.view(), g.beta, gc.view());
    EXPECT_LE(RelativeError(Download(*gpu, gc.view()), want), 1e-5)
        << g.m << "x" << g.n << "x" << g.k << " ta=" << g.trans_a
        << " tb=" << g.trans_b;
    // bf16 C: one rounding of each output, 2^-9 relative at most.
    DeviceBuffer gh = Upload(*gpu, c0, DType::kBF16);
    gpu->Gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, ga.view(),
              gb.view(), g.beta, gh.view());
    EXPECT_LE(RelativeError(Download(*gpu, gh.view()), want), 4e-3)
        << g.m << "x" << g.n << "x" << g.k << " ta=" << g.trans_a
        << " tb=" << g.trans_b;
  }
}

TEST(CudaBackendTest, GemmOnViewsLessAlignedThanCublasLtAssumes) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = MakeGpu();
  CpuBackend cpu({.blas_threads = 1});
  // Views 16 bytes past an allocation's (256-byte aligned) start: cuBLASLt
  // must be told, or it may pick a kernel that assumes 256 bytes.
  const int64_t m = 24, n = 40, k = 56, off = 8;
  const std::vector<float> a = RandomBf16Values(m * k + off, 6);
  const std::vector<float> b = RandomBf16Values(k * n + off, 7);
  DeviceBuffer ga = Upload(*gpu, a, DType::kBF16),
               gb = Upload(*gpu, b, DType::kBF16);
  absl::StatusOr<DeviceBuffer> gc =
      gpu->Allocate(m * n + off, DType::kF32, "c");
  ASSERT_TRUE(gc.ok());
  gpu->Gemm(false, true, m, n, k, 1.0f, ga.view().Slice(off, m * k),
            gb.view().Slice(off, k * n), 0.0f, gc->view().Slice(off, m * n));
  DeviceBuffer ca =
      Upload(cpu, std::vector<float>(a.begin() + off, a.end()), DType::kF32);
  DeviceBuffer cb =
      Upload(cpu, std::vector<float>(b.begin() + off, b.end()), DType::kF32);
  absl::StatusOr<DeviceBuffer> cc = cpu.Allocate(m * n, DType::kF32, "c");
  cpu.Gemm(false, true, m, n, k, 1.0f, ca.view(), cb.view(), 0.0f, cc->view());
  EXPECT_LE(RelativeError(Download(*gpu, gc->view().Slice(off, m * n)),
                          Download(cpu, cc->view())),
            1e-5);
}

TEST(CudaBackendDeathTest, MisuseAbortsNamingTheKernelAndArgument) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh CUDA context
  EXPECT_DEATH(
      {
        auto gpu = MakeGpu();
        auto a = gpu->Allocate(16, DType::kF32, "a");
        auto b = gpu->Allocate(16, DType::kBF16, "b");
        gpu->Gemm(false, false, 4, 4, 4, 1.0f, a->view(), b->view(), 0.0f,
                  b->view());
      },
      "CudaBackend::Gemm: a is f32, expected bf16");
  EXPECT_DEATH(
      {
        auto gpu = MakeGpu();
        auto x = gpu->Allocate(8, DType::kBF16, "x");
        gpu->SwiGluForward(x->view(), 4, 4, x->view());
      },
      "CudaBackend::SwiGluForward: gate_up holds 8 elements, the shape needs "
      "32");
}

}  // namespace
}  // namespace tessera::executor
