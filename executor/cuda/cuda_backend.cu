#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/cuda/attention_layout.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"
// defines: LaunchAdamW, AdamWParamsFor
#include "executor/cuda/adamw.cuh"
// defines: LaunchAttentionForward, LaunchAttentionBackward
#include "executor/cuda/attention.cuh"
// defines: LaunchLogitsRowMax, LaunchLogitsSumExpAndTarget,
//          LaunchCrossEntropyBackward
#include "executor/cuda/cross_entropy.cuh"
// defines: LaunchCast, LaunchFill, LaunchAdd, LaunchScale, LaunchSumSquares
#include "executor/cuda/elementwise.cuh"
// defines: LaunchEmbeddingForward, LaunchEmbeddingBackward
#include "executor/cuda/embedding.cuh"
// defines: CublasLtMatmul
#include "executor/cuda/matmul.cuh"
// defines: LaunchRmsNormForward, LaunchRmsNormBackward
#include "executor/cuda/rmsnorm.cuh"
// defines: LaunchRopeQkvForward, LaunchRopeQkvBackward
#include "executor/cuda/rope.cuh"
// defines: LaunchSwiGluForward, LaunchSwiGluBackward
#include "executor/cuda/swiglu.cuh"

namespace tessera::executor {
namespace {

using cuda::bf16;

constexpr size_t kInitialScratchBytes = size_t{16} << 20;

// ---- Argument checks: misuse is a caller bug, reported and fatal ---------

[[noreturn]] void Fail(absl::string_view op, absl::string_view message) {
  cuda::Die(absl::StrCat("CudaBackend::", op), message);
}

std::string DTypeList(std::initializer_list<DType> dtypes) {
  std::vector<std::string> names;
  for (DType d : dtypes) names.emplace_back(DTypeName(d));
  return absl::StrJoin(names, " or ");
}

// Aborts unless `t` views at least `numel` elements of one of `dtypes`.
void CheckTensor(absl::string_view op, absl::string_view arg, const Tensor& t,
                 std::initializer_list<DType> dtypes, int64_t numel) {
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    Fail(op, absl::StrCat(arg, " is ", DTypeName(t.dtype), ", expected ",
                          DTypeList(dtypes)));
  }
  if (t.numel < numel) {
    Fail(op, absl::StrCat(arg, " holds ", t.numel,
                          " elements, the shape needs ", numel));
  }
  if (numel > 0 && t.data == nullptr) Fail(op, absl::StrCat(arg, " is empty"));
}

constexpr std::initializer_list<DType> kF32 = {DType::kF32};
constexpr std::initializer_list<DType> kBF16 = {DType::kBF16};
constexpr std::initializer_list<DType> kI32 = {DType::kI32};
constexpr std::initializer_list<DType> kFloat = {DType::kF32, DType::kBF16};

void CheckPositive(absl::string_view op, absl::string_view arg, int64_t v) {
  if (v <= 0) Fail(op, absl::StrCat(arg, " = ", v, ", must be positive"));
}

void CheckNonNegative(absl::string_view op, absl::string_view arg, int64_t v) {
  if (v < 0) Fail(op, absl::StrCat(arg, " = ", v, ", must be >= 0"));
}

void CheckAttention(absl::string_view op, const AttentionShape& s,
                    size_t max_shared_bytes) {
  CheckPositive(op, "shape.batch", s.batch);
  CheckPositive(op, "shape.q_len", s.q_len);
  CheckNonNegative(op, "shape.kv_len", s.kv_len);
  CheckPositive(op, "shape.heads", s.heads);
  CheckPositive(op, "shape.kv_heads", s.kv_heads);
  CheckPositive(op, "shape.head_dim", s.head_dim);
  if (s.heads % s.kv_heads != 0) {
    Fail(op, absl::StrCat("shape.kv_heads = ", s.kv_heads,
                          " does not divide shape.heads = ", s.heads));
  }
  const int d = static_cast<int>(s.head_dim);
  if (!cuda::AttentionHeadDimSupported(d) || s.head_dim != d) {
    Fail(op, absl::StrCat("shape.head_dim = ", s.head_dim,
                          ": the CUDA attention kernels are built for ",
                          absl::StrJoin(cuda::kAttentionHeadDims, ", ")));
  }
  const size_t need = std::max(cuda::AttentionForwardSmemBytes(d),
                               cuda::AttentionBackwardSmemBytes(d));
  if (need > max_shared_bytes) {
    Fail(op, absl::StrCat("head_dim ", d, " needs ", need,
                          " bytes of shared memory per block; the device "
                          "allows ",
                          max_shared_bytes));
  }
  if (s.q_len > std::numeric_limits<int32_t>::max() ||
      s.kv_len > std::numeric_limits<int32_t>::max() || s.heads > 65535 ||
      s.kv_heads > 65535 || s.batch > 65535) {
    Fail(op,
         "shape beyond the kernels' grid (q_len, kv_len < 2^31; batch, "
         "heads < 65536)");
  }
}

void CheckRope(absl::string_view op, int64_t tokens, int64_t heads,
               int64_t kv_heads, int64_t head_dim) {
  CheckNonNegative(op, "tokens", tokens);
  CheckPositive(op, "heads", heads);
  CheckPositive(op, "kv_heads", kv_heads);
  CheckPositive(op, "head_dim", head_dim);
  if (head_dim % 2 != 0) {
    Fail(op, absl::StrCat("head_dim = ", head_dim, ", must be even"));
  }
}

template <typename T>
T* Ptr(const Tensor& t) {
  return static_cast<T*>(t.data);
}

// Calls f with a value of the C++ type of a float dtype (f32 or bf16).
template <typename F>
void WithFloatType(DType dtype, F&& f) {
  if (dtype == DType::kF32) {
    f(float{});
  } else {
    f(bf16{});
  }
}

}  // namespace

