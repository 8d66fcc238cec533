// The CUDA implementation of Backend: bf16 activations and compute weights
// ("act" = bf16), f32 master weights, gradients, optimizer states and
// statistics, GEMMs through cuBLASLt and fused kernels for the rest, all on
// one non-blocking stream of one device. Kernels live one header per layer
// beside their launchers (rmsnorm.cuh, attention.cuh, ...); the arguments'
// dtypes and sizes are checked on the host before each launch, and misuse
// aborts with a message naming the kernel and the argument, as on the CPU
// backend.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend,
//                            CudaBackend::Create({.device = 0}));
//   TESSERA_ASSIGN_OR_RETURN(DeviceBuffer x,
//       backend->Allocate(rows * cols, DType::kBF16, "x"));
//   backend->RmsNormForward(x.view(), w, rows, cols, 1e-5f, y, rstd);
//
// Memory: stream-ordered (cudaMallocAsync / cudaFreeAsync) from the device's
// default pool, which keeps freed memory cached (release threshold raised),
// so the per-layer allocations of the engine cost no driver calls after the
// first step. Allocate zero-fills (the contract), counts the bytes asked for
// against the limit and the high-water mark, and turns a device without room
// into RESOURCE_EXHAUSTED (after trimming the pool's cached memory once), never
// an abort. The GEMM workspace and the kernels' scratch are not counted.
//
// Which dtypes each kernel takes (the contract's "f32 or act" choices):
//   Copy f32 <-> bf16 both ways and same-type copies of any dtype; Fill, Add,
//   Scale, SumSquares f32 or bf16; Gemm a, b bf16, c bf16 or f32; RoPE
//   backward dq/dk/dv f32 or bf16; attention out f32 or bf16, dq/dk/dv f32
//   (bf16 too for a self-causal block, which writes them);
//   logits and dlogits f32 or bf16; AdamW f32.
//
// Threads: one backend per thread (each rank thread of the in-process world
// owns one); the memory counters are safe from any thread. Create() makes
// its device current on the calling thread, and every kernel call runs on
// that device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor/backend.h"
#include "executor/backend_checks.h"
#include "executor/memory_meter.h"
#include "executor/tensor.h"

namespace tessera::executor {

namespace cuda {
class CublasLtMatmul;
class CudnnAttention;
}  // namespace cuda

// Which kernels run causal attention.
enum class CudaAttentionKernels {
  // cuDNN's fused flash attention (cudnn_attention.h) for plain causal
  // blocks (AttentionShape::self_causal, no accumulation) where libcudnn
  // loads and has an engine for the shape; Tessera's own kernels
  // (attention.cuh) for the rest: ring attention's blocks, no cuDNN.
  kCudnnWhereAvailable,
  // Tessera's own kernels only (tests compare the two).
  kOwn,
};

struct CudaBackendOptions {
  int device = 0;
  // Bytes Allocate may hand out at once; 0 = no limit but the device's.
  int64_t memory_limit_bytes = 0;
  // cuBLASLt's workspace.
  int64_t gemm_workspace_bytes = int64_t{32} << 20;
  CudaAttentionKernels attention = CudaAttentionKernels::kCudnnWhereAvailable;
};

// Whether this process sees a usable CUDA device; `why` (may be null)
// receives the reason when it does not ("cudaGetDeviceCount: no CUDA-capable
// device is detected (cudaErrorNoDevice)", "0 devices").
bool CudaDeviceAvailable(std::string* why);

class CudaBackend final : public Backend {
 public:
  // FAILED_PRECONDITION when the device does not exist or is older than
  // sm_80 (bf16 tensor cores), RESOURCE_EXHAUSTED when the workspace does
  // not fit, INTERNAL for other CUDA or cuBLASLt failures.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      CudaBackendOptions options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  absl::string_view name() const override { return "cuda"; }
  DType compute_dtype() const override { return DType::kBF16; }

  int device() const { return device_; }
  // The stream every kernel, copy and allocation of this backend is ordered
  // on (communicators order their work after it and it after theirs).
  cudaStream_t stream() const { return stream_; }
  // "NVIDIA H100 80GB HBM3" (cudaDeviceProp::name).
  const std::string& device_name() const { return device_name_; }
  // What runs attention, for records and logs: "cuDNN 9.19.0 fused
  // attention for plain causal blocks, Tessera's kernels for the rest", or
  // "Tessera's kernels (cuDNN not loaded: ...)".
  const std::string& attention_kernels() const { return attention_kernels_; }
  // Attention calls (forward and backward) that cuDNN ran.
  int64_t cudnn_attention_calls() const { return cudnn_attention_calls_; }

  absl::StatusOr<DeviceBuffer> Allocate(int64_t numel, DType dtype,
                                        absl::string_view what) override;
  void SetMemoryLimit(int64_t bytes) override { meter_.SetLimit(bytes); }
  int64_t bytes_in_use() const override { return meter_.in_use_bytes(); }
  int64_t peak_bytes() const override { return meter_.peak_bytes(); }
  void ResetPeak() override { meter_.ResetPeak(); }  // peak = in use now

