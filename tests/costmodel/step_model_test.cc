// The step model's assembly rules (costmodel/step_model.h), each pinned by a
// case computed by hand from the parts: the pipeline runs at the pace of its
// slowest stage, its sends and exposed tensor-parallel collectives are on
// the critical path and inside the bubble, once-per-step work comes after
// the flush, and the breakdown adds up to the step.
#include "costmodel/step_model.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "costmodel/comm/pipeline_comm.h"
#include "costmodel/comm/rank_placement.h"
#include "costmodel/comm/tensor_parallel_comm.h"
#include "costmodel/compute/compute_time.h"
#include "core/layer_shard.h"
#include "costmodel/pipeline/stage_params.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {

// llama2-7b on one node of 8 H100: 32 layers, untied output projection.
Workload Node(int64_t global_batch) {
  return Workload{*ModelPreset("llama2-7b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 1, 8),
                  TrainingConfig{.global_batch = global_batch,
                                 .seq_len = 4096}};
}

Layout Resolved(Layout l, const Workload& w) {
  absl::StatusOr<Layout> r = ResolveLayout(l, w.cluster.world_size(),
                                           w.training.global_batch);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// The parts of one micro-batch on stage `stage`, without data parallelism.
struct Parts {
  double compute_s = 0;   // forward + backward, logits on the last stage
  double tp_exposed_s = 0;
  double sends_s = 0;     // 2 * vpp sends, before overlap
  double optimizer_s = 0;
};

Parts PartsOf(const Workload& w, const TrainingStack& stack, const Layout& l,
              const Calibration& c, int64_t stage) {
  const LayerShard shard = LayerShard::Of(l, w.training);
  const StageParams sp = StageParamsPerGpu(w.model, l, stage);
  const LayerComputeTimes fwd =
      ForwardLayerTimes(w.model, w.cluster.gpu, stack, c, shard);
  const double logits =
      LogitsForwardTimeS(w.model, w.cluster.gpu, c, shard);
  const LayoutPlacement place = PlaceLayout(l, w.cluster.gpus_per_node);
  const LayerCommTimes tp = TensorParallelLayerComm(
      w.model, shard, l.recompute, place.tp, w.cluster, c);
  Parts p;
  p.compute_s =
      sp.layers * (fwd.total_s() + LayerBackwardTimeS(fwd, stack, l.recompute)) +
      (sp.last ? 3 * logits : 0);
  p.tp_exposed_s = sp.layers * (tp.forward_exposed_s + tp.backward_exposed_s);
  p.sends_s = l.pp > 1 ? 2.0 * l.vpp *
                             PipelineSendTimeS(w.model, shard, false,
                                               w.cluster, c)
                       : 0;
  p.optimizer_s = OptimizerStepTimeS(sp.params, w.cluster.gpu, c);
  return p;
}

class StepModelTest : public ::testing::Test {
 protected:
  const TrainingStack& stack_ = **FindStack("megatron-core");
  Calibration c_ = *StackCalibration(stack_, *GpuPreset("h100-sxm"), {});
};

TEST_F(StepModelTest, TheSlowestStageSetsThePaceAndTheBubble) {
  // pp 8 (4 layers each), 16 micro-batches, no tp: the last stage also
  // runs the output layer, so it is the slowest; every stage waits for it:
  //   step = (m + pp - 1) * micro_last + max(optimizer),
  //   bubble = (pp - 1) * micro_last.
  c_.pp_overlap_efficiency = 0;  // sends on the critical path
  const Workload w = Node(16);
  const Layout l = Resolved(Layout{.pp = 8, .micro_batch = 1}, w);
  const Parts first = PartsOf(w, stack_, l, c_, 0);
  const Parts last = PartsOf(w, stack_, l, c_, 7);
  const double micro_last = last.compute_s + last.sends_s;
  ASSERT_GT(micro_last, first.compute_s + first.sends_s);
  Prediction p;
  ASSERT_TRUE(PredictStep(w, stack_, l, c_, false, &p));
  const double once = std::max(first.optimizer_s, last.optimizer_s);
  EXPECT_NEAR(p.step_time_s, (16 + 7) * micro_last + once, 1e-12);
  EXPECT_NEAR(p.bubble_s, 7 * micro_last, 1e-12);
  // The breakdown is the beat stage's and adds up.
  EXPECT_NEAR(p.compute_s, 16 * last.compute_s + last.optimizer_s, 1e-12);
  EXPECT_NEAR(p.step_time_s, p.compute_s + p.exposed_comm_s + p.bubble_s,
              1e-12);
  // Its exposed communication is its sends (and the first stage's larger
  // optimizer step, which ends the step after the flush).
  EXPECT_NEAR(p.exposed_comm_s,
              16 * last.sends_s + once - last.optimizer_s, 1e-12);
  // By kind: the sends are pp's; the rest (the optimizer wait) is counted
  // as dp's; no tensor or context parallelism, nothing of theirs.
  EXPECT_NEAR(p.pp_exposed_s, 16 * last.sends_s, 1e-12);
  EXPECT_NEAR(p.dp_exposed_s, once - last.optimizer_s, 1e-12);
  EXPECT_EQ(p.tp_exposed_s, 0);
  EXPECT_EQ(p.cp_exposed_s, 0);
}

TEST_F(StepModelTest, OverlappedSendsLeaveTheCriticalPathOnlyWhenInterleaved) {
  // Interleaved (vpp 2, 2 layers a chunk): overlap hides each
  // micro-batch's 2 x vpp sends on the (m + pp - 1) beats.
  const Workload w = Node(16);
  const Layout interleaved =
      Resolved(Layout{.pp = 8, .vpp = 2, .micro_batch = 1}, w);
  c_.pp_overlap_efficiency = 1;
  Prediction hidden;
  ASSERT_TRUE(PredictStep(w, stack_, interleaved, c_, false, &hidden));
  c_.pp_overlap_efficiency = 0;
  Prediction blocking;
  ASSERT_TRUE(PredictStep(w, stack_, interleaved, c_, false, &blocking));
  const Parts last = PartsOf(w, stack_, interleaved, c_, 7);
  ASSERT_GT(last.sends_s, 0);
  EXPECT_GT(blocking.step_time_s, hidden.step_time_s);
  EXPECT_EQ(hidden.pp_exposed_s, 0);
  EXPECT_EQ(hidden.pp_comm_s, blocking.pp_comm_s);  // sent either way
  // 1F1B (vpp 1): Megatron-Core does not overlap its sends, so the
  // coefficient changes nothing.
  const Layout plain = Resolved(Layout{.pp = 8, .micro_batch = 1}, w);
  c_.pp_overlap_efficiency = 1;
  Prediction asked;
  ASSERT_TRUE(PredictStep(w, stack_, plain, c_, false, &asked));
  c_.pp_overlap_efficiency = 0;
  Prediction plain_blocking;
  ASSERT_TRUE(PredictStep(w, stack_, plain, c_, false, &plain_blocking));
  EXPECT_EQ(asked.step_time_s, plain_blocking.step_time_s);
  const Parts plain_last = PartsOf(w, stack_, plain, c_, 7);
  EXPECT_NEAR(asked.pp_exposed_s, 16 * plain_last.sends_s, 1e-12);
}

TEST_F(StepModelTest, ExposedTensorParallelTimeIsInsideTheBubble) {
  // tp 2 (blocking) and pp 4 on 8 GPUs, 8 micro-batches: the exposed TP
  // time of a micro-batch is part of the beat, so the bubble grows with it.
  // The 1F1B schedule's sends block (OverlappedSends... above): they are
  // part of the beat too.
  const Workload w = Node(8);
  const Layout l =
      Resolved(Layout{.tp = 2, .sp = true, .pp = 4, .micro_batch = 1}, w);
  c_.pp_overlap_efficiency = 1;
  c_.tp_overlap_efficiency = 0;
  Prediction blocking;
  ASSERT_TRUE(PredictStep(w, stack_, l, c_, false, &blocking));
  const Parts last = PartsOf(w, stack_, l, c_, 3);
  ASSERT_GT(last.tp_exposed_s, 0);
  EXPECT_NEAR(blocking.bubble_s,
              3 * (last.compute_s + last.tp_exposed_s + last.sends_s), 1e-12);
  // The exposed TP time by kind: each of the 8 micro-batches' (the bubble's
  // share is the bubble's, not communication's); the sends are pp's.
  EXPECT_NEAR(blocking.tp_exposed_s, 8 * last.tp_exposed_s, 1e-12);
  EXPECT_NEAR(blocking.pp_exposed_s, 8 * last.sends_s, 1e-12);
  EXPECT_NEAR(blocking.tp_exposed_s + blocking.cp_exposed_s +
                  blocking.pp_exposed_s + blocking.dp_exposed_s,
              blocking.exposed_comm_s, 1e-12);
  c_.tp_overlap_efficiency = 1;
  Prediction overlapped;
  ASSERT_TRUE(PredictStep(w, stack_, l, c_, false, &overlapped));
  EXPECT_NEAR(blocking.step_time_s - overlapped.step_time_s,
              (8 + 3) * last.tp_exposed_s, 1e-12);
  EXPECT_NEAR(blocking.bubble_s - overlapped.bubble_s, 3 * last.tp_exposed_s,
              1e-12);
}

TEST_F(StepModelTest, PowerDrawsEachPhasesShare) {
  // Compute draws power_compute_activity, exposed communication
  // power_comm_activity and the bubble power_pipeline_wait_activity
  // (power.h): a deep pipeline's bubble is costed at its own share.
  const Workload w = Node(8);
  const Layout l = Resolved(Layout{.pp = 8, .micro_batch = 1}, w);
  Calibration c = c_;
  c.power_pipeline_wait_activity = 0.3;
  Prediction p;
  ASSERT_TRUE(PredictStep(w, stack_, l, c, false, &p));
  ASSERT_GT(p.bubble_s, 0);
  const GpuSpec& gpu = w.cluster.gpu;
  const double busy = (p.compute_s * c.power_compute_activity +
                       p.exposed_comm_s * c.power_comm_activity +
                       p.bubble_s * c.power_pipeline_wait_activity) /
                      p.step_time_s;
  EXPECT_NEAR(p.watts_per_gpu, gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * busy,
              1e-9);
}

}  // namespace
}  // namespace tessera::costmodel