bool CudaDeviceAvailable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it for later calls
    if (why != nullptr) {
      *why =
          std::string(cuda::CudaCallStatus(e, "cudaGetDeviceCount").message());
    }
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "cudaGetDeviceCount: 0 devices";
    return false;
  }
  return true;
}

// ---- Life cycle ----------------------------------------------------------

CudaBackend::CudaBackend(int device, int64_t memory_limit_bytes)
    : device_(device), limit_bytes_(std::max<int64_t>(0, memory_limit_bytes)) {}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    CudaBackendOptions options) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("cuda backend: no CUDA device: ",
                     cuda::CudaCallStatus(e, "cudaGetDeviceCount").message()));
  }
  if (options.device < 0 || options.device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda backend: device ", options.device,
                     " does not exist (", count, " visible)"));
  }
  cudaDeviceProp prop;
  TESSERA_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));
  if (prop.major < 8) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda backend: ", prop.name, " has compute capability ",
                     prop.major, ".", prop.minor,
                     "; the kernels need 8.0 or newer (bf16 tensor cores)"));
  }
  std::unique_ptr<CudaBackend> backend(
      new CudaBackend(options.device, options.memory_limit_bytes));
  backend->device_name_ = prop.name;
  TESSERA_RETURN_IF_ERROR(backend->Init(options.gemm_workspace_bytes));
  return backend;
}

