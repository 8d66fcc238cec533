// The parameters, gradients and optimizer states of one rank, under the
// layout's ZeRO stage (Rajbhandari et al. 2020) and HSDP sharding:
//
//   zero 0  full master weights and AdamW moments; gradients all-reduced over
//           the dp x cp ranks that hold the same parameters.
//   zero 1  master weights and moments sharded over the shard group;
//           gradients accumulate in full, are reduce-scattered once per step,
//           and the updated shards all-gathered back into the full weights.
//   zero 2  + gradients sharded: each unit's gradient is reduce-scattered into
//           the shard right after its backward, per micro-batch.
//   zero 3  + weights sharded (FSDP FULL_SHARD): a unit's weights are gathered
//           before use (Acquire, Prefetch) and freed after (Release).
// With HSDP (shard_group < dp) the shard group is shard_group dp ranks x all cp
// ranks, and shard gradients are all-reduced across the replica groups.
//
// Units are flat buffers (model_shard.h) padded to a multiple of the shard
// group size; rank i of the shard group holds elements [i*P/S, (i+1)*P/S).
//
//   TESSERA_ASSIGN_OR_RETURN(Tensor w, store.Acquire(u));   // compute dtype
//   TESSERA_ASSIGN_OR_RETURN(Tensor g, store.BeginBackward(u));  // f32, add
//   ... backward adds into g ...
//   TESSERA_RETURN_IF_ERROR(store.EndBackward(u));
//   store.Release(u);
//   TESSERA_RETURN_IF_ERROR(store.ApplyOptimizer(adamw));   // once per step
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "executor/backend.h"
#include "executor/engine/model_shard.h"
#include "executor/engine/parallel_groups.h"

namespace tessera::executor {

class ParamStore {
 public:
  // Allocates and initialises (param_init.h, from `seed`) every unit of
  // `shard`. `backend`, `groups` and `shard` must outlive the store.
  static absl::StatusOr<std::unique_ptr<ParamStore>> Create(
      Backend& backend, ParallelGroups& groups, const Layout& layout,
      const ModelShard& shard, uint64_t seed);

  // The unit's weights in the compute dtype, whole (its tp slice, not sharded
  // over dp), padded_numel(unit) elements. Under zero 3 gathers them unless
  // prefetched; valid until Release.
  absl::StatusOr<Tensor> Acquire(int unit);
  // Zero 3: gathers `unit` now so that a later Acquire finds it (FSDP's
  // prefetch of the next unit). No-op otherwise or when already gathered.
  absl::Status Prefetch(int unit);
  // Zero 3: frees the gathered weights. No-op otherwise.
  void Release(int unit);

  // An f32 buffer of padded_numel(unit) elements that the unit's backward
  // adds its weight gradients into.
  absl::StatusOr<Tensor> BeginBackward(int unit);
  // Zero 2/3: reduce-scatters this micro-batch's gradient into the shard and
  // frees the full buffer. No-op for zero 0/1 (they reduce once per step).
  absl::Status EndBackward(int unit);

  // Reduces the step's gradients over the ranks that share each parameter
  // (collective), leaving each unit's reduced gradient of [shard_begin,
  // shard_end) in place for reduced_grad_shard until ApplyOptimizer, which
  // calls it when the caller has not.
  absl::Status ReduceGradients();

  // Reduces the step's gradients (unless ReduceGradients did); with
  // max_grad_norm > 0 scales them all by
  // min(1, max_grad_norm / (norm + 1e-6)), norm the global L2 norm over
  // every parameter of the model (PyTorch's clip_grad_norm_, collective over
  // the world); applies AdamW to the master weights this rank holds, brings
  // the compute weights up to date, and zeroes the gradients. Returns the
  // norm before clipping (0 when not clipping).
  absl::StatusOr<double> ApplyOptimizer(const AdamWConfig& config,
                                        double max_grad_norm = 0);

  // ---- Inspection (tests, checkpoints) ---------------------------------
  int64_t padded_numel(int unit) const;
  // The range of the padded unit whose master weights this rank holds.
  int64_t shard_begin(int unit) const;
  int64_t shard_end(int unit) const;
  // Master weights (f32) of [shard_begin, shard_end).
  Tensor master(int unit) const;
  // The accumulated gradient (f32) of [shard_begin, shard_end) after the last
  // backward and before ApplyOptimizer: under zero 0/1 the local
  // (unreduced) full gradient's shard range; under zero 2/3 the shard
  // accumulator (reduced over the shard group, not yet across replicas).
  Tensor grad_shard(int unit) const;
  // After ReduceGradients and before ApplyOptimizer: the unit's gradient of
  // [shard_begin, shard_end) summed over every rank that contributes to it,
  // before clipping; an empty Tensor otherwise.
  Tensor reduced_grad_shard(int unit) const;

 private:
  struct UnitState {
    int64_t padded = 0;       // P
    int64_t shard_begin = 0;  // elements of P held as master
    int64_t shard_end = 0;
    DeviceBuffer master;      // f32 [shard_end - shard_begin]
    DeviceBuffer exp_avg;     // AdamW first moment, like master
    DeviceBuffer exp_avg_sq;  // AdamW second moment, like master
    DeviceBuffer compute;     // act [P]: persistent (zero < 3) or gathered
    bool compute_aliases_master = false;  // zero 0 with f32 compute
    DeviceBuffer grad;       // f32: [P] (zero 0/1) or the shard (zero 2/3)
    DeviceBuffer grad_full;  // zero 2/3: this micro-batch's [P], transient
  };

  ParamStore(Backend& backend, ParallelGroups& groups, const Layout& layout,
             const ModelShard& shard);
  absl::Status InitUnit(int unit, uint64_t seed);
  // Sums the tp-replicated segments (norm weights) of a full f32 gradient over
  // the tp group: with sequence parallelism each tp rank saw other tokens.
  absl::Status ReduceReplicatedOverTp(int unit, const Tensor& grad_full);
  // Copies (casting) the master shard into a compute-dtype buffer and
  // all-gathers it over the shard group into `full` ([P]).
  absl::Status GatherCompute(int unit, const Tensor& full);
  // The unit's gradient reduced over the ranks that share its parameters:
  // the range [shard_begin, shard_end) this rank updates.
  absl::StatusOr<Tensor> ReduceGradient(int unit);
  // The L2 norm over the whole model of the reduced gradients (`grads`, one
  // per unit as ReduceGradient returns them); collective over the world.
  absl::StatusOr<double> GlobalGradNorm(const std::vector<Tensor>& grads);
  // AdamW over the segments of `unit` that intersect the held shard.
  void AdamWOnShard(int unit, const AdamWConfig& config, const Tensor& grad);

  Backend& backend_;
  ParallelGroups& groups_;
  const Layout layout_;
  const ModelShard& shard_;
  std::vector<UnitState> units_;
  // Set by ReduceGradients, one per unit; emptied by ApplyOptimizer.
  std::vector<Tensor> reduced_;
};

}  // namespace tessera::executor
