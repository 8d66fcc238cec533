// Communication of one transformer layer for one micro-batch on one GPU, by
// pass, and how much of it lands on the critical path. Filled by the tensor-
// and context-parallel models (tensor_parallel_comm.h,
// context_parallel_comm.h).
#pragma once

namespace tessera::costmodel {

struct LayerCommTimes {
  double forward_s = 0;           // during the forward pass
  double backward_s = 0;          // during backward, recomputation included
  double forward_exposed_s = 0;   // of forward_s, not hidden by compute
  double backward_exposed_s = 0;  // of backward_s, not hidden by compute
  // What the hidden rest adds to the pass's compute (overlap.h).
  double forward_slowdown_s = 0;
  double backward_slowdown_s = 0;
};

}  // namespace tessera::costmodel