absl::Status CudaBackend::Init(int64_t gemm_workspace_bytes) {
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  int shared = 0;
  TESSERA_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
  max_shared_bytes_ = static_cast<size_t>(shared);
  // Keep freed memory in the pool instead of returning it at each
  // synchronization: the engine allocates and frees every layer's
  // activations every step.
  cudaMemPool_t pool;
  TESSERA_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, device_));
  uint64_t threshold = std::numeric_limits<uint64_t>::max();
  TESSERA_CUDA_RETURN_IF_ERROR(cudaMemPoolSetAttribute(
      pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  gemm_workspace_bytes_ = std::max<int64_t>(gemm_workspace_bytes, 0);
  if (gemm_workspace_bytes_ > 0) {
    TESSERA_CUDA_RETURN_IF_ERROR(cudaMalloc(
        &gemm_workspace_, static_cast<size_t>(gemm_workspace_bytes_)));
  }
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaMallocAsync(&scratch_, kInitialScratchBytes, stream_));
  scratch_bytes_ = kInitialScratchBytes;
  matmul_ = std::make_unique<cuda::CublasLtMatmul>();
  TESSERA_RETURN_IF_ERROR(matmul_->Init(
      gemm_workspace_, static_cast<size_t>(gemm_workspace_bytes_)));
  TESSERA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

CudaBackend::~CudaBackend() {
  // Errors are ignored: a destructor has no one to report to, and a failed
  // kernel has aborted already.
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  matmul_.reset();
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (gemm_workspace_ != nullptr) cudaFree(gemm_workspace_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

void CudaBackend::CheckLaunch(absl::string_view op, cudaError_t error) {
  if (error != cudaSuccess) {
    Fail(op, cuda::CudaCallStatus(error, "kernel launch").message());
  }
}

void* CudaBackend::Scratch(size_t bytes, absl::string_view op) {
  if (bytes <= scratch_bytes_) return scratch_;
  const size_t grown = std::max(bytes, 2 * scratch_bytes_);
  TESSERA_CUDA_CHECK(cudaFreeAsync(scratch_, stream_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  if (cudaError_t e = cudaMallocAsync(&scratch_, grown, stream_);
      e != cudaSuccess) {
    Fail(op, absl::StrCat(
                 "no device memory for ", grown, " bytes of kernel scratch: ",
                 cuda::CudaCallStatus(e, "cudaMallocAsync").message()));
  }
  scratch_bytes_ = grown;
  return scratch_;
}

// ---- Memory -------------------------------------------------------------

absl::StatusOr<DeviceBuffer> CudaBackend::Allocate(int64_t numel, DType dtype,
                                                   absl::string_view what) {
  if (numel < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cuda backend: allocating ",
                                                   what, ": numel = ", numel,
                                                   " is negative"));
  }
  const int64_t elem = static_cast<int64_t>(DTypeSize(dtype));
  if (numel > std::numeric_limits<int64_t>::max() / elem - 256) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cuda backend: allocating ", what, ": ", numel, " x ",
                     DTypeName(dtype), " overflows a 64-bit byte count"));
  }
  if (numel == 0) return DeviceBuffer(this, Tensor{nullptr, dtype, 0});
  const int64_t bytes = numel * elem;
  int64_t in_use_before = 0;
  {
    absl::MutexLock lock(&mu_);
    if (limit_bytes_ > 0 && in_use_bytes_ + bytes > limit_bytes_) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "cuda backend: allocating %s (%d x %s = %d bytes) would take the "
          "bytes in use from %d to %d, past the memory limit of %d bytes",
          what, numel, DTypeName(dtype), bytes, in_use_bytes_,
          in_use_bytes_ + bytes, limit_bytes_));
    }
    in_use_before = in_use_bytes_;
    in_use_bytes_ += bytes;  // reserved now, returned on failure below
    peak_bytes_ = std::max(peak_bytes_, in_use_bytes_);
  }
  TESSERA_CUDA_CHECK(cudaSetDevice(device_));
  void* data = nullptr;
  cudaError_t e = cudaMallocAsync(&data, static_cast<size_t>(bytes), stream_);
  if (e == cudaErrorMemoryAllocation) {
    // The pool may hold freed blocks of other sizes: give them back to the
    // device and try once more.
    cudaGetLastError();
    cudaMemPool_t pool;
    if (cudaStreamSynchronize(stream_) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess &&
        cudaMemPoolTrimTo(pool, 0) == cudaSuccess) {
      e = cudaMallocAsync(&data, static_cast<size_t>(bytes), stream_);
    }
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    {
      absl::MutexLock lock(&mu_);
      in_use_bytes_ -= bytes;
    }
    const absl::Status call = cuda::CudaCallStatus(e, "cudaMallocAsync");
    if (e == cudaErrorMemoryAllocation) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "cuda backend: allocating %s (%d x %s = %d bytes): the device is "
          "out of memory (%d bytes in use by this backend; %s)",
          what, numel, DTypeName(dtype), bytes, in_use_before, call.message()));
    }
    return absl::Status(call.code(), absl::StrCat("cuda backend: allocating ",
                                                  what, ": ", call.message()));
  }
  TESSERA_CUDA_CHECK(
      cudaMemsetAsync(data, 0, static_cast<size_t>(bytes), stream_));
  return DeviceBuffer(this, Tensor{data, dtype, numel});
}

void CudaBackend::Free(const Tensor& view) {
  if (view.data == nullptr) return;
  const cudaError_t e = cudaFreeAsync(view.data, stream_);
  if (e != cudaSuccess && e != cudaErrorCudartUnloading) {
    Fail("Free", cuda::CudaCallStatus(e, "cudaFreeAsync").message());
  }
  absl::MutexLock lock(&mu_);
  in_use_bytes_ -= static_cast<int64_t>(view.bytes());
}

void CudaBackend::SetMemoryLimit(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  limit_bytes_ = std::max<int64_t>(0, bytes);
}

