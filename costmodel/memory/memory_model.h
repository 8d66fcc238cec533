// Peak memory per GPU of a layout under a training stack: model states, the
// saved activations of the micro-batches in flight (layer_activations.h,
// pipeline_schedule.h), the loss's logits, what FSDP holds gathered, and the
// calibrated overheads.
//
// Model states (Rajbhandari et al. 2020, ZeRO): the stack's bytes per
// parameter of persistent weights, fp32 master weights, gradients and AdamW
// moments (Megatron-Core 2 + 4 + 4 + 8; FSDP/FSDP2 keep the fp32 parameter as
// the only persistent copy: 0 + 4 + 4 + 8), plus cached fp8 weight copies
// with fp8. Every state divides by tp*pp (stage_params.h). ZeRO shards over
// the shard group, shard_group * cp ranks (cp ranks hold the same weights,
// and Megatron-LM and torchtitan fold them into the sharding group): zero >= 1
// the master weights and moments, zero >= 2 also the gradients, zero 3 also
// the weights. With HSDP (shard_group < dp) the states are replicated across
// dp / shard_group groups.
//
// Gathered parameters (zero 3, and zero 2 where the stack's ZeRO-2 shards
// parameters): by default the current and the prefetched unit in bf16 and
// the current unit's unsharded gradient (bf16, and its reduce-dtype copy)
// before its ReduceScatter (Zhao et al. 2023, PyTorch FSDP, Section 3.3);
// the whole stage in bf16 when parameters stay gathered from forward to
// backward (FSDP SHARD_GRAD_OP, reshard_after_forward=False), plus its
// unsharded gradients when they also stay across pipeline micro-batches
// (torchtitan with pp).
//
// Peak = tensors + memory_fixed_overhead_gib + memory_fragmentation *
// tensors; the most loaded of the first, second and last stage (most
// micro-batches in flight, the embedding; the output layer and logits).
//
//   MemoryBreakdown m = PeakMemoryPerGpu(model, layout, training, stack, c);
//   bool fits = m.total_bytes <= UsableMemoryBytes(gpu);
#pragma once

#include <cstdint>

#include "core/gpu.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// Peak bytes per GPU by what holds them (the most loaded pipeline stage).
struct MemoryBreakdown {
  double weights_bytes = 0;         // bf16 parameters held (sharded by zero 3)
  double master_weights_bytes = 0;  // fp32 master copy (sharded by zero >= 1)
  double gradients_bytes = 0;       // fp32 gradients (sharded by zero >= 2)
  double optimizer_bytes = 0;       // AdamW moments (sharded by zero >= 1)
  double activations_bytes = 0;  // saved activations of in-flight micro-batches
  double logits_bytes = 0;       // the loss's logits working set (last stage)
  double gathered_params_bytes =
      0;                      // FSDP: gathered units (current + prefetched)
  double overhead_bytes = 0;  // CUDA/NCCL workspace and fragmentation
  double total_bytes = 0;
};

// What one layer of a micro-batch holds, the same on every stage: computed
// once per layout (layer_activations.h).
struct LayerMemory {
  double kept_bytes = 0;              // LayerActivationBytes
  double recompute_extra_bytes = 0;   // LayerRecomputeExtraBytes
  double logits_bytes = 0;            // LogitsWorkingSetBytes (last stage)
};
LayerMemory LayerMemoryOf(const ModelConfig& model, const Layout& layout,
                          const TrainingConfig& training,
                          const TrainingStack& stack,
                          const Calibration& calibration);

// The memory of pipeline rank `stage` of a resolved layout.
MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& layout,
                            const TrainingConfig& training,
                            const TrainingStack& stack,
                            const Calibration& calibration, int64_t stage);
MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& layout,
                            const TrainingConfig& training,
                            const TrainingStack& stack,
                            const Calibration& calibration,
                            const LayerMemory& layer, int64_t stage);

// The most loaded stage's memory (`layer`: LayerMemoryOf the same layout,
// when the caller has it).
MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& layout,
                                 const TrainingConfig& training,
                                 const TrainingStack& stack,
                                 const Calibration& calibration);
MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& layout,
                                 const TrainingConfig& training,
                                 const TrainingStack& stack,
                                 const Calibration& calibration,
                                 const LayerMemory& layer);

// The memory a layout may use: what the driver reports for the GPU less the
// cluster's headroom (core/workload.h MemoryHeadroomBytes; the CUDA/NCCL
// overheads are part of the prediction, not subtracted here).
double UsableMemoryBytes(const ClusterConfig& cluster);

}  // namespace tessera::costmodel
