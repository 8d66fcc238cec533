#include "costmodel/memory/memory_model.h"

#include <algorithm>

#include "core/units.h"
#include "core/layer_shard.h"
#include "costmodel/memory/layer_activations.h"
#include "costmodel/pipeline/pipeline_schedule.h"
#include "costmodel/pipeline/stage_params.h"
#include "costmodel/pipeline/stage_split.h"

namespace tessera::costmodel {
namespace {


// Bytes FSDP / sharded ZeRO-2 holds gathered on top of the sharded states.
double GatheredParamBytes(const Layout& l, const StageParams& sp,
                          const TrainingStack& stack, const Calibration& c) {
  const FsdpPolicy& f = stack.fsdp;
  const double gather = stack.comm_bytes.parameter_gather;
  const bool sharded_zero2 = l.zero == 2 && !f.zero2_replicates_parameters;
  if (l.zero < 3 && !sharded_zero2) return 0;
  if (l.zero == 3 && l.pp > 1 && f.keeps_gathered_across_pipeline_micro_batches) {
    // The stage's parameters and unsharded gradients, for the whole step.
    return sp.params * (gather + stack.model_states.gradients);
  }
  // The current unit's unsharded gradient (bf16, and its reduce-dtype copy).
  const double unit = std::max({sp.layer_params / c.fsdp_units_per_layer,
                                sp.embedding_params, sp.output_params});
  const double unit_grad = unit * (2 + stack.comm_bytes.gradient_reduce);
  if (sharded_zero2 || !f.reshard_after_forward) {
    // Gathered from the forward to the backward: the whole stage at the end
    // of the forward pass.
    return sp.params * gather + unit_grad;
  }
  // The current and the prefetched unit.
  return 2 * gather * unit + unit_grad;
}

}  // namespace

LayerMemory LayerMemoryOf(const ModelConfig& model, const Layout& l,
                          const TrainingConfig& training,
                          const TrainingStack& stack, const Calibration& c) {
  const LayerShard shard = LayerShard::Of(l, training);
  LayerMemory r;
  r.kept_bytes = LayerActivationBytes(model, shard, stack, l.recompute, c);
  r.recompute_extra_bytes =
      LayerRecomputeExtraBytes(model, shard, stack, l.recompute, c);
  r.logits_bytes = LogitsWorkingSetBytes(model, shard, c);
  return r;
}

MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& l,
                            const TrainingConfig& training,
                            const TrainingStack& stack, const Calibration& c,
                            int64_t stage) {
  return StageMemory(model, l, training, stack, c,
                     LayerMemoryOf(model, l, training, stack, c), stage);
}

MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& l,
                            const TrainingConfig& training,
                            const TrainingStack& stack, const Calibration& c,
                            const LayerMemory& layer, int64_t stage) {
  const StageParams sp =
      StageParamsPerGpu(model, l, stack.pipeline_split, stage);
  const double shards = static_cast<double>(l.shard_group * l.cp);
  const ModelStateBytes& b = stack.model_states;
  const bool sharded_zero2 = l.zero == 2 && !stack.fsdp.zero2_replicates_parameters;
  const bool weights_sharded = l.zero >= 3 || sharded_zero2;
  MemoryBreakdown m;
  double weight_bytes = b.weights;
  if (training.precision == Precision::kFp8) weight_bytes += b.fp8_weights;
  // ZeRO (Rajbhandari et al. 2020, Section 5), with the stack's bytes.
  m.weights_bytes = weight_bytes * sp.params / (weights_sharded ? shards : 1);
  m.master_weights_bytes = b.master_weights * sp.params / (l.zero >= 1 ? shards : 1);
  m.gradients_bytes = b.gradients * sp.params / (l.zero >= 2 ? shards : 1);
  m.optimizer_bytes = b.optimizer * sp.params / (l.zero >= 1 ? shards : 1);

  // Ranks past the last that holds a block take no part in the schedule.
  Layout scheduled = l;
  scheduled.pp = ActiveStages(model, l, stack.pipeline_split);
  m.activations_bytes =
      InFlightLayers(scheduled, stage, model.layers, sp.layers) *
      layer.kept_bytes;
  // The layer being recomputed re-materialises what it dropped (Korthikanti
  // 2022, Section 5: one layer's whole set under full recomputation).
  m.activations_bytes += layer.recompute_extra_bytes;
  if (sp.last) m.logits_bytes = layer.logits_bytes;
  m.gathered_params_bytes = GatheredParamBytes(l, sp, stack, c);
  const double tensors = m.weights_bytes + m.master_weights_bytes +
                         m.gradients_bytes + m.optimizer_bytes +
                         m.activations_bytes + m.logits_bytes +
                         m.gathered_params_bytes;
  m.overhead_bytes =
      c.memory_fixed_overhead_gib * kGiB + c.memory_fragmentation * tensors;
  m.total_bytes = tensors + m.overhead_bytes;
  return m;
}

MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& l,
                                 const TrainingConfig& training,
                                 const TrainingStack& stack,
                                 const Calibration& c) {
  return PeakMemoryPerGpu(model, l, training, stack, c,
                          LayerMemoryOf(model, l, training, stack, c));
}

MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& l,
                                 const TrainingConfig& training,
                                 const TrainingStack& stack,
                                 const Calibration& c,
                                 const LayerMemory& layer) {
  MemoryBreakdown peak = StageMemory(model, l, training, stack, c, layer, 0);
  // The second stage holds one micro-batch fewer but may hold more layers
  // (uneven stages are lighter at the ends); the head stage holds the
  // logits.
  for (int64_t stage :
       {int64_t{1}, HeadStage(model, l, stack.pipeline_split)}) {
    if (stage <= 0 || stage >= l.pp) continue;
    MemoryBreakdown m =
        StageMemory(model, l, training, stack, c, layer, stage);
    if (m.total_bytes > peak.total_bytes) peak = m;
  }
  return peak;
}

double UsableMemoryBytes(const ClusterConfig& cluster) {
  return static_cast<double>(cluster.gpu.memory_bytes) -
         MemoryHeadroomBytes(cluster);
}

}  // namespace tessera::costmodel
