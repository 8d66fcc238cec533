#include "executor/cuda/cudnn_attention.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <exception>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cudnn_frontend.h"

// The frontend, built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, calls cuDNN
// through this handle, which its user opens.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace tessera::executor::cuda {
namespace {

namespace fe = cudnn_frontend;

// Tensor ids of the graphs' variant packs.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

// Where libcudnn is looked for: $TESSERA_CUDNN_LIBRARY when set, then the
// loader's search path (LD_LIBRARY_PATH, /usr/local/cuda via ld.so.conf, a
// PyTorch wheel's nvidia/cudnn/lib when the caller adds it).
std::vector<std::string> CudnnLibraryNames() {
  std::vector<std::string> names;
  if (const char* env = std::getenv("TESSERA_CUDNN_LIBRARY");
      env != nullptr && *env != '\0') {
    names.emplace_back(env);
  }
  names.emplace_back("libcudnn.so.9");
  names.emplace_back("libcudnn.so");
  return names;
}

// Opens libcudnn once per process: the loaded name, or why none loaded.
const absl::StatusOr<std::string>& LoadCudnn() {
  static const absl::StatusOr<std::string> loaded =
      []() -> absl::StatusOr<std::string> {
    std::vector<std::string> tried;
    for (const std::string& name : CudnnLibraryNames()) {
      if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        fe::cudnn_dlhandle = h;
        return name;
      }
      const char* why = dlerror();
      tried.push_back(absl::StrCat(name, " (", why ? why : "not found", ")"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cuDNN not loaded: ", absl::StrJoin(tried, "; ")));
  }();
  return loaded;
}

absl::Status FrontendStatus(const fe::error_t& e, const char* what) {
  if (e.is_good()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cuDNN attention: ", what, ": ", e.err_msg));
}

#define TESSERA_FE_RETURN_IF_ERROR(expr, what)                      \
  if (absl::Status s_ = FrontendStatus((expr), what); !s_.ok()) {   \
    return s_;                                                      \
  }

// [batch, seq, heads, head_dim] memory as cuDNN's (b, h, s, d) tensor.
std::shared_ptr<fe::graph::Tensor_attributes> Bshd(fe::graph::Graph& g,
                                                   const char* name, Uid uid,
                                                   int64_t b, int64_t s,
                                                   int64_t h, int64_t d) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({b, h, s, d})
                      .set_stride({s * h * d, d, h * d, 1}));
}

void SetBshdOutput(fe::graph::Tensor_attributes& t, Uid uid, int64_t b,
                   int64_t s, int64_t h, int64_t d) {
  t.set_output(true).set_uid(uid).set_dim({b, h, s, d}).set_stride(
      {s * h * d, d, h * d, 1});
}

}  // namespace

struct CudnnAttention::Graph {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace_bytes = 0;
};

absl::StatusOr<std::unique_ptr<CudnnAttention>> CudnnAttention::Create(
    cudaStream_t stream) {
  const absl::StatusOr<std::string>& loaded = LoadCudnn();
  if (!loaded.ok()) return loaded.status();
  try {
    const size_t v = fe::detail::get_backend_version();
    if (v < 90000) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cuDNN attention: ", *loaded, " is version ", v,
          "; fused attention with GQA needs 9.0 or newer"));
    }
    cudnnHandle_t handle = nullptr;
    if (cudnnStatus_t st = fe::detail::create_handle(&handle);
        st != CUDNN_STATUS_SUCCESS) {
      return absl::FailedPreconditionError(
          absl::StrCat("cuDNN attention: cudnnCreate failed (status ",
                       static_cast<int>(st), ")"));
    }
    if (cudnnStatus_t st = fe::detail::set_stream(handle, stream);
        st != CUDNN_STATUS_SUCCESS) {
      fe::detail::destroy_handle(handle);
      return absl::InternalError(
          absl::StrCat("cuDNN attention: cudnnSetStream failed (status ",
                       static_cast<int>(st), ")"));
    }
    std::string version = absl::StrCat("cuDNN ", v / 10000, ".",
                                       (v % 10000) / 100, ".", v % 100);
    return std::unique_ptr<CudnnAttention>(
        new CudnnAttention(stream, handle, std::move(version)));
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuDNN attention: ", e.what()));
  }
}

CudnnAttention::CudnnAttention(cudaStream_t stream, void* handle,
                               std::string version)
    : stream_(stream), handle_(handle), version_(std::move(version)) {}

CudnnAttention::~CudnnAttention() {
  graphs_.clear();
  if (workspace_ != nullptr) cudaFreeAsync(workspace_, stream_);
  if (handle_ != nullptr) {
    fe::detail::destroy_handle(static_cast<cudnnHandle_t>(handle_));
  }
}

absl::StatusOr<const CudnnAttention::Graph*> CudnnAttention::GraphFor(
    const CudnnAttentionShape& s, bool backward) {
  const Key key{backward, s.batch, s.seq, s.heads, s.kv_heads, s.head_dim};
  if (auto it = graphs_.find(key); it != graphs_.end()) return it->second.get();
  if (auto it = unsupported_.find(key); it != unsupported_.end()) {
    return it->second;
  }
  absl::StatusOr<std::unique_ptr<Graph>> built = BuildGraph(s, backward);
  if (!built.ok()) {
    // No engine for the shape (or a build that failed): the caller's cue to
    // fall back, remembered so that the next call does not build again.
    absl::Status unsupported = absl::UnimplementedError(
        absl::StrCat(built.status().message(), " (", s.batch, "x", s.seq,
                     ", ", s.heads, "/", s.kv_heads, " heads of ", s.head_dim,
                     backward ? ", backward)" : ", forward)"));
    unsupported_.emplace(key, unsupported);
    return unsupported;
  }
  const Graph* out = built->get();
  graphs_.emplace(key, *std::move(built));
  return out;
}

