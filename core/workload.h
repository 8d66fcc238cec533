// What a study plans for: the cluster it runs on and the training it does, and
// the model (model.h). Together they are a Workload.
//
//   Workload w{*ModelPreset("llama2-7b"), MakeCluster(*GpuPreset("h100-sxm"),
//              32, 8), TrainingConfig{.global_batch = 512, .seq_len = 4096}};
//   TESSERA_RETURN_IF_ERROR(ValidateWorkload(w));
#pragma once

#include <cstdint>

#include "absl/status/status.h"
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

  int64_t world_size() const { return nodes * gpus_per_node; }
};

// A cluster of `nodes` x `gpus_per_node` GPUs with the GPU's default link
// figures: NVLink per GPU, the node's NIC bandwidth, and per-step latencies of
// 1 us (NVLink) and 5 us (InfiniBand, NCCL's inter-node step as nccl-tests
// reports for small messages).
ClusterConfig MakeCluster(const GpuSpec& gpu, int64_t nodes,
                          int64_t gpus_per_node);

// What the study trains: a global batch of sequences of seq_len tokens per
// optimizer step, and optionally the whole run's token budget.
struct TrainingConfig {
  int64_t global_batch = 0;  // sequences per optimizer step
  int64_t seq_len = 0;       // tokens per sequence
  double total_tokens = 0;   // token budget of the whole run; 0 = not given

  int64_t tokens_per_step() const { return global_batch * seq_len; }
};

struct Workload {
  ModelConfig model;
  ClusterConfig cluster;
  TrainingConfig training;
};

// Checks the cluster (positive counts and links; errors "cluster.<field>").
absl::Status ValidateCluster(const ClusterConfig& cluster);
// Checks the training (errors "training.<field>").
absl::Status ValidateTraining(const TrainingConfig& training);
// Checks model, GPU, cluster and training together.
absl::Status ValidateWorkload(const Workload& workload);

}  // namespace tessera
