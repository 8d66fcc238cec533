#include "planner/step_model.h"

#include <algorithm>

#include "planner/compute_time.h"
#include "planner/context_parallel_comm.h"
#include "planner/data_parallel_comm.h"
#include "planner/flops.h"
#include "planner/layer_shard.h"
#include "planner/memory_model.h"
#include "planner/pipeline_comm.h"
#include "planner/pipeline_schedule.h"
#include "planner/power.h"
#include "planner/rank_placement.h"
#include "planner/stage_params.h"
#include "planner/tensor_parallel_comm.h"

namespace tessera::planner {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Per-layer, per-micro-batch figures every stage shares.
struct LayerCosts {
  double forward_s = 0;   // compute
  double backward_s = 0;  // compute, recomputation included
  LayerCommTimes tp;
  LayerCommTimes cp;
  double logits_forward_s = 0;
  double send_s = 0;  // one pipeline send
};

// One stage's step and its breakdown.
struct StageStep {
  double step_s = 0;
  double compute_s = 0;
  double exposed_s = 0;
  double bubble_s = 0;
  double tp_s = 0, cp_s = 0, pp_s = 0, dp_s = 0;
};

LayerCosts CostLayer(const Workload& w, const Layout& l,
                     const LayoutPlacement& place, const Calibration& c) {
  const LayerShard shard = LayerShard::Of(l, w.training.seq_len);
  const GpuSpec& gpu = w.cluster.gpu;
  const LayerComputeTimes fwd = ForwardLayerTimes(w.model, gpu, c, shard);
  LayerCosts r;
  r.forward_s = fwd.total_s();
  const double recompute_s = l.recompute == Recompute::kFull ? r.forward_s
                             : l.recompute == Recompute::kSelective
                                 ? fwd.attention_s
                                 : 0;
  // Backward = 2x forward (compute_time.h) plus the recomputed forward.
  r.backward_s = 2 * r.forward_s + recompute_s;
  r.tp = TensorParallelLayerComm(w.model, shard, l.recompute, place.tp,
                                 w.cluster, c);
  r.cp = ContextParallelLayerComm(w.model, shard, l.recompute, place.cp,
                                  w.cluster, c, fwd.attention_s);
  r.logits_forward_s = LogitsForwardTimeS(w.model, gpu, c, shard);
  if (l.pp > 1) {
    r.send_s =
        PipelineSendTimeS(w.model, shard, place.pp_crosses_nodes, w.cluster, c);
  }
  return r;
}

StageStep StepOfStage(const Workload& w, const Layout& l,
                      const LayoutPlacement& place, const LayerCosts& lc,
                      const Calibration& c, int64_t stage) {
  const StageParams sp = StageParamsPerGpu(w.model, l, stage);
  const double layers = static_cast<double>(sp.layers);
  const double m = static_cast<double>(l.grad_accum);
  StageWork work;
  work.params = sp.params;
  work.layers = layers;
  work.forward_compute_s =
      layers * lc.forward_s + (sp.last ? lc.logits_forward_s : 0);
  work.backward_compute_s =
      layers * lc.backward_s + (sp.last ? 2 * lc.logits_forward_s : 0);
  const DataParallelTimes dp = DataParallelComm(l, place, work, w.cluster, c);
  const double layer_exposed_s =
      layers * (lc.tp.forward_exposed_s + lc.tp.backward_exposed_s +
                lc.cp.forward_exposed_s + lc.cp.backward_exposed_s);
  const double micro_s = work.forward_compute_s + work.backward_compute_s +
                         layer_exposed_s + dp.per_micro_batch_exposed_s;
  // A forward send and a backward send per micro-batch and model chunk.
  const double sends_s = 2 * static_cast<double>(l.vpp) * lc.send_s;
  const double local_params =
      sp.params / (l.zero >= 1 ? static_cast<double>(place.shard.ranks) : 1);
  const double optimizer_s = OptimizerStepTimeS(local_params, w.cluster.gpu, c);

  StageStep s;
  s.bubble_s = PipelineBubbleFraction(l.pp, l.vpp, l.grad_accum) * m * micro_s;
  s.compute_s =
      m * (work.forward_compute_s + work.backward_compute_s) + optimizer_s;
  s.exposed_s = m * (layer_exposed_s + dp.per_micro_batch_exposed_s + sends_s) +
                dp.per_step_exposed_s;
  s.step_s = s.compute_s + s.exposed_s + s.bubble_s;
  s.tp_s = m * layers * (lc.tp.forward_s + lc.tp.backward_s);
  s.cp_s = m * layers * (lc.cp.forward_s + lc.cp.backward_s);
  s.pp_s = m * sends_s;
  s.dp_s = m * dp.per_micro_batch_s + dp.per_step_s;
  return s;
}

}  // namespace

bool PredictStep(const Workload& w, const Layout& l, const Calibration& c,
                 bool stop_if_over_memory, Prediction* out) {
  Prediction& p = *out;
  p = Prediction{};
  const GpuSpec& gpu = w.cluster.gpu;
  p.memory = PeakMemoryPerGpu(w.model, l, w.training.seq_len, c);
  p.memory_gib_per_gpu = p.memory.total_bytes / kGiB;
  const bool fits = p.memory.total_bytes <= UsableMemoryBytes(gpu);
  if (!fits && stop_if_over_memory) return false;

  const LayoutPlacement place = PlaceLayout(l, w.cluster.gpus_per_node);
  const LayerCosts lc = CostLayer(w, l, place, c);
  StageStep s = StepOfStage(w, l, place, lc, c, 0);
  if (l.pp > 1) {
    const StageStep last = StepOfStage(w, l, place, lc, c, l.pp - 1);
    if (last.step_s > s.step_s) s = last;
  }
  const int64_t gpus = w.cluster.world_size();
  const double tokens = static_cast<double>(w.training.tokens_per_step());
  p.step_time_s = s.step_s;
  p.tokens_per_s = tokens / s.step_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / static_cast<double>(gpus);
  p.tflops_per_gpu = ModelFlopsPerStep(w.model, w.training) /
                     (s.step_s * static_cast<double>(gpus)) / 1e12;
  p.mfu = p.tflops_per_gpu / gpu.peak_dense_tflops;
  p.compute_s = s.compute_s;
  p.tp_comm_s = s.tp_s;
  p.cp_comm_s = s.cp_s;
  p.pp_comm_s = s.pp_s;
  p.dp_comm_s = s.dp_s;
  p.comm_s = s.tp_s + s.cp_s + s.pp_s + s.dp_s;
  p.exposed_comm_s = s.exposed_s;
  p.bubble_s = s.bubble_s;
  p.watts_per_gpu =
      WattsPerGpu(gpu, s.compute_s / s.step_s, p.comm_s / s.step_s, c);
  p.tokens_per_joule = TokensPerJoule(tokens, p.watts_per_gpu, s.step_s, gpus);
  if (w.training.total_tokens > 0) {
    p.full_run = PredictFullRun(w.training.total_tokens, p.tokens_per_s,
                                p.watts_per_gpu, gpus);
  }
  return fits;
}

}  // namespace tessera::planner