absl::StatusOr<std::unique_ptr<CudnnAttention::Graph>>
CudnnAttention::BuildGraph(const CudnnAttentionShape& s, bool backward) {
  const int64_t b = s.batch, n = s.seq, h = s.heads, hk = s.kv_heads,
                d = s.head_dim;
  const float scale = static_cast<float>(1.0 / std::sqrt(double(d)));
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = Bshd(*g, "q", kQ, b, n, h, d);
  auto k = Bshd(*g, "k", kK, b, n, hk, d);
  auto v = Bshd(*g, "v", kV, b, n, hk, d);
  if (!backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attention forward")
                       .set_generate_stats(true)
                       .set_causal_mask(true)
                       .set_attn_scale(scale);
    auto [o, stats] = g->sdpa(q, k, v, options);
    SetBshdOutput(*o, kO, b, n, h, d);
    stats->set_output(true).set_uid(kStats).set_data_type(
        fe::DataType_t::FLOAT);
  } else {
    auto o = Bshd(*g, "out", kO, b, n, h, d);
    auto dout = Bshd(*g, "dout", kDO, b, n, h, d);
    auto stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("lse")
                               .set_uid(kStats)
                               .set_dim({b, h, n, 1})
                               .set_stride({h * n, n, 1, 1})
                               .set_data_type(fe::DataType_t::FLOAT));
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("attention backward")
                       .set_causal_mask(true)
                       .set_attn_scale(scale);
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dout, stats, options);
    SetBshdOutput(*dq, kDQ, b, n, h, d);
    SetBshdOutput(*dk, kDK, b, n, hk, d);
    SetBshdOutput(*dv, kDV, b, n, hk, d);
  }
  auto cudnn = static_cast<cudnnHandle_t>(handle_);
  try {
    TESSERA_FE_RETURN_IF_ERROR(g->validate(), "validate");
    TESSERA_FE_RETURN_IF_ERROR(g->build_operation_graph(cudnn),
                               "build_operation_graph");
    TESSERA_FE_RETURN_IF_ERROR(g->create_execution_plans({fe::HeurMode_t::A}),
                               "create_execution_plans");
    TESSERA_FE_RETURN_IF_ERROR(g->check_support(cudnn), "check_support");
    TESSERA_FE_RETURN_IF_ERROR(g->build_plans(cudnn), "build_plans");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cuDNN attention: ", e.what()));
  }
  auto built = std::make_unique<Graph>();
  built->graph = std::move(g);
  TESSERA_FE_RETURN_IF_ERROR(
      built->graph->get_workspace_size(built->workspace_bytes),
      "get_workspace_size");
  return built;
}

absl::StatusOr<void*> CudnnAttention::Workspace(int64_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  if (workspace_ != nullptr) cudaFreeAsync(workspace_, stream_);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  if (cudaError_t e = cudaMallocAsync(&workspace_, static_cast<size_t>(bytes),
                                      stream_);
      e != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat("cuDNN attention: no device memory for a ", bytes,
                     "-byte workspace: ", cudaGetErrorString(e)));
  }
  workspace_bytes_ = bytes;
  return workspace_;
}

absl::Status CudnnAttention::Execute(const Graph& graph,
                                     const std::map<int64_t, void*>& ptrs) {
  absl::StatusOr<void*> workspace = Workspace(graph.workspace_bytes);
  if (!workspace.ok()) return workspace.status();
  std::unordered_map<int64_t, void*> pack(ptrs.begin(), ptrs.end());
  try {
    TESSERA_FE_RETURN_IF_ERROR(
        graph.graph->execute(static_cast<cudnnHandle_t>(handle_), pack,
                             *workspace),
        "execute");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cuDNN attention: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status CudnnAttention::Forward(const CudnnAttentionShape& shape,
                                     const void* q, const void* k,
                                     const void* v, void* out, float* lse) {
  absl::StatusOr<const Graph*> graph = GraphFor(shape, /*backward=*/false);
  if (!graph.ok()) return graph.status();
  return Execute(**graph, {{kQ, const_cast<void*>(q)},
                           {kK, const_cast<void*>(k)},
                           {kV, const_cast<void*>(v)},
                           {kO, out},
                           {kStats, lse}});
}

absl::Status CudnnAttention::Backward(const CudnnAttentionShape& shape,
                                      const void* q, const void* k,
                                      const void* v, const void* out,
                                      const void* dout, const float* lse,
                                      void* dq, void* dk, void* dv) {
  absl::StatusOr<const Graph*> graph = GraphFor(shape, /*backward=*/true);
  if (!graph.ok()) return graph.status();
  return Execute(**graph, {{kQ, const_cast<void*>(q)},
                           {kK, const_cast<void*>(k)},
                           {kV, const_cast<void*>(v)},
                           {kO, const_cast<void*>(out)},
                           {kDO, const_cast<void*>(dout)},
                           {kStats, const_cast<float*>(lse)},
                           {kDQ, dq},
                           {kDK, dk},
                           {kDV, dv}});
}

}  // namespace tessera::executor::cuda