int64_t CudaBackend::bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_bytes_;
}

int64_t CudaBackend::peak_bytes() const {
  absl::MutexLock lock(&mu_);
  return peak_bytes_;
}

void CudaBackend::ResetPeak() {
  absl::MutexLock lock(&mu_);
  peak_bytes_ = in_use_bytes_;
}

void CudaBackend::Synchronize() {
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::CopyToHost(const Tensor& src, void* host) {
  if (src.bytes() == 0) return;
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host, src.data, src.bytes(),
                                     cudaMemcpyDeviceToHost, stream_));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::CopyFromHost(const void* host, const Tensor& dst) {
  if (dst.bytes() == 0) return;
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst.data, host, dst.bytes(),
                                     cudaMemcpyHostToDevice, stream_));
  // The caller may free or reuse `host` as soon as this returns.
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// ---- Elementwise --------------------------------------------------------

void CudaBackend::Copy(const Tensor& src, const Tensor& dst, int64_t n) {
  constexpr absl::string_view kOp = "Copy";
  CheckNonNegative(kOp, "n", n);
  if ((src.dtype == DType::kI32) != (dst.dtype == DType::kI32)) {
    Fail(kOp, absl::StrCat("cannot convert ", DTypeName(src.dtype), " to ",
                           DTypeName(dst.dtype)));
  }
  CheckTensor(kOp, "src", src, {src.dtype}, n);
  CheckTensor(kOp, "dst", dst, {dst.dtype}, n);
  if (n == 0) return;
  if (src.dtype == dst.dtype) {
    if (src.data != dst.data) {
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data,
                                         n * DTypeSize(src.dtype),
                                         cudaMemcpyDeviceToDevice, stream_));
    }
    return;
  }
  if (src.dtype == DType::kF32) {
    CheckLaunch(kOp, cuda::LaunchCast(Ptr<const float>(src), Ptr<bf16>(dst), n,
                                      stream_));
  } else {
    CheckLaunch(kOp, cuda::LaunchCast(Ptr<const bf16>(src), Ptr<float>(dst), n,
                                      stream_));
  }
}

void CudaBackend::Fill(const Tensor& dst, int64_t n, float value) {
  CheckNonNegative("Fill", "n", n);
  CheckTensor("Fill", "dst", dst, kFloat, n);
  WithFloatType(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch("Fill", cuda::LaunchFill(Ptr<T>(dst), n, value, stream_));
  });
}

void CudaBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out,
                      int64_t n) {
  constexpr absl::string_view kOp = "Add";
  CheckNonNegative(kOp, "n", n);
  CheckTensor(kOp, "a", a, kFloat, n);
  CheckTensor(kOp, "b", b, {a.dtype}, n);
  CheckTensor(kOp, "out", out, {a.dtype}, n);
  WithFloatType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchAdd(Ptr<const T>(a), Ptr<const T>(b),
                                     Ptr<T>(out), n, stream_));
  });
}

void CudaBackend::Scale(const Tensor& x, int64_t n, float alpha) {
  CheckNonNegative("Scale", "n", n);
  CheckTensor("Scale", "x", x, kFloat, n);
  WithFloatType(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch("Scale", cuda::LaunchScale(Ptr<T>(x), n, alpha, stream_));
  });
}

double CudaBackend::SumSquares(const Tensor& x, int64_t n) {
  constexpr absl::string_view kOp = "SumSquares";
  CheckNonNegative(kOp, "n", n);
  CheckTensor(kOp, "x", x, kFloat, n);
  if (n == 0) return 0;
  const int64_t blocks = cuda::SumSquaresBlocks(n);
  auto* partials = static_cast<double*>(Scratch(blocks * sizeof(double), kOp));
  WithFloatType(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch(kOp,
                cuda::LaunchSumSquares(Ptr<const T>(x), n, partials, stream_));
  });
  std::vector<double> host(blocks);
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host.data(), partials,
                                     blocks * sizeof(double),
                                     cudaMemcpyDeviceToHost, stream_));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  double sum = 0;
  for (double p : host) sum += p;
  return sum;
}

// ---- GEMM ---------------------------------------------------------------

