// Peak memory per GPU of a layout: model states (Rajbhandari et al. 2020,
// ZeRO: bf16 weights 2 B, fp32 master weights 4 B, fp32 gradients 4 B, AdamW
// moments 8 B per parameter), activations (activations.h) of the micro-batches
// in flight (pipeline_schedule.h), FSDP's gathered units, logits, and the
// calibrated overheads.
//
// Sharding: every state divides by tp*pp (stage_params.h). ZeRO shards over
// the shard group, shard_group * cp ranks (cp ranks hold the same weights, and
// Megatron-LM and TorchTitan fold them into the sharding group): zero >= 1 the
// master weights and moments, zero >= 2 also the gradients, zero 3 also the
// bf16 weights. With HSDP (shard_group < dp) the states are replicated across
// dp / shard_group groups.
//
//   MemoryBreakdown m = PeakMemoryPerGpu(model, layout, seq_len, calibration);
//   bool fits = m.total_bytes <= UsableMemoryBytes(gpu);
#pragma once

#include <cstdint>

#include "core/gpu.h"
#include "core/layout.h"
#include "core/model.h"
#include "planner/calibration.h"
#include "planner/prediction.h"

namespace tessera::planner {

// The memory of pipeline rank `stage` of a resolved layout.
MemoryBreakdown StageMemory(const ModelConfig& model, const Layout& layout,
                            int64_t seq_len, const Calibration& calibration,
                            int64_t stage);

// The most loaded stage's memory: the larger of the first stage (most
// micro-batches in flight, the embedding) and the last (the output layer and
// logits).
MemoryBreakdown PeakMemoryPerGpu(const ModelConfig& model, const Layout& layout,
                                 int64_t seq_len,
                                 const Calibration& calibration);

// The memory a layout may use: what the driver reports for the GPU (the
// overheads are part of the prediction, not subtracted here).
double UsableMemoryBytes(const GpuSpec& gpu);

}  // namespace tessera::planner
