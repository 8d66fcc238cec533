#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/cuda/attention_layout.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/cudnn_attention.h"
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

// The contract's checks (backend_checks.h) with act = bf16; the kernels take
// every dtype somewhere.
BackendCheckOptions CudaChecks() {
  return {.backend = "CudaBackend", .act = DType::kBF16};
}

// The attention kernels' own limits, checked after the contract's shape
// rules: the head dims they are built for, their shared memory on this
// device, and their grid.
void CheckAttentionLimits(const BackendChecks& checks, absl::string_view op,
                          const AttentionShape& s, size_t max_shared_bytes) {
  const int d = static_cast<int>(s.head_dim);
  if (!cuda::AttentionHeadDimSupported(d) || s.head_dim != d) {
    checks.Fail(op,
                absl::StrCat("shape.head_dim = ", s.head_dim,
                             ": the CUDA attention kernels are built for ",
                             absl::StrJoin(cuda::kAttentionHeadDims, ", ")));
  }
  const size_t need = std::max(cuda::AttentionForwardSmemBytes(d),
                               cuda::AttentionBackwardSmemBytes(d));
  if (need > max_shared_bytes) {
    checks.Fail(op, absl::StrCat("head_dim ", d, " needs ", need,
                                 " bytes of shared memory per block; the "
                                 "device allows ",
                                 max_shared_bytes));
  }
  if (s.q_len > std::numeric_limits<int32_t>::max() ||
      s.kv_len > std::numeric_limits<int32_t>::max() || s.heads > 65535 ||
      s.kv_heads > 65535 || s.batch > 65535) {
    checks.Fail(op,
                "shape beyond the kernels' grid (q_len, kv_len < 2^31; batch, "
                "heads < 65536)");
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

// The forward inputs of an attention call, as both kernels take them.
cuda::AttentionParams AttentionParamsFor(const AttentionShape& shape,
                                         const Tensor& q, const Tensor& k,
                                         const Tensor& v, const Tensor& q_pos,
                                         const Tensor& k_pos,
                                         const Tensor& lse) {
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
  return p;
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
    : device_(device),
      checks_(CudaChecks()),
      meter_("cuda backend", memory_limit_bytes) {}

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
  backend->InitAttention(options.attention);
  return backend;
}

void CudaBackend::InitAttention(CudaAttentionKernels kernels) {
  constexpr absl::string_view kOwn = "Tessera's kernels";
  if (kernels == CudaAttentionKernels::kOwn) {
    attention_kernels_ = absl::StrCat(kOwn, " (asked)");
    return;
  }
#ifdef TESSERA_HAVE_CUDNN
  absl::StatusOr<std::unique_ptr<cuda::CudnnAttention>> cudnn =
      cuda::CudnnAttention::Create(stream_);
  if (cudnn.ok()) {
    cudnn_ = std::move(*cudnn);
    attention_kernels_ =
        absl::StrCat(cudnn_->version(),
                     " fused attention for plain causal blocks, ", kOwn,
                     " for the rest");
  } else {
    attention_kernels_ = absl::StrCat(kOwn, " (", cudnn.status().message(), ")");
  }
#else
  attention_kernels_ = absl::StrCat(kOwn, " (built without cudnn.h)");
#endif
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
  cudnn_.reset();
  matmul_.reset();
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (gemm_workspace_ != nullptr) cudaFree(gemm_workspace_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

void CudaBackend::CheckLaunch(absl::string_view op, cudaError_t error) {
  if (error != cudaSuccess) {
    checks_.Fail(op, cuda::CudaCallStatus(error, "kernel launch").message());
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
    checks_.Fail(
        op, absl::StrCat("no device memory for ", grown,
                         " bytes of kernel scratch: ",
                         cuda::CudaCallStatus(e, "cudaMallocAsync").message()));
  }
  scratch_bytes_ = grown;
  return scratch_;
}

// ---- Memory -------------------------------------------------------------

absl::StatusOr<DeviceBuffer> CudaBackend::Allocate(int64_t numel, DType dtype,
                                                   absl::string_view what) {
  const MemoryRequest request{what, numel, dtype};
  TESSERA_ASSIGN_OR_RETURN(const int64_t bytes,
                           meter_.BytesFor(request, /*slack_elements=*/256));
  if (numel == 0) return DeviceBuffer(this, Tensor{nullptr, dtype, 0});
  // Reserved now, released below when the device has no room.
  TESSERA_ASSIGN_OR_RETURN(const int64_t in_use_before,
                           meter_.Reserve(request));
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
    meter_.Release(bytes);
    const absl::Status call = cuda::CudaCallStatus(e, "cudaMallocAsync");
    if (e == cudaErrorMemoryAllocation) {
      return meter_.OutOfMemory(request, "device", in_use_before,
                                call.message());
    }
    return meter_.AllocationError(call.code(), what, call.message());
  }
  TESSERA_CUDA_CHECK(
      cudaMemsetAsync(data, 0, static_cast<size_t>(bytes), stream_));
  return DeviceBuffer(this, Tensor{data, dtype, numel});
}

void CudaBackend::Free(const Tensor& view) {
  if (view.data == nullptr) return;
  const cudaError_t e = cudaFreeAsync(view.data, stream_);
  if (e != cudaSuccess && e != cudaErrorCudartUnloading) {
    checks_.Fail("Free", cuda::CudaCallStatus(e, "cudaFreeAsync").message());
  }
  meter_.Release(static_cast<int64_t>(view.bytes()));
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
  checks_.Copy(src, dst, n);
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
  checks_.Fill(dst, n);
  WithFloatType(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch("Fill", cuda::LaunchFill(Ptr<T>(dst), n, value, stream_));
  });
}

void CudaBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out,
                      int64_t n) {
  constexpr absl::string_view kOp = "Add";
  checks_.Add(a, b, out, n);
  WithFloatType(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchAdd(Ptr<const T>(a), Ptr<const T>(b),
                                     Ptr<T>(out), n, stream_));
  });
}

