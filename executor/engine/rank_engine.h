// One rank's share of Llama training under a parallel layout: it owns the
// rank's parameters (ParamStore), runs the pipeline schedule of forward and
// backward passes over its micro-batches with tensor, sequence, context and
// data parallelism, and takes the optimizer step. All ranks of the world run
// their RankEngine::Step() together (collectively).
//
//   TESSERA_ASSIGN_OR_RETURN(auto engine,
//                            RankEngine::Create(config, backend, world));
//   for (int i = 0; i < steps; ++i) {
//     TESSERA_ASSIGN_OR_RETURN(StepResult r, engine->Step());
//   }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/model.h"
#include "executor/backend.h"
#include "executor/comm/communicator.h"
#include "executor/engine/embedding_head.h"
#include "executor/engine/layer_context.h"
#include "executor/engine/model_shard.h"
#include "executor/engine/param_store.h"
#include "executor/engine/pipeline_schedule.h"
#include "executor/engine/timed_communicator.h"
#include "executor/engine/token_data.h"
#include "executor/engine/transformer_layer.h"

namespace tessera::executor {

struct EngineConfig {
  ModelConfig model;
  Layout layout;  // resolved for the world size and global batch
  int64_t seq_len = 0;
  int64_t global_batch = 0;           // sequences per optimizer step
  uint64_t seed = 1234;               // parameter initialisation
  AdamWConfig adamw;                  // step is advanced by the engine
  const TokenSource* data = nullptr;  // not owned; shared by all ranks
  // > 0: clip the global gradient norm to it before AdamW (PyTorch's
  // clip_grad_norm_; Llama trains with 1.0); 0: no clipping.
  double max_grad_norm = 0;
};

// Checks what the executor can run: a Llama (SwiGLU, untied) model, the
// layout valid for the world and batch (core/layout.h) and fitting the model.
// Errors are INVALID_ARGUMENT naming the field.
absl::Status CheckEngineConfig(const EngineConfig& config, int world_size);

struct StepResult {
  double loss = 0;         // mean cross-entropy over the global batch
  double step_time_s = 0;  // this rank's wall time for the step
  double comm_s = 0;       // of which inside communication calls
  double grad_norm = 0;    // global, before clipping; 0 when not clipping
};

class RankEngine {
 public:
  // Builds the rank's groups (collective over `world`) and parameters.
  // `backend` and `world` must outlive the engine.
  static absl::StatusOr<std::unique_ptr<RankEngine>> Create(
      const EngineConfig& config, Backend& backend, Communicator& world);

  // One optimizer step over the global batch (collective):
  // ForwardBackward then ApplyOptimizer, timed.
  absl::StatusOr<StepResult> Step();
  // The forward and backward passes of every micro-batch of the step, leaving
  // the gradients accumulated (and, under zero 2/3, reduce-scattered) but not
  // applied. Returns the mean loss over the global batch (on every rank).
  absl::StatusOr<double> ForwardBackward();
  // Reduces the gradients over the ranks that share them (collective), so
  // that params().reduced_grad_shard shows them before the update;
  // ApplyOptimizer does it when the caller has not.
  absl::Status ReduceGradients() { return params_->ReduceGradients(); }
  // Reduces (unless ReduceGradients did) and clips the gradients, applies
  // AdamW and advances the step counter.
  absl::Status ApplyOptimizer();
  // The global gradient norm of the last ApplyOptimizer, before clipping;
  // 0 when the config does not clip.
  double last_grad_norm() const { return last_grad_norm_; }

  int64_t steps_done() const { return step_; }
  const ModelShard& shard() const { return shard_; }
  const ParamStore& params() const { return *params_; }
  const ParallelGroups& groups() const { return groups_; }

 private:
  // Activations of one (chunk, micro-batch) between its forward and backward.
  struct MicroBatchState {
    DeviceBuffer tokens;                  // i32 [tokens] (first chunk)
    DeviceBuffer targets;                 // i32 [tokens] (last chunk)
    std::vector<DeviceBuffer> residuals;  // input of each layer, then output
    std::vector<LayerSaved> layers;
    HeadSaved head;
  };

  RankEngine(const EngineConfig& config, Backend& backend);
  absl::Status Init(Communicator& world);
  absl::Status Forward(const PipelineOp& op, double* loss_sum);
  absl::Status Backward(const PipelineOp& op);
  // Token ids (inputs, or targets when `targets`) of this rank's share of
  // micro-batch `micro_batch` of the current step.
  absl::StatusOr<DeviceBuffer> Tokens(int micro_batch, bool targets);

  EngineConfig config_;
  Backend& backend_;
  CommTotals comm_stats_;
  std::unique_ptr<TimedCommunicator> timed_world_;
  ParallelGroups groups_;
  ModelShard shard_;
  std::unique_ptr<ParamStore> params_;
  LayerContext ctx_;
  std::vector<PipelineOp> schedule_;
  std::map<std::pair<int, int>, MicroBatchState> in_flight_;
  int64_t step_ = 0;
  double last_grad_norm_ = 0;
};

}  // namespace tessera::executor