void CudaBackend::Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const Tensor& a, const Tensor& b,
                       float beta, const Tensor& c) {
  constexpr absl::string_view kOp = "Gemm";
  CheckNonNegative(kOp, "m", m);
  CheckNonNegative(kOp, "n", n);
  CheckNonNegative(kOp, "k", k);
  CheckTensor(kOp, "a", a, kBF16, m * k);
  CheckTensor(kOp, "b", b, kBF16, k * n);
  CheckTensor(kOp, "c", c, kFloat, m * n);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // c = beta c
    if (beta == 0.0f) {
      Fill(c, m * n, 0.0f);
    } else if (beta != 1.0f) {
      Scale(c, m * n, beta);
    }
    return;
  }
  const absl::Status s = matmul_->Run(
      trans_a, trans_b, m, n, k, alpha, a.data, b.data, beta, c.data,
      c.dtype == DType::kF32 ? CUDA_R_32F : CUDA_R_16BF, stream_);
  if (!s.ok()) Fail(kOp, s.message());
}

// ---- Layers -------------------------------------------------------------

void CudaBackend::RmsNormForward(const Tensor& x, const Tensor& weight,
                                 int64_t rows, int64_t cols, float eps,
                                 const Tensor& y, const Tensor& rstd) {
  constexpr absl::string_view kOp = "RmsNormForward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckTensor(kOp, "x", x, kBF16, rows * cols);
  CheckTensor(kOp, "weight", weight, kBF16, cols);
  CheckTensor(kOp, "y", y, kBF16, rows * cols);
  CheckTensor(kOp, "rstd", rstd, kF32, rows);
  CheckLaunch(kOp, cuda::LaunchRmsNormForward(
                       Ptr<const bf16>(x), Ptr<const bf16>(weight), rows, cols,
                       eps, Ptr<bf16>(y), Ptr<float>(rstd), stream_));
}

void CudaBackend::RmsNormBackward(const Tensor& dy, const Tensor& x,
                                  const Tensor& weight, const Tensor& rstd,
                                  int64_t rows, int64_t cols, const Tensor& dx,
                                  const Tensor& dweight) {
  constexpr absl::string_view kOp = "RmsNormBackward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckTensor(kOp, "dy", dy, kBF16, rows * cols);
  CheckTensor(kOp, "x", x, kBF16, rows * cols);
  CheckTensor(kOp, "weight", weight, kBF16, cols);
  CheckTensor(kOp, "rstd", rstd, kF32, rows);
  CheckTensor(kOp, "dx", dx, kBF16, rows * cols);
  CheckTensor(kOp, "dweight", dweight, kF32, cols);
  if (rows == 0) return;
  const cuda::ColumnReducePlan plan = cuda::PlanColumnReduce(rows, cols);
  auto* partials = static_cast<float*>(
      Scratch(static_cast<size_t>(plan.scratch_floats()) * sizeof(float), kOp));
  CheckLaunch(
      kOp, cuda::LaunchRmsNormBackward(
               Ptr<const bf16>(dy), Ptr<const bf16>(x), Ptr<const bf16>(weight),
               Ptr<const float>(rstd), rows, cols, Ptr<bf16>(dx),
               Ptr<float>(dweight), partials, stream_));
}

