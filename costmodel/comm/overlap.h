// What a collective that runs beside compute costs the step: the part its
// compute window does not hide, and the slowdown it causes to the compute it
// does hide behind. Concurrent NCCL kernels take SMs and HBM bandwidth from
// the GEMMs they overlap: on A100 and H100 (GPT and Llama layers, 4 GPUs)
// compute ran on average 18.9% slower while a collective ran beside it, and
// up to 40% (Agrawal et al. 2025, Characterizing Compute-Communication
// Overlap in GPU-Accelerated Distributed Deep Learning, arXiv 2507.03114).
// So hiding a collective is not free, and the more of a step's communication
// is hidden (FSDP at scale), the more compute it slows:
//   exposed  = max(floor, comm - efficiency * window)   (at most comm)
//   slowdown = overlap_compute_slowdown * (comm - exposed)
// The slowdown is compute time (the kernels run longer, at compute power,
// and a trial's profile counts it as compute); the exposed part is
// communication on the critical path. Data-parallel (DDP, ZeRO, FSDP, HSDP)
// and context-parallel collectives are priced this way; the tensor-parallel
// overlap coefficient is a net one (tensor_parallel_comm.cc).
//
//   OverlapCost o = OverlappedComm(comm_s, backward_s,
//                                  c.dp_overlap_efficiency, 0.0, c);
#pragma once

#include "costmodel/calibration/calibration.h"

namespace tessera::costmodel {

struct OverlapCost {
  double exposed_s = 0;   // on the critical path
  double slowdown_s = 0;  // added to the compute the rest hides behind
  OverlapCost& operator+=(const OverlapCost& o) {
    exposed_s += o.exposed_s;
    slowdown_s += o.slowdown_s;
    return *this;
  }
};

// `comm_s` prefetched or bucketed behind `window_s` of compute of which
// `efficiency` can hide it, never less than `floor_s` exposed (what nothing
// precedes); all in seconds, >= 0.
OverlapCost OverlappedComm(double comm_s, double window_s, double efficiency,
                           double floor_s, const Calibration& calibration);

}  // namespace tessera::costmodel
