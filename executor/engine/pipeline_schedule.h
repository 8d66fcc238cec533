// The order in which one pipeline rank runs the forward and backward passes of
// its micro-batches:
//   pp == 1     gradient accumulation: F0 B0 F1 B1 ...
//   1F1B        PipeDream-Flush (Narayanan et al. 2021): stage s runs
//               min(pp-s-1, m) warm-up forwards, then alternates one forward
//               and one backward, then drains the remaining backwards.
//   interleaved Megatron's interleaved 1F1B with vpp model chunks per rank
//               (Narayanan et al. SC'21, Sec. 2.2): virtual micro-batch k runs
//               chunk (k / pp) % vpp of micro-batch (k / (pp*vpp))*pp + k % pp
//               forward (chunks reversed backward), with
//               (pp-s-1)*2 + (vpp-1)*pp warm-up forwards. Needs m % pp == 0.
// Every stage runs the forwards (and backwards) of a given chunk in the same
// micro-batch order, so point-to-point messages pair up in FIFO order.
//
//   for (const PipelineOp& op : BuildSchedule(pp, vpp, stage, m)) ...
#pragma once

#include <vector>

namespace tessera::executor {

struct PipelineOp {
  bool forward = true;
  int chunk = 0;        // virtual chunk on this rank (0..vpp-1)
  int micro_batch = 0;  // 0..m-1
};

// The ops of pipeline rank `stage` for `micro_batches` micro-batches: each
// (chunk, micro-batch) exactly once forward and once backward, its forward
// first. Requires micro_batches % pp == 0 when vpp > 1.
std::vector<PipelineOp> BuildSchedule(int pp, int vpp, int stage,
                                      int micro_batches);

}  // namespace tessera::executor