void CudaBackend::Scale(const Tensor& x, int64_t n, float alpha) {
  checks_.Scale(x, n);
  WithFloatType(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    CheckLaunch("Scale", cuda::LaunchScale(Ptr<T>(x), n, alpha, stream_));
  });
}

double CudaBackend::SumSquares(const Tensor& x, int64_t n) {
  constexpr absl::string_view kOp = "SumSquares";
  checks_.SumSquares(x, n);
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
  checks_.Gemm(m, n, k, a, b, c);
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
  if (!s.ok()) checks_.Fail(kOp, s.message());
}

// ---- Layers -------------------------------------------------------------

void CudaBackend::RmsNormForward(const Tensor& x, const Tensor& weight,
                                 int64_t rows, int64_t cols, float eps,
                                 const Tensor& y, const Tensor& rstd) {
  constexpr absl::string_view kOp = "RmsNormForward";
  checks_.RmsNormForward(x, weight, rows, cols, y, rstd);
  CheckLaunch(kOp, cuda::LaunchRmsNormForward(
                       Ptr<const bf16>(x), Ptr<const bf16>(weight), rows, cols,
                       eps, Ptr<bf16>(y), Ptr<float>(rstd), stream_));
}

void CudaBackend::RmsNormBackward(const Tensor& dy, const Tensor& x,
                                  const Tensor& weight, const Tensor& rstd,
                                  int64_t rows, int64_t cols, const Tensor& dx,
                                  const Tensor& dweight) {
  constexpr absl::string_view kOp = "RmsNormBackward";
  checks_.RmsNormBackward(dy, x, weight, rstd, rows, cols, dx, dweight);
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
  checks_.EmbeddingForward(tokens, table, n_tokens, vocab_begin, vocab_rows,
                           hidden, out);
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
  checks_.EmbeddingBackward(tokens, dout, n_tokens, vocab_begin, vocab_rows,
                            hidden, dtable);
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
  checks_.RopeQkvForward(qkv, positions, tokens, heads, kv_heads, head_dim, q,
                         k, v);
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
  checks_.RopeQkvBackward(dq, dk, dv, positions, tokens, heads, kv_heads,
                          head_dim, dqkv);
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
  checks_.Attention(kOp, shape);
  CheckAttentionLimits(checks_, kOp, shape, max_shared_bytes_);
  checks_.AttentionForward(shape, q, k, v, q_pos, k_pos, out, lse);
  if (!accumulate && CudnnAttentionForward(shape, q, k, v, out, lse)) return;
  const cuda::AttentionParams p =
      AttentionParamsFor(shape, q, k, v, q_pos, k_pos, lse);
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
  checks_.Attention(kOp, shape);
  CheckAttentionLimits(checks_, kOp, shape, max_shared_bytes_);
  checks_.AttentionBackward(shape, dout, q, k, v, out, lse, q_pos, k_pos, dq,
                            dk, dv);
  if (shape.kv_len == 0) return;
  if (CudnnAttentionBackward(shape, dout, q, k, v, out, lse, dq, dk, dv)) {
    return;
  }
  // Tessera's kernels add into f32 gradients: a self-causal block's (which
  // it writes) are zeroed first, and bf16 ones go through f32 scratch.
  const int64_t rows = shape.batch * shape.heads * shape.q_len;
  const int64_t nq = shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t nkv =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  const bool staged = dq.dtype != DType::kF32;  // only when self_causal
  const int64_t delta_floats = (rows + 63) / 64 * 64;  // 256-byte aligned
  auto* delta = static_cast<float*>(Scratch(
      static_cast<size_t>(delta_floats + (staged ? nq + 2 * nkv : 0)) *
          sizeof(float),
      kOp));
  float* gq = staged ? delta + delta_floats : Ptr<float>(dq);
  float* gk = staged ? gq + nq : Ptr<float>(dk);
  float* gv = staged ? gk + nkv : Ptr<float>(dv);
  if (shape.self_causal) {
    CheckLaunch(kOp, cuda::LaunchFill(gq, nq, 0.0f, stream_));
    CheckLaunch(kOp, cuda::LaunchFill(gk, nkv, 0.0f, stream_));
    CheckLaunch(kOp, cuda::LaunchFill(gv, nkv, 0.0f, stream_));
  }
  cuda::AttentionParams p =
      AttentionParamsFor(shape, q, k, v, q_pos, k_pos, lse);
  p.dout = Ptr<const bf16>(dout);
  p.dq = gq;
  p.dk = gk;
  p.dv = gv;
  const int d = static_cast<int>(shape.head_dim);
  WithFloatType(out.dtype, [&](auto tag) {
    using O = decltype(tag);
    CheckLaunch(kOp, cuda::LaunchAttentionBackward(p, d, Ptr<const O>(out),
                                                   delta, stream_));
  });
  if (staged) {
    CheckLaunch(kOp, cuda::LaunchCast(gq, Ptr<bf16>(dq), nq, stream_));
    CheckLaunch(kOp, cuda::LaunchCast(gk, Ptr<bf16>(dk), nkv, stream_));
    CheckLaunch(kOp, cuda::LaunchCast(gv, Ptr<bf16>(dv), nkv, stream_));
  }
}