void CudaBackend::EmbeddingForward(const Tensor& tokens, const Tensor& table,
                                   int64_t n_tokens, int64_t vocab_begin,
                                   int64_t vocab_rows, int64_t hidden,
                                   const Tensor& out) {
  constexpr absl::string_view kOp = "EmbeddingForward";
  CheckNonNegative(kOp, "n_tokens", n_tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckPositive(kOp, "hidden", hidden);
  CheckTensor(kOp, "tokens", tokens, kI32, n_tokens);
  CheckTensor(kOp, "table", table, kBF16, vocab_rows * hidden);
  CheckTensor(kOp, "out", out, kBF16, n_tokens * hidden);
  CheckLaunch(kOp,
              cuda::LaunchEmbeddingForward(
                  Ptr<const int32_t>(tokens), Ptr<const bf16>(table), n_tokens,
                  vocab_begin, vocab_rows, hidden, Ptr<bf16>(out), stream_));
}

void CudaBackend::EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                                    int64_t n_tokens, int64_t vocab_begin,
                                    int64_t vocab_rows, int64_t hidden,
                                    const Tensor& dtable) {
  constexpr absl::string_view kOp = "EmbeddingBackward";
  CheckNonNegative(kOp, "n_tokens", n_tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckPositive(kOp, "hidden", hidden);
  CheckTensor(kOp, "tokens", tokens, kI32, n_tokens);
  CheckTensor(kOp, "dout", dout, kBF16, n_tokens * hidden);
  CheckTensor(kOp, "dtable", dtable, kF32, vocab_rows * hidden);
  CheckLaunch(
      kOp, cuda::LaunchEmbeddingBackward(
               Ptr<const int32_t>(tokens), Ptr<const bf16>(dout), n_tokens,
               vocab_begin, vocab_rows, hidden, Ptr<float>(dtable), stream_));
}

void CudaBackend::RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                                 int64_t tokens, int64_t heads,
                                 int64_t kv_heads, int64_t head_dim,
                                 float theta, const Tensor& q, const Tensor& k,
                                 const Tensor& v) {
  constexpr absl::string_view kOp = "RopeQkvForward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckTensor(kOp, "qkv", qkv, kBF16,
              tokens * (heads + 2 * kv_heads) * head_dim);
  CheckTensor(kOp, "positions", positions, kI32, tokens);
  CheckTensor(kOp, "q", q, kBF16, tokens * heads * head_dim);
  CheckTensor(kOp, "k", k, kBF16, tokens * kv_heads * head_dim);
  CheckTensor(kOp, "v", v, kBF16, tokens * kv_heads * head_dim);
  CheckLaunch(kOp, cuda::LaunchRopeQkvForward(
                       Ptr<const bf16>(qkv), Ptr<const int32_t>(positions),
                       tokens, heads, kv_heads, head_dim, theta, Ptr<bf16>(q),
                       Ptr<bf16>(k), Ptr<bf16>(v), stream_));
}

void CudaBackend::RopeQkvBackward(const Tensor& dq, const Tensor& dk,
                                  const Tensor& dv, const Tensor& positions,
                                  int64_t tokens, int64_t heads,
                                  int64_t kv_heads, int64_t head_dim,
                                  float theta, const Tensor& dqkv) {
  constexpr absl::string_view kOp = "RopeQkvBackward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckTensor(kOp, "dq", dq, kFloat, tokens * heads * head_dim);
  CheckTensor(kOp, "dk", dk, {dq.dtype}, tokens * kv_heads * head_dim);
  CheckTensor(kOp, "dv", dv, {dq.dtype}, tokens * kv_heads * head_dim);
  CheckTensor(kOp, "positions", positions, kI32, tokens);
  CheckTensor(kOp, "dqkv", dqkv, kBF16,
              tokens * (heads + 2 * kv_heads) * head_dim);
  WithFloatType(dq.dtype, [&](auto tag) {
    using G = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchRopeQkvBackward(
                         Ptr<const G>(dq), Ptr<const G>(dk), Ptr<const G>(dv),
                         Ptr<const int32_t>(positions), tokens, heads, kv_heads,
                         head_dim, theta, Ptr<bf16>(dqkv), stream_));
  });
}

void CudaBackend::AttentionForward(const AttentionShape& shape, const Tensor& q,
                                   const Tensor& k, const Tensor& v,
                                   const Tensor& q_pos, const Tensor& k_pos,
                                   bool accumulate, const Tensor& out,
                                   const Tensor& lse) {
  constexpr absl::string_view kOp = "AttentionForward";
  CheckAttention(kOp, shape, max_shared_bytes_);
  const int64_t q_numel =
      shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t kv_numel =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  CheckTensor(kOp, "q", q, kBF16, q_numel);
  CheckTensor(kOp, "k", k, kBF16, kv_numel);
  CheckTensor(kOp, "v", v, kBF16, kv_numel);
  CheckTensor(kOp, "q_pos", q_pos, kI32, shape.q_len);
  CheckTensor(kOp, "k_pos", k_pos, kI32, shape.kv_len);
  CheckTensor(kOp, "out", out, kFloat, q_numel);
  CheckTensor(kOp, "lse", lse, kF32, shape.batch * shape.heads * shape.q_len);
  cuda::AttentionParams p;
  p.q = Ptr<const bf16>(q);
  p.k = Ptr<const bf16>(k);
  p.v = Ptr<const bf16>(v);
  p.q_pos = Ptr<const int32_t>(q_pos);
  p.k_pos = Ptr<const int32_t>(k_pos);
  p.lse = Ptr<float>(lse);
  p.batch = shape.batch;
  p.q_len = shape.q_len;
  p.kv_len = shape.kv_len;
  p.heads = shape.heads;
  p.kv_heads = shape.kv_heads;
  p.group = shape.heads / shape.kv_heads;
  p.scale = static_cast<float>(1.0 / std::sqrt(double(shape.head_dim)));
  const int d = static_cast<int>(shape.head_dim);
  WithFloatType(out.dtype, [&](auto tag) {
    using O = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchAttentionForward(p, d, accumulate, Ptr<O>(out),
                                                  stream_));
  });
}

