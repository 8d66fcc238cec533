#include "executor/engine/param_export.h"

#include <algorithm>

namespace tessera::executor {

void ExportHeld(const RankEngine& engine, Backend& backend, Held what,
                GlobalTensors* out, absl::Mutex* mu) {
  const ModelShard& shard = engine.shard();
  const ParamStore& params = engine.params();
  for (int u = 0; u < static_cast<int>(shard.units.size()); ++u) {
    const int64_t begin = params.shard_begin(u), end = params.shard_end(u);
    const Tensor src = what == Held::kWeights ? params.master(u)
                       : what == Held::kGradients
                           ? params.grad_shard(u)
                           : params.reduced_grad_shard(u);
    if (src.data == nullptr) continue;  // not reduced yet: nothing to export
    std::vector<float> host(end - begin);
    backend.CopyToHost(src, host.data());
    absl::MutexLock lock(mu);
    for (const ParamSegment& seg : shard.units[u].segments) {
      GlobalTensor& g = (*out)[seg.name];
      if (g.values.empty()) {
        g.rows = seg.global_rows;
        g.cols = seg.global_cols;
        g.values.assign(g.rows * g.cols, 0.0f);
        g.writers.assign(g.rows * g.cols, 0);
      }
      const int64_t lo = std::max(seg.offset, begin);
      const int64_t hi = std::min(seg.offset + seg.numel(), end);
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t local = e - seg.offset;
        const int64_t row = seg.row_begin + local / seg.cols();
        const int64_t col = seg.col_begin + local % seg.cols();
        const int64_t at = row * g.cols + col;
        const float v = host[e - begin];
        if (g.writers[at] > 0 && g.values[at] != v) ++g.conflicts;
        g.values[at] = v;
        ++g.writers[at];
      }
    }
  }
}

}  // namespace tessera::executor
