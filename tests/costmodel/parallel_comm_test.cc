// Tensor-, context-, pipeline- and data-parallel traffic against hand
// computations on H100 nodes of 8 (360 GB/s NVLink bus bandwidth, 40 GB/s per
// GPU's NIC share, 320 GB/s for a group with 8 GPUs per node; NCCL's
// fastest algorithm and protocol, here the ring with Simple (base 8.4 us,
// 3.4 us per NVLink hop, 14 us per hop between nodes) or LL128 (base 14 us,
// 1.9 and 4.0 us per hop, 120/128 of the bandwidth): nccl_tuning.h).
#include <algorithm>

#include "gtest/gtest.h"
#include "costmodel/comm/context_parallel_comm.h"
#include "costmodel/comm/data_parallel_comm.h"
#include "costmodel/comm/overlap.h"
#include "costmodel/comm/pipeline_comm.h"
#include "costmodel/comm/tensor_parallel_comm.h"

namespace tessera::costmodel {
namespace {

ClusterConfig H100Nodes(int64_t nodes) {
  return MakeCluster(*GpuPreset("h100-sxm"), nodes, 8);
}

// The ring's time: the faster of Simple and LL128, given each one's latency
// (us), the bytes on the bus and the bus bandwidth.
double Ring(double simple_us, double ll128_us, double bus_bytes,
            double busbw) {
  return std::min(simple_us * 1e-6 + bus_bytes / busbw,
                  ll128_us * 1e-6 + bus_bytes / (120.0 / 128 * busbw));
}

TEST(TensorParallelCommTest, FourAllReducesPerLayerByHand) {
  // llama2-7b, tp 8 in a node, b 1, s 4096: S = 2*4096*4096 = 33,554,432 B;
  // AllReduce: Simple 8.4 + 14 * 3.4 us + 2*7/8 * S / 360e9 = 219.1 us,
  // LL128 14 + 14 * 1.9 us + 2*7/8 * S / (0.9375 * 360e9) = 214.6 us.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const ClusterConfig cl = H100Nodes(1);
  Calibration c;
  const GroupPlacement g = PlaceGroup(8, 1, 8);
  const double all_reduce = Ring(56, 40.6, 1.75 * 33554432, 360e9);
  const LayerShard shard{.tp = 8, .seq_len = 4096};
  LayerCommTimes t =
      TensorParallelLayerComm(m, shard, Recompute::kNone, g, cl, c);
  EXPECT_NEAR(t.forward_s, 2 * all_reduce, 1e-12);
  EXPECT_NEAR(t.backward_s, 2 * all_reduce, 1e-12);
  EXPECT_EQ(t.forward_exposed_s, t.forward_s);  // blocking by default
  // Full recomputation repeats the forward's two in backward.
  t = TensorParallelLayerComm(m, shard, Recompute::kFull, g, cl, c);
  EXPECT_NEAR(t.backward_s, 4 * all_reduce, 1e-12);
  // Sequence parallelism: AllGather + ReduceScatter, the same bytes, two
  // latencies: each 8.4 + 7 * 3.4 us (Simple) or 14 + 7 * 1.9 (LL128).
  t = TensorParallelLayerComm(m,
                              LayerShard{.tp = 8, .sp = true, .seq_len = 4096},
                              Recompute::kNone, g, cl, c);
  EXPECT_NEAR(t.forward_s, 4 * Ring(32.2, 27.3, 0.875 * 33554432, 360e9),
              1e-12);
  // Overlap hides a share; tp 1 has nothing to send.
  c.tp_overlap_efficiency = 0.25;
  t = TensorParallelLayerComm(m, shard, Recompute::kNone, g, cl, c);
  EXPECT_NEAR(t.forward_exposed_s, 0.75 * t.forward_s, 1e-15);
  EXPECT_EQ(
      TensorParallelLayerComm(m, LayerShard{.seq_len = 4096}, Recompute::kNone,
                              PlaceGroup(1, 1, 8), cl, c)
          .forward_s,
      0);
}

TEST(TensorParallelCommTest, SpanningNodesIsFarSlower) {
  // tp 16 on 8-GPU nodes runs at 320 GB/s and 5 us steps instead of 360 GB/s
  // and 1 us; with 16-GPU nodes it would stay on NVLink.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const Calibration c;
  const LayerShard shard{.tp = 16, .seq_len = 4096};
  const double spans =
      TensorParallelLayerComm(m, shard, Recompute::kNone, PlaceGroup(16, 1, 8),
                              H100Nodes(2), c)
          .forward_s;
  ClusterConfig big_nodes = MakeCluster(*GpuPreset("h100-sxm"), 1, 16);
  const double inside =
      TensorParallelLayerComm(m, shard, Recompute::kNone, PlaceGroup(16, 1, 16),
                              big_nodes, c)
          .forward_s;
  EXPECT_GT(spans, inside);
}

TEST(ContextParallelCommTest, RingExchangeByHand) {
  // llama3-8b (kv_dim 1024), cp 2 inside a node, b 1, s 8192: 4096 tokens
  // per rank; K and V blocks 4 * 4096 * 1024 = 16,777,216 B; one step:
  // 1 us + 16777216 / 360e9 = 47.60 us.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const ClusterConfig cl = H100Nodes(1);
  const Calibration c;  // cp_overlap_efficiency 0.8
  const LayerShard shard{.cp = 2, .seq_len = 8192};
  const double step = 1e-6 + 16777216 / 360e9;
  // Forward attention 10 us, its flash backward 25 us (2.5x).
  LayerCommTimes t = ContextParallelLayerComm(
      m, shard, Recompute::kNone, PlaceGroup(2, 1, 8), cl, c, 1e-5, 2.5e-5);
  EXPECT_NEAR(t.forward_s, step, 1e-12);
  EXPECT_NEAR(t.backward_s, 2 * step, 1e-12);
  // Attention of 10 us hides 8 us of it; backward's 25 us hides 20, and
  // the hidden part slows the attention by 19% of it (overlap.h).
  EXPECT_NEAR(t.forward_exposed_s, step - 8e-6, 1e-12);
  EXPECT_NEAR(t.backward_exposed_s, 2 * step - 20e-6, 1e-12);
  EXPECT_NEAR(t.forward_slowdown_s, 0.19 * 8e-6, 1e-15);
  EXPECT_NEAR(t.backward_slowdown_s, 0.19 * 20e-6, 1e-15);
  // Selective recomputation re-runs the forward attention inside the
  // backward: a 35 us window hides 28 us of the same ring traffic.
  t = ContextParallelLayerComm(m, shard, Recompute::kSelective,
                               PlaceGroup(2, 1, 8), cl, c, 1e-5, 2.5e-5);
  EXPECT_NEAR(t.backward_s, 2 * step, 1e-12);
  EXPECT_NEAR(t.backward_exposed_s, 2 * step - 28e-6, 1e-12);
  // Long attention hides it all: only the slowdown is left.
  t = ContextParallelLayerComm(m, shard, Recompute::kNone, PlaceGroup(2, 1, 8),
                               cl, c, 1e-3, 2.5e-3);
  EXPECT_EQ(t.forward_exposed_s, 0);
  EXPECT_EQ(t.backward_exposed_s, 0);
  EXPECT_NEAR(t.forward_slowdown_s, 0.19 * step, 1e-15);
  EXPECT_NEAR(t.backward_slowdown_s, 0.19 * 2 * step, 1e-15);
}

TEST(PipelineCommTest, SendByHand) {
  // llama2-7b, tp 2, b 1, s 4096: 2*4096*4096/2 = 16,777,216 B per GPU,
  // across nodes: 5 us + 16777216 / 40e9 = 424.43 us.
  const ModelConfig m = *ModelPreset("llama2-7b");
  EXPECT_NEAR(PipelineSendTimeS(m, LayerShard{.tp = 2, .seq_len = 4096}, true,
                                H100Nodes(2), Calibration{}),
              5e-6 + 16777216 / 40e9, 1e-12);
}

class DataParallelCommTest : public ::testing::Test {
 protected:
  // 1e9 parameters on this GPU, 32 layers; dp 16 over 2 nodes (tp 1).
  DataParallelTimes Run(const Layout& l) {
    StageWork w{.params = 1e9,
                .layers = 32,
                .forward_compute_s = 0.05,
                .backward_compute_s = 0.1};
    return DataParallelComm(l, PlaceLayout(l, 8), w, H100Nodes(2), *stack_,
                            c_);
  }
  Calibration c_;
  // fp32 gradients, bf16 parameters, FULL_SHARD, units re-gathered per
  // micro-batch.
  const TrainingStack* stack_ = *FindStack("megatron-core");
};

TEST_F(DataParallelCommTest, DdpAllReduceByHand) {
  // AllReduce of 4e9 B of fp32 gradients over 16 GPUs on 2 nodes: ring,
  // Simple 8.4 + 28 * 3.4 + 2 * 14 us + 2*15/16 * 4e9 / 320e9 = 131.6 us +
  // 23.4375 ms (LL128's and the tree's bandwidth are slower at this size).
  const DataParallelTimes t = Run(Layout{.dp = 16, .shard_group = 1});
  EXPECT_NEAR(t.per_step_s, 131.6e-6 + 0.0234375, 1e-12);
  EXPECT_EQ(t.per_step.exposed_s, t.per_step_s);  // default: no overlap
  EXPECT_EQ(t.per_step.slowdown_s, 0);
  EXPECT_EQ(t.per_micro_batch_s, 0);
  // Hides 10 ms of the 100 ms backward, which runs 19% of it slower.
  c_.dp_overlap_efficiency = 0.1;
  const DataParallelTimes hidden = Run(Layout{.dp = 16, .shard_group = 1});
  EXPECT_NEAR(hidden.per_step.exposed_s, 131.6e-6 + 0.0234375 - 0.01, 1e-12);
  EXPECT_NEAR(hidden.per_step.slowdown_s, 0.19 * 0.01, 1e-15);
}

TEST_F(DataParallelCommTest, FsdpByHand) {
  // zero 3 over 16 GPUs with DeepSpeed-2021-like coefficients: 32 layers x 6
  // = 192 units at 19% of the bus bandwidth, 40% of a pass's compute hiding
  // them. 192 AllGathers of 2e9/192 B and ReduceScatters of 4e9/192 B over
  // 16 GPUs on 2 nodes at 320e9 * 0.19: ring, latency Simple 8.4 + 14 * 3.4
  // + 14 = 70 us, LL128 14 + 14 * 1.9 + 4 = 44.6 us.
  c_.fsdp_units_per_layer = 6;
  c_.fsdp_bandwidth_efficiency = 0.19;
  c_.fsdp_overlap_efficiency = 0.4;
  const double busbw = 320e9 * 0.19;
  const double gather = 192 * Ring(70, 44.6, 15.0 / 16 * 2e9 / 192, busbw);
  const double scatter = 192 * Ring(70, 44.6, 15.0 / 16 * 4e9 / 192, busbw);
  const DataParallelTimes t =
      Run(Layout{.dp = 16, .zero = 3, .shard_group = 16});
  EXPECT_NEAR(t.per_micro_batch_s, 2 * gather + scatter, 1e-12);
  // Exposed: forward max(0, gather - 0.4 * 50 ms), backward
  // max(0, gather + scatter - 0.4 * 100 ms); the 20 and 40 ms hidden slow
  // the compute by 19% of them.
  EXPECT_NEAR(t.per_micro_batch.exposed_s,
              (gather - 0.02) + (gather + scatter - 0.04), 1e-12);
  EXPECT_NEAR(t.per_micro_batch.slowdown_s, 0.19 * 0.06, 1e-15);
  EXPECT_EQ(t.per_step_s, 0);  // no replicas
  // With full overlap the first unit's gather of each pass stays exposed.
  c_.fsdp_overlap_efficiency = 1.0;
  const double forward_exposed = std::max(gather / 192, gather - 0.05);
  const double backward_exposed =
      std::max((gather + scatter) / 192, gather + scatter - 0.1);
  const DataParallelTimes full =
      Run(Layout{.dp = 16, .zero = 3, .shard_group = 16});
  EXPECT_NEAR(full.per_micro_batch.exposed_s,
              forward_exposed + backward_exposed, 1e-12);
  EXPECT_NEAR(
      full.per_micro_batch.slowdown_s,
      0.19 * (2 * gather + scatter - forward_exposed - backward_exposed),
      1e-12);
}

TEST_F(DataParallelCommTest, FsdpPoliciesOfStacks) {
  c_.fsdp_units_per_layer = 1;
  c_.fsdp_bandwidth_efficiency = 1;
  // 32 units; AllGather of 2e9 B and ReduceScatter of 4e9 (fp32) B.
  const double gather = 32 * Ring(70, 44.6, 15.0 / 16 * 2e9 / 32, 320e9);
  const double scatter = 32 * Ring(70, 44.6, 15.0 / 16 * 4e9 / 32, 320e9);
  // FSDP SHARD_GRAD_OP (pytorch-fsdp's zero 2, bf16 reduce by default):
  // gathered once in the forward, no gather in the backward.
  stack_ = *FindStack("pytorch-fsdp");
  const double bf16_scatter = gather;
  EXPECT_NEAR(Run(Layout{.dp = 16, .zero = 2, .shard_group = 16})
                  .per_micro_batch_s,
              gather + bf16_scatter, 1e-12);
  // torchtitan with pipeline parallelism: once per step, whatever the
  // micro-batches (the stage's work is the same StageWork here).
  stack_ = *FindStack("torchtitan");
  const Layout pp{.pp = 2, .dp = 8, .zero = 3, .shard_group = 8,
                  .grad_accum = 4};
  const DataParallelTimes once =
      DataParallelComm(pp, PlaceLayout(pp, 8),
                       StageWork{.params = 1e9, .layers = 32,
                                 .forward_compute_s = 0.05,
                                 .backward_compute_s = 0.1},
                       H100Nodes(2), *stack_, c_);
  EXPECT_EQ(once.per_micro_batch_s, 0);
  EXPECT_GT(once.per_step_s, 0);
  const Layout no_pp{.dp = 16, .zero = 3, .shard_group = 16};
  EXPECT_NEAR(Run(no_pp).per_micro_batch_s, 2 * gather + scatter, 1e-12);
}

TEST_F(DataParallelCommTest, HsdpAddsTheReplicaAllReduce) {
  // zero 3 in groups of 8 (one node each), 2 replicas: the replicas
  // all-reduce 4e9/8 B over 2 GPUs one node apart (40 GB/s): the ring with
  // Simple, 8.4 + 2 * 14 us + 2*1/2 * 5e8 / 40e9 = 36.4 us + 12.5 ms.
  const DataParallelTimes t =
      Run(Layout{.dp = 16, .zero = 3, .shard_group = 8});
  EXPECT_NEAR(t.per_step_s, 36.4e-6 + 0.0125, 1e-12);
  // Shard groups inside a node gather over NVLink: faster than across nodes.
  EXPECT_LT(
      t.per_micro_batch_s,
      Run(Layout{.dp = 16, .zero = 3, .shard_group = 16}).per_micro_batch_s);
}

TEST_F(DataParallelCommTest, ZeroOneAndTwo) {
  // ReduceScatter 4e9 B and AllGather 2e9 B over 16 GPUs on 2 nodes.
  const double scatter = Ring(70, 44.6, 15.0 / 16 * 4e9, 320e9);
  const double gather = Ring(70, 44.6, 15.0 / 16 * 2e9, 320e9);
  const DataParallelTimes z1 =
      Run(Layout{.dp = 16, .zero = 1, .shard_group = 16});
  EXPECT_NEAR(z1.per_step_s, scatter + gather, 1e-12);
  EXPECT_EQ(z1.per_micro_batch_s, 0);
  // zero 2 reduce-scatters after every micro-batch.
  const DataParallelTimes z2 =
      Run(Layout{.dp = 16, .zero = 2, .shard_group = 16});
  EXPECT_NEAR(z2.per_micro_batch_s, scatter, 1e-12);
  EXPECT_NEAR(z2.per_step_s, gather, 1e-12);
}

TEST_F(DataParallelCommTest, ParameterGatherInsideTheOptimizerStepIsExposed) {
  // Half of the last backward (100 ms) and of the first forward (50 ms)
  // hide collectives where the stack overlaps them.
  c_.dp_overlap_efficiency = 0.5;
  const double scatter = Ring(70, 44.6, 15.0 / 16 * 4e9, 320e9);
  const double gather = Ring(70, 44.6, 15.0 / 16 * 2e9, 320e9);
  const Layout z1{.dp = 16, .zero = 1, .shard_group = 16};
  // Megatron-Core (--overlap-param-gather): the gather behind the forward.
  EXPECT_NEAR(Run(z1).per_step.exposed_s,
              std::max(0.0, scatter - 0.05) + std::max(0.0, gather - 0.025),
              1e-12);
  const double scatter_hidden = scatter - std::max(0.0, scatter - 0.05);
  EXPECT_NEAR(Run(z1).per_step.slowdown_s,
              0.19 * (scatter_hidden + gather - std::max(0.0, gather - 0.025)),
              1e-12);
  // nanotron: ZeroDistributedOptimizer.step() gathers before returning;
  // the gradients' ReduceScatter still rides the last backward.
  stack_ = *FindStack("nanotron");
  ASSERT_TRUE(stack_->fsdp.zero_gathers_parameters_in_optimizer_step);
  const DataParallelTimes t = Run(z1);
  EXPECT_NEAR(t.per_step_s, scatter + gather, 1e-12);
  EXPECT_NEAR(t.per_step.exposed_s, std::max(0.0, scatter - 0.05) + gather,
              1e-12);
  EXPECT_NEAR(t.per_step.slowdown_s, 0.19 * scatter_hidden, 1e-12);
  // DDP (zero 0) has no parameter gather: the same under both stacks.
  const Layout z0{.dp = 16, .shard_group = 1};
  const double nanotron_ddp = Run(z0).per_step.exposed_s;
  stack_ = *FindStack("megatron-core");
  EXPECT_NEAR(Run(z0).per_step.exposed_s, nanotron_ddp, 1e-12);
}

TEST(OverlappedCommTest, HiddenTimeSlowsTheComputeItHidesBehind) {
  Calibration c;
  ASSERT_EQ(c.overlap_compute_slowdown, 0.19);  // Agrawal et al. 2025
  const auto expect = [](const OverlapCost& o, double exposed,
                         double slowdown) {
    EXPECT_NEAR(o.exposed_s, exposed, 1e-15);
    EXPECT_NEAR(o.slowdown_s, slowdown, 1e-15);
  };
  // 30 ms of traffic behind 100 ms of compute of which half hides it: all
  // hidden, 19% of it added to the compute.
  expect(OverlappedComm(0.03, 0.1, 0.5, 0, c), 0, 0.19 * 0.03);
  // 80 ms: 50 hidden, 30 exposed.
  expect(OverlappedComm(0.08, 0.1, 0.5, 0, c), 0.03, 0.19 * 0.05);
  // The floor stays exposed; nothing to hide behind, nothing slowed.
  expect(OverlappedComm(0.03, 0.1, 0.5, 0.01, c), 0.01, 0.19 * 0.02);
  expect(OverlappedComm(0.03, 0.0, 0.5, 0, c), 0.03, 0);
  // Never more exposed than the traffic itself.
  expect(OverlappedComm(0.03, 0.1, 0.5, 0.04, c), 0.03, 0);
  c.overlap_compute_slowdown = 0;
  expect(OverlappedComm(0.03, 0.1, 0.5, 0, c), 0, 0);
}

}  // namespace
}  // namespace tessera::costmodel
