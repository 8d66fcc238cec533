#include "executor/engine/pipeline_schedule.h"

#include <algorithm>

namespace tessera::executor {
namespace {

// Virtual micro-batch k of the interleaved schedule (Megatron-LM
// schedules.py, get_model_chunk_id and the micro-batch of a virtual id).
PipelineOp Virtual(int k, int pp, int vpp, bool forward) {
  const int group = pp * vpp;
  int chunk = (k % group) / pp;
  if (!forward) chunk = vpp - 1 - chunk;
  return PipelineOp{forward, chunk, (k / group) * pp + k % pp};
}

}  // namespace

std::vector<PipelineOp> BuildSchedule(int pp, int vpp, int stage,
                                      int micro_batches) {
  const int total = micro_batches * vpp;  // virtual micro-batches
  int warmup;
  if (pp == 1) {
    warmup = 0;
  } else if (vpp == 1) {
    warmup = std::min(pp - stage - 1, micro_batches);
  } else {
    warmup = std::min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
  }
  std::vector<PipelineOp> ops;
  ops.reserve(2 * total);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) {
    ops.push_back(Virtual(next_forward, pp, vpp, true));
  }
  while (next_forward < total) {
    ops.push_back(Virtual(next_forward++, pp, vpp, true));
    ops.push_back(Virtual(next_backward++, pp, vpp, false));
  }
  while (next_backward < total) {
    ops.push_back(Virtual(next_backward++, pp, vpp, false));
  }
  return ops;
}

}  // namespace tessera::executor
