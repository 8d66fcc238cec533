// The DeepSpeed export: a DeepSpeed config JSON (the file passed as
// --deepspeed_config / deepspeed.initialize(config=...)).
//
// Keys, from deepspeedai/DeepSpeed at edaa72212672 (master, 2026-08-22):
// - deepspeed/runtime/constants.py: "train_batch_size",
//   "train_micro_batch_size_per_gpu", "gradient_accumulation_steps";
//   deepspeed/runtime/config.py asserts train_batch_size ==
//   micro_batch * gradient_accumulation_steps * data-parallel world size.
// - deepspeed/runtime/zero/config.py: "zero_optimization": {"stage"} (0-3).
//   Its zero_hpz_partition_size (ZeRO++) keeps a secondary copy of the
//   parameters per group but still shards across every rank, and
//   mics_shard_size (MiCS) is not what the deepspeed stack file models: the
//   stack has no HSDP, so CanRun refuses shard_group < dp.
// - deepspeed/runtime/precision_config.py: "bf16": {"enabled"}.
// - deepspeed/runtime/activation_checkpointing/config.py:
//   "activation_checkpointing": {"partition_activations",
//   "contiguous_memory_optimization", "cpu_checkpointing",
//   "synchronize_checkpoint_boundary", "profile"}: how deepspeed.checkpointing
//   checkpoints (Megatron-DeepSpeed --deepspeed-activation-checkpointing);
//   the model's code still chooses what to recompute.
// - deepspeed/runtime/tensor_parallel/config.py "tensor_parallel":
//   {"autotp_size"} (AutoTP, docs/_tutorials/autotp-training.md): without
//   the script's mpu, config.py counts every rank as data-parallel for
//   train_batch_size, so tp > 1 is not exported (see below).
// Tensor, pipeline and sequence parallelism of the deepspeed stack are
// Megatron-DeepSpeed's command-line arguments (deepspeedai/Megatron-DeepSpeed
// 4efb479, megatron/arguments.py: --tensor-model-parallel-size,
// --pipeline-model-parallel-size, --sequence-parallel,
// --recompute-granularity), not keys of this JSON.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "export/exporters.h"

namespace tessera::exporters {

std::vector<std::string> DeepSpeedNotes(const ExportInput& in) {
  std::vector<std::string> notes;
  if (in.layout.recompute == Recompute::kFull) {
    notes.push_back(
        "recompute=full: the activation_checkpointing block only configures "
        "deepspeed.checkpointing and recomputes nothing by itself: wrap each "
        "transformer block's forward in deepspeed.checkpointing.checkpoint "
        "(Megatron-DeepSpeed: --checkpoint-activations "
        "--deepspeed-activation-checkpointing).");
  }
  notes.push_back(
      "the JSON sets the batch, ZeRO and precision only: the optimizer, "
      "scheduler and model come from your script (or add \"optimizer\" "
      "and \"scheduler\" blocks).");
  return notes;
}

absl::StatusOr<std::string> ExportDeepSpeed(const ExportInput& in) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  if (l.pp > 1) {
    return CannotExpress(
        "layout.pp",
        "a DeepSpeed config JSON cannot set pipeline parallelism "
        "(Megatron-DeepSpeed's --pipeline-model-parallel-size does)");
  }
  if (l.tp > 1) {
    return CannotExpress(
        "layout.tp",
        absl::StrCat(
            "a DeepSpeed config JSON cannot set tensor parallelism (tp=", l.tp,
            ") for this layout: AutoTP's tensor_parallel.autotp_size needs the "
            "script's mpu for train_batch_size to count data-parallel ranks "
            "only (Megatron-DeepSpeed's --tensor-model-parallel-size sets "
            "it)"));
  }
  if (l.recompute == Recompute::kSelective) {
    return CannotExpress(
        "layout.recompute",
        "a DeepSpeed config JSON cannot select selective recomputation "
        "(Megatron-DeepSpeed's --recompute-granularity selective does)");
  }
  nlohmann::ordered_json j;
  j["train_batch_size"] = w.training.global_batch;
  j["train_micro_batch_size_per_gpu"] = l.micro_batch;
  j["gradient_accumulation_steps"] = l.grad_accum;
  j["zero_optimization"] = {{"stage", l.zero}};
  j["bf16"] = {{"enabled", true}};
  if (l.recompute == Recompute::kFull) {
    j["activation_checkpointing"] = {
        {"partition_activations", false},
        {"contiguous_memory_optimization", false},
        {"cpu_checkpointing", false},
        {"synchronize_checkpoint_boundary", false},
        {"profile", false},
    };
  }
  return j.dump(2) + "\n";
}

}  // namespace tessera::exporters
