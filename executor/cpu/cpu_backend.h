// The CPU implementation of Backend: fp32 kernels on host memory, GEMMs
// through a BLAS (gemm.h), the numerical reference for the CUDA backend and
// the way to run whole trials without GPUs. Each kernel validates its
// tensors' dtypes and sizes (act = f32, ids/positions = i32; bf16 is the CUDA
// backend's and is rejected) and then calls the templated kernel of its
// layer's header (attention.h, rmsnorm.h, ...). Kernels run synchronously on
// the calling thread.
//
//   CpuBackend backend({.memory_limit_bytes = int64_t{1} << 30});
//   TESSERA_ASSIGN_OR_RETURN(DeviceBuffer x,
//                            backend.Allocate(rows * cols, DType::kF32, "x"));
//   backend.RmsNormForward(x.view(), w.view(), rows, cols, 1e-5f, y.view(),
//                          rstd.view());
//
// Threads: one backend per rank thread is the expected use; Allocate, Free
// and the memory counters are safe from any thread, and kernels of different
// backends (or of one backend on disjoint outputs) may run concurrently.
//
// Misuse that the void kernel signatures cannot report (a bf16 or i32 tensor
// where f32 belongs, a view smaller than the shape needs, a shape that is
// not positive) aborts with a message naming the kernel and the argument:
// it is a bug in the caller, as an illegal address would be on CUDA.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor/backend.h"
#include "executor/backend_checks.h"
#include "executor/memory_meter.h"
#include "executor/tensor.h"

namespace tessera::executor {

struct CpuBackendOptions {
  // Bytes Allocate may hand out at once; 0 = no limit (SetMemoryLimit
  // changes it later).
  int64_t memory_limit_bytes = 0;
  // Threads one GEMM may use. Process-wide (one BLAS thread pool): each
  // backend sets it when created, the last one created wins. 0 = automatic:
  // the CPUs the process may run on (core/usable_cpus.h) divided among the
  // live CpuBackends (rank threads x BLAS threads <= CPUs), at least 1,
  // recomputed as backends come and go.
  int blas_threads = 0;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options = {});
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  absl::string_view name() const override { return "cpu"; }
  DType compute_dtype() const override { return DType::kF32; }

  // Memory is 64-byte aligned and zeroed. Accounting counts the bytes asked
  // for (numel * dtype size). kF32 and kI32 only: kBF16 is INVALID_ARGUMENT.
  absl::StatusOr<DeviceBuffer> Allocate(int64_t numel, DType dtype,
                                        absl::string_view what) override;
  void SetMemoryLimit(int64_t bytes) override { meter_.SetLimit(bytes); }
  int64_t bytes_in_use() const override { return meter_.in_use_bytes(); }
  int64_t peak_bytes() const override { return meter_.peak_bytes(); }
  void ResetPeak() override { meter_.ResetPeak(); }  // peak = in use now

  void Synchronize() override {}
  void CopyToHost(const Tensor& src, void* host) override;
  void CopyFromHost(const void* host, const Tensor& dst) override;

  // Copy converts f32 <-> bf16 (host views of bf16 data, e.g. checkpoints);
  // the other elementwise ops take f32.
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
  const int blas_threads_;  // as given in the options (0 = automatic)
  const BackendChecks checks_;
  MemoryMeter meter_;
};

}  // namespace tessera::executor
