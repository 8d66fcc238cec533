// What a study plans for: the cluster it runs on and the training it does, and
// the model (model.h). Together they are a Workload.
//
//   Workload w{*ModelPreset("llama2-7b"), MakeCluster(*GpuPreset("h100-sxm"),
//              32, 8), TrainingConfig{.global_batch = 512, .seq_len = 4096}};
//   TESSERA_RETURN_IF_ERROR(ValidateWorkload(w));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/gpu.h"
#include "core/model.h"

namespace tessera {

// nodes x gpus_per_node GPUs of one type. Bandwidths are unidirectional GB/s.
struct ClusterConfig {
  GpuSpec gpu;
  int64_t nodes = 0;
  int64_t gpus_per_node = 0;
  double intra_node_gbs = 0;  // per GPU, NVLink; defaults to gpu.nvlink_gbs
  double inter_node_gbs = 0;  // per node, all NICs; defaults to gpu's
  double intra_node_latency_us = 0;  // per NCCL step inside a node
  double inter_node_latency_us = 0;  // per NCCL step across nodes
  // Device memory per GPU a plan keeps free: allocator fragmentation and
  // the memory model's own error (its MAPE against measured runs is about
  // 11%). Bytes, or a fraction of gpu.memory_bytes; neither: the default
  // fraction. MemoryHeadroomBytes resolves it.
  std::optional<double> memory_headroom_bytes;
  std::optional<double> memory_headroom_fraction;

  int64_t world_size() const { return nodes * gpus_per_node; }
};

// The default memory headroom: 5% of the GPU's memory (4 GiB of an 80 GB
// H100), about half the memory model's MAPE.
inline constexpr double kDefaultMemoryHeadroomFraction = 0.05;

// The bytes per GPU `cluster` keeps free (its headroom, resolved).
double MemoryHeadroomBytes(const ClusterConfig& cluster);

// "4.0 GiB (5% of 80.0 GiB, the default; --headroom to change)" and the
// like: what a plan says about its headroom.
std::string DescribeMemoryHeadroom(const ClusterConfig& cluster);

// A cluster of `nodes` x `gpus_per_node` GPUs with the GPU's default link
// figures: NVLink per GPU, the node's NIC bandwidth, and per-step latencies of
// 1 us (NVLink) and 5 us (InfiniBand, NCCL's inter-node step as nccl-tests
// reports for small messages).
ClusterConfig MakeCluster(const GpuSpec& gpu, int64_t nodes,
                          int64_t gpus_per_node);

// The number format of the linear layers' matrix multiplies. Attention, norms,
// the output layer and the optimizer stay in bf16/fp32 either way.
enum class Precision {
  kBf16,  // bf16 GEMMs (mixed precision with fp32 master weights)
  kFp8,   // fp8 GEMMs in the linear layers (Transformer Engine, torchao
          // float8), with per-tensor or per-row scaling
};

absl::string_view PrecisionName(Precision precision);
// "bf16" or "fp8"; the error names training.precision.
absl::StatusOr<Precision> ParsePrecision(absl::string_view text);

// The training stack when a study names none: Megatron-Core, because it runs
// every knob of the layout table (tp with sp, pp with interleaving, cp, DDP,
// distributed optimizer, FSDP) and is what the largest published Llama runs
// use (Megatron-LM, NeMo / Megatron-Bridge). costmodel/stacks lists them all.
inline constexpr char kDefaultTrainingStack[] = "megatron-core";

// What the study trains: a global batch of sequences of seq_len tokens per
// optimizer step, with which software and number format, and optionally the
// whole run's token budget.
struct TrainingConfig {
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t seq_len = 0;       // tokens per sequence
  double total_tokens = 0;   // token budget of the whole run; 0 = not given
  // The training stack (a file of costmodel/stacks: "megatron-core",
  // "torchtitan", "pytorch-fsdp", ...): which layouts can run and how fast.
  std::string stack = kDefaultTrainingStack;
  // Changes to the stack's default options: "NAME" turns an option on,
  // "no-NAME" off (torchtitan: "compile", "async-tp", ...). Checked against
  // the stack by the planner.
  std::vector<std::string> stack_options = {};
  Precision precision = Precision::kBf16;

  int64_t tokens_per_step() const { return global_batch * seq_len; }
};

struct Workload {
  ModelConfig model;
  ClusterConfig cluster;
  TrainingConfig training;
};

// Checks the cluster (positive counts and links; errors "cluster.<field>").
absl::Status ValidateCluster(const ClusterConfig& cluster);
// Checks the training's numbers (errors "training.<field>"); the stack's name
// and options are checked by the planner, which knows the stacks.
absl::Status ValidateTraining(const TrainingConfig& training);
// Checks what the training asks of the GPU: fp8 needs an fp8 peak.
absl::Status ValidateTrainingOnGpu(const TrainingConfig& training,
                                   const GpuSpec& gpu);
// Checks model, GPU, cluster and training together.
absl::Status ValidateWorkload(const Workload& workload);

}  // namespace tessera
