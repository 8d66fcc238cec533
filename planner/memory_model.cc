#include "planner/memory_model.h"

#include <algorithm>

#include "planner/activations.h"
#include "planner/layer_shard.h"
#include "planner/pipeline_schedule.h"
#include "planner/stage_params.h"

namespace tessera::planner {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& l,
                            int64_t seq_len, const Calibration& c,
                            int64_t stage) {
  const StageParams sp = StageParamsPerGpu(model, l, stage);
  const double shards = static_cast<double>(l.shard_group * l.cp);
  MemoryBreakdown m;
  // ZeRO (Rajbhandari et al. 2020, Section 5): 2 + 4 + 4 + 8 bytes/param.
  m.weights_bytes = 2 * sp.params / (l.zero >= 3 ? shards : 1);
  m.master_weights_bytes = 4 * sp.params / (l.zero >= 1 ? shards : 1);
  m.gradients_bytes = 4 * sp.params / (l.zero >= 2 ? shards : 1);
  m.optimizer_bytes = 8 * sp.params / (l.zero >= 1 ? shards : 1);

  const LayerShard shard = LayerShard::Of(l, seq_len);
  m.activations_bytes = InFlightLayers(l, stage, model.layers, sp.layers) *
                        LayerActivationBytes(model, shard, l.recompute);
  if (l.recompute == Recompute::kFull) {
    // The layer being recomputed holds its whole set (Korthikanti 2022, §5).
    m.activations_bytes += LayerWorkingSetBytes(model, shard);
  }
  if (sp.last) m.activations_bytes += LogitsActivationBytes(model, shard);

  if (l.zero >= 3) {
    // FSDP: the current and the prefetched unit in bf16, and the current
    // unit's unsharded fp32 gradient before its ReduceScatter (Zhao et al.
    // 2023, PyTorch FSDP, Section 3.3).
    const double unit = std::max({sp.layer_params / c.fsdp_units_per_layer,
                                  sp.embedding_params, sp.output_params});
    m.gathered_params_bytes = 2 * 2 * unit + 4 * unit;
  }
  const double tensors = m.weights_bytes + m.master_weights_bytes +
                         m.gradients_bytes + m.optimizer_bytes +
                         m.activations_bytes + m.gathered_params_bytes;
  m.overhead_bytes =
      c.memory_fixed_overhead_gib * kGiB + c.memory_fragmentation * tensors;
  m.total_bytes = tensors + m.overhead_bytes;
  return m;
}

MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& l,
                                 int64_t seq_len, const Calibration& c) {
  MemoryBreakdown first = StageMemory(model, l, seq_len, c, 0);
  if (l.pp == 1) return first;
  MemoryBreakdown last = StageMemory(model, l, seq_len, c, l.pp - 1);
  return last.total_bytes > first.total_bytes ? last : first;
}

double UsableMemoryBytes(const GpuSpec& gpu) {
  return static_cast<double>(gpu.memory_bytes);
}

}  // namespace tessera::planner