  void Synchronize() override;
  void CopyToHost(const Tensor& src, void* host) override;
  void CopyFromHost(const void* host, const Tensor& dst) override;

  void Copy(const Tensor& src, const Tensor& dst, int64_t n) override;
  void Fill(const Tensor& dst, int64_t n, float value) override;
  void Add(const Tensor& a, const Tensor& b, const Tensor& out,
           int64_t n) override;
  void Scale(const Tensor& x, int64_t n, float alpha) override;
  double SumSquares(const Tensor& x, int64_t n) override;

  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
            float alpha, const Tensor& a, const Tensor& b, float beta,
            const Tensor& c) override;

  void RmsNormForward(const Tensor& x, const Tensor& weight, int64_t rows,
                      int64_t cols, float eps, const Tensor& y,
                      const Tensor& rstd) override;
  void RmsNormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                       const Tensor& rstd, int64_t rows, int64_t cols,
                       const Tensor& dx, const Tensor& dweight) override;

  void EmbeddingForward(const Tensor& tokens, const Tensor& table,
                        int64_t n_tokens, int64_t vocab_begin,
                        int64_t vocab_rows, int64_t hidden,
                        const Tensor& out) override;
  void EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                         int64_t n_tokens, int64_t vocab_begin,
                         int64_t vocab_rows, int64_t hidden,
                         const Tensor& dtable) override;

  void RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                      int64_t tokens, int64_t heads, int64_t kv_heads,
                      int64_t head_dim, float theta, const Tensor& q,
                      const Tensor& k, const Tensor& v) override;
  void RopeQkvBackward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                       const Tensor& positions, int64_t tokens, int64_t heads,
                       int64_t kv_heads, int64_t head_dim, float theta,
                       const Tensor& dqkv) override;

  // head_dim must be one of attention_layout.h's kAttentionHeadDims.
  void AttentionForward(const AttentionShape& shape, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& q_pos,
                        const Tensor& k_pos, bool accumulate, const Tensor& out,
                        const Tensor& lse) override;
  void AttentionBackward(const AttentionShape& shape, const Tensor& dout,
                         const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& out, const Tensor& lse,
                         const Tensor& q_pos, const Tensor& k_pos,
                         const Tensor& dq, const Tensor& dk,
                         const Tensor& dv) override;

  void SwiGluForward(const Tensor& gate_up, int64_t tokens, int64_t ffn,
                     const Tensor& out) override;
  void SwiGluBackward(const Tensor& dout, const Tensor& gate_up, int64_t tokens,
                      int64_t ffn, const Tensor& dgate_up) override;

  void LogitsRowMax(const Tensor& logits, int64_t tokens, int64_t vocab_rows,
                    const Tensor& row_max) override;
  void LogitsSumExpAndTarget(const Tensor& logits, const Tensor& targets,
                             const Tensor& row_max, int64_t tokens,
                             int64_t vocab_begin, int64_t vocab_rows,
                             const Tensor& stats) override;
  void CrossEntropyBackward(const Tensor& logits, const Tensor& targets,
                            const Tensor& row_max, const Tensor& stats,
                            int64_t tokens, int64_t vocab_begin,
                            int64_t vocab_rows, float grad_scale,
                            const Tensor& loss, const Tensor& dlogits) override;

  void AdamW(const AdamWConfig& config, bool decay, const Tensor& master,
             const Tensor& grad, const Tensor& m, const Tensor& v,
             int64_t n) override;

 protected:
  void Free(const Tensor& view) override;

 private:
  CudaBackend(int device, int64_t memory_limit_bytes);
  absl::Status Init(int64_t gemm_workspace_bytes);
  void InitAttention(CudaAttentionKernels kernels);
  // cuDNN's attention for a plain causal block; false when it does not
  // apply or has no engine for the shape (the caller runs its kernels).
  bool CudnnAttentionForward(const AttentionShape& shape, const Tensor& q,
                             const Tensor& k, const Tensor& v,
                             const Tensor& out, const Tensor& lse);
  bool CudnnAttentionBackward(const AttentionShape& shape, const Tensor& dout,
                              const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& out,
                              const Tensor& lse, const Tensor& dq,
                              const Tensor& dk, const Tensor& dv);
  // Device scratch of at least `bytes` for one kernel call (grown stream-
  // ordered; valid until the next call of Scratch).
  void* Scratch(size_t bytes, absl::string_view op);
  // Aborts naming `op` when the last launch on this thread failed.
  void CheckLaunch(absl::string_view op, cudaError_t error);

  const int device_;
  std::string device_name_;
  size_t max_shared_bytes_ = 0;  // per block, with opt-in
  cudaStream_t stream_ = nullptr;
  void* gemm_workspace_ = nullptr;
  int64_t gemm_workspace_bytes_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::unique_ptr<cuda::CublasLtMatmul> matmul_;
  // shared_ptr: its deleter is bound where it is made, so a build without
  // cuDNN (which never makes one) needs no CudnnAttention destructor.
  std::shared_ptr<cuda::CudnnAttention> cudnn_;
  std::string attention_kernels_;
  int64_t cudnn_attention_calls_ = 0;

  const BackendChecks checks_;
  MemoryMeter meter_;
};

}  // namespace tessera::executor