bool CudaBackend::CudnnAttentionForward(const AttentionShape& shape,
                                        const Tensor& q, const Tensor& k,
                                        const Tensor& v, const Tensor& out,
                                        const Tensor& lse) {
#ifndef TESSERA_HAVE_CUDNN
  return false;
#else
  if (cudnn_ == nullptr || !shape.self_causal) return false;
  constexpr absl::string_view kOp = "AttentionForward (cuDNN)";
  const cuda::CudnnAttentionShape s{shape.batch, shape.q_len, shape.heads,
                                    shape.kv_heads, shape.head_dim};
  // cuDNN writes bf16: an f32 out goes through a bf16 copy.
  const bool staged = out.dtype != DType::kBF16;
  const int64_t n = shape.batch * shape.q_len * shape.heads * shape.head_dim;
  void* o = staged ? Scratch(static_cast<size_t>(n) * sizeof(bf16), kOp)
                   : out.data;
  const absl::Status st = cudnn_->Forward(s, q.data, k.data, v.data, o,
                                          Ptr<float>(lse));
  if (absl::IsUnimplemented(st)) return false;  // no engine for the shape
  if (!st.ok()) checks_.Fail(kOp, st.message());
  if (staged) {
    CheckLaunch(kOp, cuda::LaunchCast(static_cast<const bf16*>(o),
                                      Ptr<float>(out), n, stream_));
  }
  ++cudnn_attention_calls_;
  return true;
#endif
}

