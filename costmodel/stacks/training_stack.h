// A training stack: the software a run uses (Megatron-Core, torchtitan,
// PyTorch FSDP, DeepSpeed, nanotron, Megatron-LM as of 2021, Tessera's own
// executor), as data. The same layout runs at different speeds and memory
// under different stacks; a stack says which layouts it can run at all and
// how it runs them: its attention kernel, the tensors each layer keeps for
// the backward pass with and without selective recomputation, its FSDP
// policy, the bytes of model state per parameter, and the defaults of the
// cost model's coefficients (costmodel/calibration/coefficients.inc) for its
// kernels and overlap, by GPU architecture where they differ, and per
// option (torch.compile, async TP, ...).
//
// Each stack is one JSON file in costmodel/stacks/ (the schema is
// costmodel/stacks/README.md), compiled into the binary; the cost model asks a stack
// what it can do and never compares its name.
//
//   TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack,
//                            FindStack("torchtitan"));
//   TESSERA_RETURN_IF_ERROR(stack->CanRun(layout, Precision::kBf16));
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/workload.h"

namespace tessera::costmodel {

// The attention core's kernel.
enum class AttentionKernel {
  // FlashAttention, cuDNN fused attention, Tessera's own: keeps only the
  // output and a log-sum-exp per row, and skips the masked half of causal
  // attention.
  kFlash,
  // Materialised s x s scores (Megatron-LM 2021): kept for the backward
  // pass, and the whole square computed.
  kMaterialized,
};

// The tensors one transformer layer may keep from its forward for its
// backward pass (costmodel/memory/layer_activations.h gives their sizes).
enum class SavedTensor {
  kLayerInput,     // the residual stream entering the layer (norm 1 input)
  kAttnNormOut,    // norm 1 output: the Q/K/V projections' input
  kQ,              // queries (after rotary embedding)
  kK,              // keys
  kV,              // values
  kAttnOut,        // attention output (the out projection's input) and its
                   // per-row log-sum-exp
  kAttnScores,     // the s x s softmax (materialised attention only)
  kAttnResidual,   // residual after attention (norm 2 input)
  kMlpNormOut,     // norm 2 output: the MLP's input
  kMlpGate,        // SwiGLU gate projection output (none for GELU)
  kMlpUp,          // up projection output (GELU: fc1 output)
  kMlpAct,         // SiLU(gate), kept apart only by unfused SwiGLU (none
                   // for GELU)
  kMlpDownIn,      // the down projection's input: SiLU(gate) * up, or
                   // GELU(fc1)
  kMlpOut,         // down projection output
  kDropoutMasks,   // residual dropout masks, 1 byte each (GPT 2021)
  kCount,
};

// The linear layers' GEMMs, by name in the stack files.
enum class LayerGemm { kQ, kK, kV, kOut, kMlpGate, kMlpUp, kMlpDown, kCount };

// How a stack's "selective" recomputation works.
struct SelectiveRecompute {
  std::string description;
  // Kept per layer (every other tensor is recomputed; a policy may keep a
  // tensor the backward pass does not need, as torchtitan's per-op policy
  // keeps the down projection's output).
  std::vector<SavedTensor> saved;
  // GEMMs re-run in the backward pass.
  std::vector<LayerGemm> recomputed_gemms;
  bool recomputes_attention_core = false;
  bool recomputes_elementwise = false;  // norms, activations, rotary
  // Layer-granular policies (torchtitan's "selective layer", fms-fsdp):
  // this fraction of the layers is recomputed in full, the rest not at all.
  double full_recompute_layer_fraction = 0;
};

// How a stack's FSDP / ZeRO-3 (and ZeRO-2) shards and gathers.
struct FsdpPolicy {
  // Parameters are re-gathered for the backward pass (FSDP FULL_SHARD,
  // FSDP2 reshard_after_forward=True); false keeps them gathered from the
  // forward to the backward.
  bool reshard_after_forward = true;
  // With pipeline parallelism, parameters stay gathered and gradients
  // unsharded across the pipeline's micro-batches: one AllGather and one
  // ReduceScatter per step (torchtitan: no reshard between micro-batches).
  bool keeps_gathered_across_pipeline_micro_batches = false;
  // ZeRO-2 keeps replicated parameters, gathered once per step after the
  // optimizer (DeepSpeed); false: FSDP SHARD_GRAD_OP, whose parameters are
  // sharded at rest and gathered for each micro-batch's forward, kept to
  // its backward.
  bool zero2_replicates_parameters = true;
  // ZeRO-1 and replicated-parameter ZeRO-2 all-gather the updated parameters
  // inside the optimizer step, before the next forward starts, so none of
  // it hides (nanotron ZeroDistributedOptimizer._all_gather_params, DeepSpeed
  // stage 1/2's all_gather_dp_groups in step(), PyTorch's
  // ZeroRedundancyOptimizer._sync_params); false: bucket by bucket as the
  // next forward reaches them (Megatron-Core --overlap-param-gather), hidden
  // by dp_overlap_efficiency of a forward.
  bool zero_gathers_parameters_in_optimizer_step = false;
};

// How a stack assigns the model's layers to pipeline ranks
// (costmodel/pipeline/stage_split.h gives the assignment).
enum class PipelineSplit {
  // Layers evenly over the pp * vpp model chunks, the ends one fewer when
  // they do not divide (Megatron-LM, torchtitan); the first rank also holds
  // the embedding, the last the output layer and the loss.
  kEven,
  // The embedding and the loss each count as a layer in that split
  // (Megatron-Core --account-for-embedding-in-pipeline-split and
  // --account-for-loss-in-pipeline-split): the first and last chunks hold
  // one layer fewer, or none.
  kEmbeddingAndLossAsLayers,
  // Blocks (embedding, each layer, final norm, output layer, loss) to ranks
  // in order by cumulative cost, a layer costing its weights' elements and
  // the output layer V * h (nanotron models/base.py build_model with
  // get_block_compute_costs); ranks past the loss hold nothing.
  kCumulativeCost,
};

// Bytes of model state per parameter, before sharding (ZeRO: weights shard
// at stage 3, gradients at 2, master weights and optimizer states at 1).
struct ModelStateBytes {
  double weights = 2;         // persistent low-precision weights (0 when
                              // the fp32 master is the parameter)
  double master_weights = 4;  // fp32 parameters the optimizer updates
  double gradients = 4;       // gradient accumulation buffer
  double optimizer = 8;       // AdamW moments
  // With fp8: cached fp8 copies of the linear layers' weights (Transformer
  // Engine keeps the weight and its transpose: 2), sharded as the weights.
  double fp8_weights = 0;
};

// Bytes per element each data-parallel collective carries.
struct CommBytes {
  double parameter_gather = 2;  // FSDP / ZeRO parameter AllGather
  double gradient_reduce = 4;   // gradient AllReduce / ReduceScatter
};

// The layouts a stack can run.
enum class SequenceParallel { kOptional, kAlways, kNever };

struct StackLayouts {
  bool tensor_parallel = true;
  SequenceParallel sequence_parallel = SequenceParallel::kOptional;
  bool pipeline_parallel = true;
  bool interleaved_pipeline = true;
  // Model chunks of different sizes when pp * vpp does not divide the layers.
  bool uneven_interleaving = true;
  bool context_parallel = true;
  std::vector<int64_t> zero_stages = {0, 1, 2, 3};
  // The highest ZeRO stage that runs with pipeline parallelism (DeepSpeed's
  // pipeline engine: 1).
  int64_t max_zero_with_pipeline = 3;
  bool hsdp = true;  // shard_group < dp with zero >= 1
  std::vector<Recompute> recompute = {Recompute::kNone, Recompute::kSelective,
                                      Recompute::kFull};
  std::vector<Precision> precisions = {Precision::kBf16, Precision::kFp8};
};

// An option of the stack a run may turn on or off (torch.compile, async TP,
// torchtitan's per-layer selective checkpointing, FSDP's reduce dtype,
// Megatron's fp8 parameters); it changes coefficient defaults and may replace
// the stack's selective recomputation policy, the bytes its data-parallel
// collectives carry, or its model-state bytes.
struct StackOption {
  std::string name;
  std::string description;
  bool default_on = false;
  std::map<std::string, double> coefficients;
  std::optional<SelectiveRecompute> selective;
  // Fields of the stack's comm_bytes and model_states it changes, by name.
  std::map<std::string, double> comm_bytes;
  std::map<std::string, double> model_states;
  std::optional<PipelineSplit> pipeline_split;
};

struct TrainingStack {
  std::string name;
  std::string description;
  std::string source;  // version and documents the file follows