void CudaBackend::AttentionBackward(const AttentionShape& shape,
                                    const Tensor& dout, const Tensor& q,
                                    const Tensor& k, const Tensor& v,
                                    const Tensor& out, const Tensor& lse,
                                    const Tensor& q_pos, const Tensor& k_pos,
                                    const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv) {
  constexpr absl::string_view kOp = "AttentionBackward";
  CheckAttention(kOp, shape, max_shared_bytes_);
  const int64_t q_numel =
      shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t kv_numel =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  const int64_t rows = shape.batch * shape.heads * shape.q_len;
  CheckTensor(kOp, "dout", dout, kBF16, q_numel);
  CheckTensor(kOp, "q", q, kBF16, q_numel);
  CheckTensor(kOp, "k", k, kBF16, kv_numel);
  CheckTensor(kOp, "v", v, kBF16, kv_numel);
  CheckTensor(kOp, "out", out, kFloat, q_numel);
  CheckTensor(kOp, "lse", lse, kF32, rows);
  CheckTensor(kOp, "q_pos", q_pos, kI32, shape.q_len);
  CheckTensor(kOp, "k_pos", k_pos, kI32, shape.kv_len);
  // The CUDA backend accumulates attention gradients in f32 only (dq takes
  // atomic adds from every key tile).
  CheckTensor(kOp, "dq", dq, kF32, q_numel);
  CheckTensor(kOp, "dk", dk, kF32, kv_numel);
  CheckTensor(kOp, "dv", dv, kF32, kv_numel);
  if (shape.kv_len == 0) return;
  cuda::AttentionParams p;
  p.q = Ptr<const bf16>(q);
  p.k = Ptr<const bf16>(k);
  p.v = Ptr<const bf16>(v);
  p.q_pos = Ptr<const int32_t>(q_pos);
  p.k_pos = Ptr<const int32_t>(k_pos);
  p.lse = Ptr<float>(lse);
  p.batch = shape.batch;
  p.q_len = shape.q_len;
  p.kv_len = shape.kv_len;
  p.heads = shape.heads;
  p.kv_heads = shape.kv_heads;
  p.group = shape.heads / shape.kv_heads;
  p.scale = static_cast<float>(1.0 / std::sqrt(double(shape.head_dim)));
  p.dout = Ptr<const bf16>(dout);
  p.dq = Ptr<float>(dq);
  p.dk = Ptr<float>(dk);
  p.dv = Ptr<float>(dv);
  auto* delta = static_cast<float*>(
      Scratch(static_cast<size_t>(rows) * sizeof(float), kOp));
  const int d = static_cast<int>(shape.head_dim);
  WithFloatType(out.dtype, [&](auto tag) {
    using O = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchAttentionBackward(p, d, Ptr<const O>(out),
                                                   delta, stream_));
  });
}

void CudaBackend::SwiGluForward(const Tensor& gate_up, int64_t tokens,
                                int64_t ffn, const Tensor& out) {
  constexpr absl::string_view kOp = "SwiGluForward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckTensor(kOp, "gate_up", gate_up, kBF16, tokens * 2 * ffn);
  CheckTensor(kOp, "out", out, kBF16, tokens * ffn);
  CheckLaunch(kOp, cuda::LaunchSwiGluForward(Ptr<const bf16>(gate_up), tokens,
                                             ffn, Ptr<bf16>(out), stream_));
}

void CudaBackend::SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                                 int64_t tokens, int64_t ffn,
                                 const Tensor& dgate_up) {
  constexpr absl::string_view kOp = "SwiGluBackward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckTensor(kOp, "dout", dout, kBF16, tokens * ffn);
  CheckTensor(kOp, "gate_up", gate_up, kBF16, tokens * 2 * ffn);
  CheckTensor(kOp, "dgate_up", dgate_up, kBF16, tokens * 2 * ffn);
  CheckLaunch(kOp, cuda::LaunchSwiGluBackward(
                       Ptr<const bf16>(dout), Ptr<const bf16>(gate_up), tokens,
                       ffn, Ptr<bf16>(dgate_up), stream_));
}