bool CudaBackend::CudnnAttentionBackward(
    const AttentionShape& shape, const Tensor& dout, const Tensor& q,
    const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
    const Tensor& dq, const Tensor& dk, const Tensor& dv) {
#ifndef TESSERA_HAVE_CUDNN
  return false;
#else
  if (cudnn_ == nullptr || !shape.self_causal) return false;
  constexpr absl::string_view kOp = "AttentionBackward (cuDNN)";
  const cuda::CudnnAttentionShape s{shape.batch, shape.q_len, shape.heads,
                                    shape.kv_heads, shape.head_dim};
  const int64_t nq = shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t nkv =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  // cuDNN writes bf16 gradients: in place when dq, dk, dv are bf16 (the
  // engine's, without context parallelism), else through bf16 scratch cast
  // to f32; an f32 out is read through a bf16 copy.
  const bool in_place = dq.dtype == DType::kBF16;
  const bool staged_out = out.dtype != DType::kBF16;
  const size_t scratch_elems =
      (in_place ? 0 : static_cast<size_t>(nq + 2 * nkv)) +
      (staged_out ? static_cast<size_t>(nq) : 0);
  bf16* scratch =
      scratch_elems > 0
          ? static_cast<bf16*>(Scratch(scratch_elems * sizeof(bf16), kOp))
          : nullptr;
  bf16* gq = in_place ? Ptr<bf16>(dq) : scratch;
  bf16* gk = in_place ? Ptr<bf16>(dk) : gq + nq;
  bf16* gv = in_place ? Ptr<bf16>(dv) : gk + nkv;
  const void* o = out.data;
  if (staged_out) {
    bf16* copy = in_place ? scratch : gv + nkv;
    CheckLaunch(kOp, cuda::LaunchCast(Ptr<const float>(out), copy, nq, stream_));
    o = copy;
  }
  const absl::Status st =
      cudnn_->Backward(s, q.data, k.data, v.data, o, dout.data,
                       Ptr<const float>(lse), gq, gk, gv);
  if (absl::IsUnimplemented(st)) return false;  // no engine for the shape
  if (!st.ok()) checks_.Fail(kOp, st.message());
  if (!in_place) {
    CheckLaunch(kOp, cuda::LaunchCast(gq, Ptr<float>(dq), nq, stream_));
    CheckLaunch(kOp, cuda::LaunchCast(gk, Ptr<float>(dk), nkv, stream_));
    CheckLaunch(kOp, cuda::LaunchCast(gv, Ptr<float>(dv), nkv, stream_));
  }
  ++cudnn_attention_calls_;
  return true;
#endif
}

void CudaBackend::SwiGluForward(const Tensor& gate_up, int64_t tokens,
                                int64_t ffn, const Tensor& out) {
  constexpr absl::string_view kOp = "SwiGluForward";
  checks_.SwiGluForward(gate_up, tokens, ffn, out);
  CheckLaunch(kOp, cuda::LaunchSwiGluForward(Ptr<const bf16>(gate_up), tokens,
                                             ffn, Ptr<bf16>(out), stream_));
}

void CudaBackend::SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                                 int64_t tokens, int64_t ffn,
                                 const Tensor& dgate_up) {
  constexpr absl::string_view kOp = "SwiGluBackward";
  checks_.SwiGluBackward(dout, gate_up, tokens, ffn, dgate_up);
  CheckLaunch(kOp, cuda::LaunchSwiGluBackward(
                       Ptr<const bf16>(dout), Ptr<const bf16>(gate_up), tokens,
                       ffn, Ptr<bf16>(dgate_up), stream_));
}

void CudaBackend::LogitsRowMax(const Tensor& logits, int64_t tokens,
                               int64_t vocab_rows, const Tensor& row_max) {
  constexpr absl::string_view kOp = "LogitsRowMax";
  checks_.LogitsRowMax(logits, tokens, vocab_rows, row_max);
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
  checks_.LogitsSumExpAndTarget(logits, targets, row_max, tokens, vocab_begin,
                                vocab_rows, stats);
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
  checks_.CrossEntropyBackward(logits, targets, row_max, stats, tokens,
                               vocab_begin, vocab_rows, loss, dlogits);
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
  checks_.AdamW(config, master, grad, m, v, n);
  CheckLaunch(kOp, cuda::LaunchAdamW(cuda::AdamWParamsFor(config, decay),
                                     Ptr<float>(master), Ptr<const float>(grad),
                                     Ptr<float>(m), Ptr<float>(v), n, stream_));
}

}  // namespace tessera::executor
