#include "costmodel/step_model.h"

#include <algorithm>

#include "core/model_flops.h"
#include "core/units.h"
#include "costmodel/comm/context_parallel_comm.h"
#include "costmodel/comm/data_parallel_comm.h"
#include "costmodel/comm/pipeline_comm.h"
#include "costmodel/comm/rank_placement.h"
#include "costmodel/comm/tensor_parallel_comm.h"
#include "costmodel/compute/compute_time.h"
#include "costmodel/compute/flops.h"
#include "core/layer_shard.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/pipeline/pipeline_schedule.h"
#include "costmodel/pipeline/stage_params.h"
#include "costmodel/pipeline/stage_split.h"
#include "costmodel/power/power.h"

namespace tessera::costmodel {
namespace {


// One stage's share of a step.
struct StageStep {
  double micro_s = 0;          // one micro-batch, exposed comm included
  double micro_compute_s = 0;  // of it, compute (slowdown included)
  double once_s = 0;           // once per step: exposed DP traffic + optimizer
  double once_compute_s = 0;   // of it, the optimizer (slowdown included)
  // Of the compute, the slowdown beside hidden collectives (overlap.h).
  double micro_slowdown_s = 0, once_slowdown_s = 0;
  // Of the compute, the GPU's wait for the host to issue the micro-batch.
  double micro_host_wait_s = 0;
  double tp_s = 0, cp_s = 0, pp_s = 0, dp_s = 0;  // whole step, hidden or not
  // Of micro_s, the exposed communication of each kind (dp: the rest).
  double tp_exposed_micro_s = 0, cp_exposed_micro_s = 0,
         pp_exposed_micro_s = 0;
};

void CostLayer(const Workload& w, const TrainingStack& stack, const Layout& l,
               const LayoutPlacement& place, const Calibration& c,
               LayerStep* out) {
  const LayerShard shard = LayerShard::Of(l, w.training);
  const GpuSpec& gpu = w.cluster.gpu;
  const LayerComputeTimes fwd = ForwardLayerTimes(w.model, gpu, stack, c, shard);
  LayerStep& r = *out;
  r.have_costs = true;
  r.forward_s = fwd.total_s();
  r.backward_s = LayerBackwardTimeS(fwd, stack, l.recompute);
  r.tp = TensorParallelLayerComm(w.model, shard, l.recompute, place.tp,
                                 w.cluster, c);
  r.cp = ContextParallelLayerComm(
      w.model, shard, l.recompute, place.cp, w.cluster, c, fwd.attention_s,
      AttentionBackwardTimeS(fwd, stack));
  r.logits_forward_s = LogitsForwardTimeS(w.model, gpu, c, shard);
  if (l.pp > 1) {
    r.send_s =
        PipelineSendTimeS(w.model, shard, place.pp_crosses_nodes, w.cluster, c);
  }
}

StageStep StepOfStage(const Workload& w, const TrainingStack& stack,
                      const Layout& l, const LayoutPlacement& place,
                      const LayerStep& lc, const Calibration& c,
                      int64_t stage) {
  const StageParams sp =
      StageParamsPerGpu(w.model, l, stack.pipeline_split, stage);
  const double layers = static_cast<double>(sp.layers);
  const double m = static_cast<double>(l.grad_accum);
  StageWork work;
  work.params = sp.params;
  work.layers = layers;
  work.forward_compute_s =
      layers * lc.forward_s + (sp.last ? lc.logits_forward_s : 0);
  work.backward_compute_s =
      layers * lc.backward_s + (sp.last ? 2 * lc.logits_forward_s : 0);
  const DataParallelTimes dp =
      DataParallelComm(l, place, work, w.cluster, stack, c);
  const double layer_exposed_s =
      layers * (lc.tp.forward_exposed_s + lc.tp.backward_exposed_s +
                lc.cp.forward_exposed_s + lc.cp.backward_exposed_s);
  // A forward send and a backward send per micro-batch and model chunk.
  const double sends_s = 2 * static_cast<double>(l.vpp) * lc.send_s;
  const double local_params =
      sp.params / (l.zero >= 1 ? static_cast<double>(place.shard.ranks) : 1);

  // Pipeline sends overlap compute only in the interleaved schedule:
  // Megatron-Core's 1F1B refuses overlap_p2p_comm (pipeline_parallel/
  // schedules.py, forward_backward_pipelining_without_interleaving) and its
  // arguments turn it off without virtual stages.
  const double pp_overlap = l.vpp > 1 ? c.pp_overlap_efficiency : 0.0;
  StageStep s;
  // A fixed cost per micro-batch and model chunk (micro_batch_overhead_s),
  // counted with compute: the rank is busy, not communicating.
  const double fixed_s =
      static_cast<double>(l.vpp) * c.micro_batch_overhead_s;
  // Hidden data- and context-parallel traffic slows the compute it hides
  // behind: compute time, not communication (comm/overlap.h).
  s.micro_slowdown_s =
      dp.per_micro_batch.slowdown_s +
      layers * (lc.cp.forward_slowdown_s + lc.cp.backward_slowdown_s);
  s.micro_compute_s = work.forward_compute_s + work.backward_compute_s +
                      fixed_s + s.micro_slowdown_s;
  s.micro_s = s.micro_compute_s + layer_exposed_s +
              dp.per_micro_batch.exposed_s + (1 - pp_overlap) * sends_s;
  // The host issues the micro-batch's kernels layer by layer; the GPU can
  // run ahead of it only while its work outlasts the host's, so the
  // micro-batch takes at least the host's time (with a pipeline across
  // nodes and tp > 1, more per TP rank: cross_node_pipeline_tp_stall_s).
  // The GPU's wait for the host counts with compute: the rank is not
  // communicating.
  const double stall_s = place.pp_crosses_nodes && l.tp > 1
                             ? static_cast<double>(l.tp) *
                                   c.cross_node_pipeline_tp_stall_s
                             : 0.0;
  const double host_s = layers * (c.host_dispatch_s_per_layer + stall_s);
  if (host_s > s.micro_s) {
    s.micro_host_wait_s = host_s - s.micro_s;
    s.micro_compute_s += s.micro_host_wait_s;
    s.micro_s = host_s;
  }
  s.once_slowdown_s = dp.per_step.slowdown_s;
  s.once_compute_s =
      OptimizerStepTimeS(local_params, w.cluster.gpu, c) + s.once_slowdown_s;
  s.once_s = s.once_compute_s + dp.per_step.exposed_s;
  s.tp_exposed_micro_s =
      layers * (lc.tp.forward_exposed_s + lc.tp.backward_exposed_s);
  s.cp_exposed_micro_s =
      layers * (lc.cp.forward_exposed_s + lc.cp.backward_exposed_s);
  s.pp_exposed_micro_s = (1 - pp_overlap) * sends_s;
  s.tp_s = m * layers * (lc.tp.forward_s + lc.tp.backward_s);
  s.cp_s = m * layers * (lc.cp.forward_s + lc.cp.backward_s);
  s.pp_s = m * sends_s;
  s.dp_s = m * dp.per_micro_batch_s + dp.per_step_s;
  return s;
}

}  // namespace

LayerStep LayerStepOf(const Workload& w, const TrainingStack& stack,
                      const Layout& l, const Calibration& c) {
  LayerStep r;
  r.memory = LayerMemoryOf(w.model, l, w.training, stack, c);
  return r;
}

bool PredictStep(const Workload& w, const TrainingStack& stack,
                 const Layout& l, const Calibration& c,
                 bool stop_if_over_memory, Prediction* out) {
  LayerStep layer = LayerStepOf(w, stack, l, c);
  return PredictStep(w, stack, l, c, &layer, stop_if_over_memory, out);
}

bool PredictStep(const Workload& w, const TrainingStack& stack,
                 const Layout& l, const Calibration& c, LayerStep* layer,
                 bool stop_if_over_memory, Prediction* out) {
  const LayerMemory& layer_memory = layer->memory;
  Prediction& p = *out;
  p = Prediction{};
  const GpuSpec& gpu = w.cluster.gpu;
  if (stop_if_over_memory) {
    // The first stage alone decides most layouts of the search: when it
    // does not fit, neither does the peak.
    p.memory = StageMemory(w.model, l, w.training, stack, c, layer_memory, 0);
    if (p.memory.total_bytes > UsableMemoryBytes(w.cluster)) {
      p.memory_gib_per_gpu = p.memory.total_bytes / kGiB;
      return false;
    }
  }
  p.memory = PeakMemoryPerGpu(w.model, l, w.training, stack, c, layer_memory);
  p.memory_gib_per_gpu = p.memory.total_bytes / kGiB;
  const bool fits = p.memory.total_bytes <= UsableMemoryBytes(w.cluster);
  if (!fits && stop_if_over_memory) return false;

  const LayoutPlacement place = PlaceLayout(l, w.cluster.gpus_per_node);
  if (!layer->have_costs) CostLayer(w, stack, l, place, c, layer);
  const LayerStep& lc = *layer;
  // The first, middle and head stages (the others repeat the middle one),
  // and under a split by cost the second (the early ranks take the most
  // layers); ranks that hold no block idle.
  StageStep beat = StepOfStage(w, stack, l, place, lc, c, 0);
  double once_s = beat.once_s;
  const int64_t head = HeadStage(w.model, l, stack.pipeline_split);
  const int64_t second =
      stack.pipeline_split == PipelineSplit::kEven ? 0 : 1;
  for (int64_t stage : {second, std::min(l.pp / 2, head), head}) {
    if (stage <= 0) continue;
    const StageStep s = StepOfStage(w, stack, l, place, lc, c, stage);
    once_s = std::max(once_s, s.once_s);
    if (s.micro_s > beat.micro_s) beat = s;
  }
  const double m = static_cast<double>(l.grad_accum);
  const double bubble_s =
      PipelineBubbleFraction(ActiveStages(w.model, l, stack.pipeline_split),
                             l.vpp, l.grad_accum) *
      m * beat.micro_s;
  const int64_t gpus = w.cluster.world_size();
  const double tokens = static_cast<double>(w.training.tokens_per_step());
  p.step_time_s = m * beat.micro_s + bubble_s + once_s;
  p.tokens_per_s = tokens / p.step_time_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / static_cast<double>(gpus);
  // The same model FLOPs a trial's measured MFU divides (core/model_flops.h).
  p.tflops_per_gpu = ModelFlopsPerStep(w.model, w.training.global_batch,
                                       w.training.seq_len) /
                     (p.step_time_s * static_cast<double>(gpus)) / 1e12;
  p.mfu = p.tflops_per_gpu / gpu.peak_dense_tflops;
  p.compute_s = m * beat.micro_compute_s + beat.once_compute_s;
  p.overlap_slowdown_s = m * beat.micro_slowdown_s + beat.once_slowdown_s;
  // The bubble's share of the host wait stays in the bubble.
  p.host_wait_s = m * beat.micro_host_wait_s;
  p.bubble_s = bubble_s;
  p.exposed_comm_s = p.step_time_s - p.compute_s - p.bubble_s;
  p.tp_exposed_s = m * beat.tp_exposed_micro_s;
  p.cp_exposed_s = m * beat.cp_exposed_micro_s;
  p.pp_exposed_s = m * beat.pp_exposed_micro_s;
  p.dp_exposed_s =
      p.exposed_comm_s - p.tp_exposed_s - p.cp_exposed_s - p.pp_exposed_s;
  p.tp_comm_s = beat.tp_s;
  p.cp_comm_s = beat.cp_s;
  p.pp_comm_s = beat.pp_s;
  p.dp_comm_s = beat.dp_s;
  p.comm_s = beat.tp_s + beat.cp_s + beat.pp_s + beat.dp_s;
  // A GPU waiting for its host draws what one waiting in the bubble does.
  p.watts_per_gpu =
      WattsPerGpu(gpu, (p.compute_s - p.host_wait_s) / p.step_time_s,
                  p.exposed_comm_s / p.step_time_s,
                  (p.bubble_s + p.host_wait_s) / p.step_time_s, c);
  p.tokens_per_joule =
      TokensPerJoule(tokens, p.watts_per_gpu, p.step_time_s, gpus);
  if (w.training.total_tokens > 0) {
    p.full_run = PredictFullRun(w.training.total_tokens, p.tokens_per_s,
                                p.watts_per_gpu, gpus);
  }
  return fits;
}

}  // namespace tessera::costmodel