void CudaBackend::LogitsRowMax(const Tensor& logits, int64_t tokens,
                               int64_t vocab_rows, const Tensor& row_max) {
  constexpr absl::string_view kOp = "LogitsRowMax";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckTensor(kOp, "logits", logits, kFloat, tokens * vocab_rows);
  CheckTensor(kOp, "row_max", row_max, kF32, tokens);
  WithFloatType(logits.dtype, [&](auto tag) {
    using L = decltype(tag);
    CheckLaunch(
        kOp, cuda::LaunchLogitsRowMax(Ptr<const L>(logits), tokens, vocab_rows,
                                      Ptr<float>(row_max), stream_));
  });
}

void CudaBackend::LogitsSumExpAndTarget(const Tensor& logits,
                                        const Tensor& targets,
                                        const Tensor& row_max, int64_t tokens,
                                        int64_t vocab_begin, int64_t vocab_rows,
                                        const Tensor& stats) {
  constexpr absl::string_view kOp = "LogitsSumExpAndTarget";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckTensor(kOp, "logits", logits, kFloat, tokens * vocab_rows);
  CheckTensor(kOp, "targets", targets, kI32, tokens);
  CheckTensor(kOp, "row_max", row_max, kF32, tokens);
  CheckTensor(kOp, "stats", stats, kF32, 2 * tokens);
  WithFloatType(logits.dtype, [&](auto tag) {
    using L = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchLogitsSumExpAndTarget(
                         Ptr<const L>(logits), Ptr<const int32_t>(targets),
                         Ptr<const float>(row_max), tokens, vocab_begin,
                         vocab_rows, Ptr<float>(stats), stream_));
  });
}

void CudaBackend::CrossEntropyBackward(const Tensor& logits,
                                       const Tensor& targets,
                                       const Tensor& row_max,
                                       const Tensor& stats, int64_t tokens,
                                       int64_t vocab_begin, int64_t vocab_rows,
                                       float grad_scale, const Tensor& loss,
                                       const Tensor& dlogits) {
  constexpr absl::string_view kOp = "CrossEntropyBackward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckTensor(kOp, "logits", logits, kFloat, tokens * vocab_rows);
  CheckTensor(kOp, "targets", targets, kI32, tokens);
  CheckTensor(kOp, "row_max", row_max, kF32, tokens);
  CheckTensor(kOp, "stats", stats, kF32, 2 * tokens);
  CheckTensor(kOp, "loss", loss, kF32, tokens);
  CheckTensor(kOp, "dlogits", dlogits, kFloat, tokens * vocab_rows);
  if (dlogits.data == logits.data && dlogits.dtype != logits.dtype) {
    Fail(kOp, "dlogits may alias logits only with the same dtype");
  }
  WithFloatType(logits.dtype, [&](auto logits_tag) {
    using L = decltype(logits_tag);
    WithFloatType(dlogits.dtype, [&](auto grad_tag) {
      using G = decltype(grad_tag);
      CheckLaunch(kOp, cuda::LaunchCrossEntropyBackward(
                           Ptr<const L>(logits), Ptr<const int32_t>(targets),
                           Ptr<const float>(row_max), Ptr<const float>(stats),
                           tokens, vocab_begin, vocab_rows, grad_scale,
                           Ptr<float>(loss), Ptr<G>(dlogits), stream_));
    });
  });
}

void CudaBackend::AdamW(const AdamWConfig& config, bool decay,
                        const Tensor& master, const Tensor& grad,
                        const Tensor& m, const Tensor& v, int64_t n) {
  constexpr absl::string_view kOp = "AdamW";
  CheckNonNegative(kOp, "n", n);
  CheckPositive(kOp, "config.step", config.step);
  CheckTensor(kOp, "master", master, kF32, n);
  CheckTensor(kOp, "grad", grad, kF32, n);
  CheckTensor(kOp, "m", m, kF32, n);
  CheckTensor(kOp, "v", v, kF32, n);
  CheckLaunch(kOp, cuda::LaunchAdamW(cuda::AdamWParamsFor(config, decay),
                                     Ptr<float>(master), Ptr<const float>(grad),
                                     Ptr<float>(m), Ptr<float>(v), n, stream_));
}

}  // namespace tessera::executor
