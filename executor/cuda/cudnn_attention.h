// Causal self-attention through cuDNN's fused flash attention (the
// cudnn-frontend graph API, third_party/cudnn_frontend): the forward with the
// softmax's log-sum-exp, and the backward. cuDNN is opened at run time
// (dlopen of libcudnn.so.9), so a machine without it gets an error from
// Create and the CUDA backend keeps its own kernels (attention.cuh). A graph
// is built once per shape (building takes milliseconds to seconds) and
// cached. Plain C++: no cuDNN header here.
//
// Layouts, the Backend contract's (executor/backend.h) for a block whose
// query and key positions are both 0..seq-1 (no context parallelism):
//   q, out, dout, dq  bf16 [batch, seq, heads, head_dim]
//   k, v, dk, dv      bf16 [batch, seq, kv_heads, head_dim]
//   lse               f32  [batch, heads, seq], natural log
// Query i sees key j iff j <= i; scale 1/sqrt(head_dim); heads a multiple of
// kv_heads (grouped-query attention).
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudnnAttention> a,
//                            CudnnAttention::Create(stream));
//   TESSERA_RETURN_IF_ERROR(a->Forward(shape, q, k, v, out, lse));
//
// Threads: one object per thread (the CUDA backend's), like the backend.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera::executor::cuda {

struct CudnnAttentionShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

class CudnnAttention {
 public:
  // Opens libcudnn (once per process) and a cuDNN handle on `stream`.
  // FailedPrecondition, naming what was looked for, when cuDNN cannot be
  // loaded or is older than 9.0.
  static absl::StatusOr<std::unique_ptr<CudnnAttention>> Create(
      cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // "cuDNN 9.19.0", the library loaded.
  const std::string& version() const { return version_; }

  // Writes out and lse. Unimplemented when no graph could be built for the
  // shape (the caller falls back; asked again, the same answer without a
  // second build); another error when the built graph failed to run.
  absl::Status Forward(const CudnnAttentionShape& shape, const void* q,
                       const void* k, const void* v, void* out, float* lse);
  // Writes dq, dk and dv (bf16) from the forward's out and lse.
  absl::Status Backward(const CudnnAttentionShape& shape, const void* q,
                        const void* k, const void* v, const void* out,
                        const void* dout, const float* lse, void* dq, void* dk,
                        void* dv);

  // Graphs built so far (forward and backward count apart).
  int64_t graphs_built() const { return static_cast<int64_t>(graphs_.size()); }

 private:
  struct Graph;  // a built cudnn-frontend graph and its workspace size
  using Key = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t>;

  CudnnAttention(cudaStream_t stream, void* handle, std::string version);
  absl::StatusOr<const Graph*> GraphFor(const CudnnAttentionShape& shape,
                                        bool backward);
  absl::StatusOr<std::unique_ptr<Graph>> BuildGraph(
      const CudnnAttentionShape& shape, bool backward);
  absl::StatusOr<void*> Workspace(int64_t bytes);
  absl::Status Execute(const Graph& graph, const std::map<int64_t, void*>& ptrs);

  cudaStream_t stream_;
  void* handle_;  // cudnnHandle_t
  std::string version_;
  std::map<Key, std::unique_ptr<Graph>> graphs_;
  std::map<Key, absl::Status> unsupported_;  // shapes cuDNN could not build
  void* workspace_ = nullptr;
  int64_t workspace_bytes_ = 0;
};

}  // namespace tessera::executor::cuda