  StackLayouts layouts;
  AttentionKernel attention = AttentionKernel::kFlash;
  // Tensors a layer keeps without recomputation.
  std::vector<SavedTensor> saved;
  SelectiveRecompute selective;
  // With fp8, the linear layers' saved inputs (norm outputs, attention
  // output, down projection input) are kept in fp8, 1 byte each
  // (Transformer Engine); false: in bf16 (torchao float8).
  bool fp8_saves_linear_inputs = false;
  FsdpPolicy fsdp;
  PipelineSplit pipeline_split = PipelineSplit::kEven;
  ModelStateBytes model_states;
  CommBytes comm_bytes;
  // Coefficient defaults over coefficients.inc's, then by GPU architecture
  // ("ampere", "hopper", ...) over those, with a `source` string each.
  std::map<std::string, double> coefficients;
  std::map<std::string, std::map<std::string, double>>
      coefficients_by_architecture;
  // What the coefficient defaults rest on: which were chosen against which
  // published rows, which come from kernel benchmarks.
  std::vector<std::string> coefficient_sources;
  std::vector<StackOption> options;

  // OK when the stack can run `layout` at `precision`; otherwise
  // INVALID_ARGUMENT naming the layout field and the stack ("layout.zero:
  // torchtitan runs zero 0 or 3, not 1").
  absl::Status CanRun(const Layout& layout, Precision precision) const;
  bool SupportsZeroStage(int64_t zero) const;
  bool SupportsRecompute(Recompute recompute) const;
  bool SupportsPrecision(Precision precision) const;
  // The option called `name`, or nullptr.
  const StackOption* FindOption(absl::string_view name) const;
};

absl::string_view SavedTensorName(SavedTensor tensor);
absl::string_view LayerGemmName(LayerGemm gemm);

// Every stack compiled in (and added by UseStackFile), by name.
const std::vector<TrainingStack>& Stacks();

// Reads a stack file at run time (a user's own stack, or a changed copy of
// a built-in one, which it replaces by name). Call it before planning: it
// invalidates what FindStack returned before. Errors name the file and the
// field.
absl::Status UseStackFile(const std::string& path);
std::vector<std::string> StackNames();

// The stack called `name`; INVALID_ARGUMENT "training.stack: unknown stack
// 'x' (known: ...)".
absl::StatusOr<const TrainingStack*> FindStack(absl::string_view name);

// Parses one stack file's text; errors name the file and the field
// ("torchtitan.json: layouts.zero_stages: 4 is not a ZeRO stage").
absl::StatusOr<TrainingStack> ParseStack(absl::string_view file_name,
                                         absl::string_view json_text);

// The options a run has on: the stack's defaults with `changes` applied
// ("NAME" on, "no-NAME" off). INVALID_ARGUMENT naming training.stack_options
// for an option the stack does not have or one named twice.
absl::StatusOr<std::vector<const StackOption*>> EnabledOptions(
    const TrainingStack& stack, const std::vector<std::string>& changes);

// The stack as a run of `training` uses it: training.stack with the
// selective policy, collective bytes and model-state bytes of its enabled
// options (the last one that sets each). The options' coefficients are applied by StackCalibration
// (stack_calibration.h). INVALID_ARGUMENT naming training.stack or
// training.stack_options.
absl::StatusOr<TrainingStack> StackForTraining(const TrainingConfig& training);

// Checks that `training` names a stack, options it has and a precision it
// trains in, and sets the stack's own name ("TorchTitan" is torchtitan): what
// a study spec's stack must pass (service/plan_convert.h,
// CheckedWorkloadFromSpec). INVALID_ARGUMENT naming training.stack,
// training.stack_options or training.precision; `training` is unchanged then.
absl::Status ResolveTrainingStack(TrainingConfig& training);

}  // namespace tessera::costmodel