namespace tessera::costmodel {
namespace {

TEST(MicroBatchOverheadTest, AFixedCostPerMicroBatchAndModelChunk) {
  // micro_batch_overhead_s = 1 ms. Every stage's micro-batch takes v more
  // ms (one per model chunk), so the beat does, and the step, m beats plus
  // the bubble's (pp-1)/v of them, grows by (m + (pp-1)/v) * v ms:
  //   tp 4, pp 1, dp 8, micro-batch 1:   m = 512/8 = 64   -> 64 ms
  //   tp 4, pp 4 x vpp 2, dp 2, mb 2:     m = 512/4 = 128  -> (128 + 3/2)
  //                                                            * 2 = 259 ms
  const Workload w{*ModelPreset("llama2-7b"),
                   MakeCluster(*GpuPreset("h100-sxm"), 4, 8),
                   TrainingConfig{.global_batch = 512, .seq_len = 4096}};
  auto step = [&](const Layout& l, double overhead_s) {
    Calibration c = *DefaultCalibration(w);
    c.micro_batch_overhead_s = overhead_s;
    const LayoutEvaluation e = PredictLayout(w, l, c);
    EXPECT_TRUE(e.feasible) << e.reason;
    return e.prediction.step_time_s;
  };
  const Layout flat{.tp = 4, .sp = true, .zero = 1, .micro_batch = 1};
  // dp = 32 / 4 = 8, m = 512 / 8 = 64.
  EXPECT_NEAR(step(flat, 1e-3) - step(flat, 0), 64e-3, 1e-9);
  const Layout piped{.tp = 4, .sp = true, .pp = 4, .vpp = 2, .zero = 1,
                     .micro_batch = 2};
  EXPECT_NEAR(step(piped, 1e-3) - step(piped, 0), (128 + 3.0 / 2) * 2e-3,
              1e-9);
}

}  // namespace
}  // namespace tessera::costmodel

namespace tessera::costmodel {
namespace {

// llama2-7b (32 layers) on 4 nodes of 8 H100, global batch 512 x 4096.
Workload HostFloorWorkload(int64_t nodes) {
  return Workload{*ModelPreset("llama2-7b"),
                  MakeCluster(*GpuPreset("h100-sxm"), nodes, 8),
                  TrainingConfig{.global_batch = 512, .seq_len = 4096}};
}

Prediction PredictWithHost(const Workload& w, const Layout& l,
                           double dispatch_s_per_layer, double stall_s) {
  Calibration c = *DefaultCalibration(w);
  c.host_dispatch_s_per_layer = dispatch_s_per_layer;
  c.cross_node_pipeline_tp_stall_s = stall_s;
  const LayoutEvaluation e = PredictLayout(w, l, c);
  EXPECT_TRUE(e.feasible) << e.reason;
  return e.prediction;
}

TEST(HostFloorTest, AMicroBatchTakesAtLeastItsLayersHostTime) {
  const Workload w = HostFloorWorkload(4);
  // tp 4, pp 4 (8 layers a stage), dp 2, micro-batch 2: m = 512 / (2 * 2) =
  // 128. With the host floor binding (1 s and 2 s per layer, far above the
  // GPU's work), every stage's micro-batch is 8 layers x the floor, and the
  // step (m + pp - 1) of them plus the once-per-step work, which the floor
  // does not touch:
  //   step(2 s) - step(1 s) = (128 + 3) * 8 * (2 - 1) = 1048 s.
  const Layout piped{.tp = 4, .sp = true, .pp = 4, .zero = 1,
                     .micro_batch = 2};
  const Prediction one = PredictWithHost(w, piped, 1.0, 0);
  const Prediction two = PredictWithHost(w, piped, 2.0, 0);
  EXPECT_NEAR(two.step_time_s - one.step_time_s, 1048.0, 1e-6);
  // The GPU's wait is compute, named apart: the m beats' share of it (the
  // bubble's stays in the bubble) grows by 128 * 8 * (2 - 1) = 1024 s, and
  // the step still adds up.
  const Prediction none = PredictWithHost(w, piped, 0, 0);
  EXPECT_EQ(none.host_wait_s, 0);
  EXPECT_NEAR(two.host_wait_s - one.host_wait_s, 1024.0, 1e-6);
  EXPECT_NEAR(two.compute_s - one.compute_s, 1024.0, 1e-6);
  EXPECT_NEAR(two.bubble_s - one.bubble_s, 3 * 8.0, 1e-6);
  EXPECT_NEAR(one.step_time_s,
              one.compute_s + one.exposed_comm_s + one.bubble_s, 1e-9);
  // Waiting for the host draws what waiting in the bubble does, not compute
  // power: below the prediction without the floor.
  EXPECT_LT(one.watts_per_gpu, none.watts_per_gpu);
  // A floor, not an addition: 1 us per layer (8 us a micro-batch) is far
  // under the GPU's work and changes nothing.
  const Prediction tiny = PredictWithHost(w, piped, 1e-6, 0);
  EXPECT_EQ(tiny.step_time_s, none.step_time_s);
  EXPECT_EQ(tiny.host_wait_s, 0);
}

TEST(HostFloorTest, APipelineAcrossNodesWithTpWaitsPerTpRank) {
  // tp 2, dp 4, pp 4 on 4 nodes: a node holds tp x dp = 8 ranks of one
  // stage, so every pipeline send crosses nodes. The stall adds tp x 0.5 s
  // per layer to the floor: 8 layers x 2 x 0.5 = 8 s a micro-batch, and the
  // step grows by (m + pp - 1) of them, m = 512 / 4 = 128:
  //   step(stall 1 s) - step(stall 0.5 s) = (128 + 3) * 8 * 2 * 0.5 = 1048 s.
  const Workload w = HostFloorWorkload(4);
  const Layout crossing{.tp = 2, .sp = true, .pp = 4, .zero = 1,
                        .micro_batch = 1};
  EXPECT_NEAR(PredictWithHost(w, crossing, 0, 1.0).step_time_s -
                  PredictWithHost(w, crossing, 0, 0.5).step_time_s,
              1048.0, 1e-6);
  // Not without tp (a tp 1 pipeline across nodes) ...
  const Layout no_tp{.pp = 4, .zero = 1, .micro_batch = 1};
  EXPECT_EQ(PredictWithHost(w, no_tp, 0, 1.0).step_time_s,
            PredictWithHost(w, no_tp, 0, 0).step_time_s);
  // ... nor inside one node: tp 2 x pp 4 on a node of 8.
  const Workload node = HostFloorWorkload(1);
  const Layout inside{.tp = 2, .sp = true, .pp = 4, .zero = 1,
                      .micro_batch = 1};
  EXPECT_EQ(PredictWithHost(node, inside, 0, 1.0).step_time_s,
            PredictWithHost(node, inside, 0, 0).step_time_s);
}

}  // namespace
}  // namespace tessera::costmodel
