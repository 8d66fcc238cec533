// The pipeline schedule's arithmetic: how many micro-batches a stage holds in
// flight (activation memory) and how large the bubble is (idle time), for
// 1F1B (PipeDream-Flush) and Megatron-LM's interleaved 1F1B with vpp model
// chunks per rank (Narayanan et al. SC'21, Section 2.2).
//
//   double layers_held = InFlightLayers(layout, /*stage=*/0, stage_layers);
//   double bubble = PipelineBubbleFraction(/*pp=*/8, /*vpp=*/2, /*m=*/64);
#pragma once

#include <cstdint>

#include "core/layout.h"

namespace tessera::costmodel {

// Idle time over useful time of the pipeline: (p-1)/(v*m) (Narayanan et al.
// SC'21, Sections 2.2.1 and 2.2.2); 0 when pp == 1.
double PipelineBubbleFraction(int64_t pp, int64_t vpp, int64_t micro_batches);

// Layer activations pipeline rank `stage` holds at its peak, in units of "one
// layer's activations for one micro-batch": 1F1B keeps min(m, pp - stage)
// micro-batches of its layers; the interleaved schedule keeps
// min(m*v, 2*(pp - stage - 1) + (v - 1)*pp + 1) chunks of layers/(pp*v)
// layers (Megatron-LM's warm-up count + 1), which for stage 0 is
// layers * (1 + (pp-1)/(pp*v)) (Korthikanti et al. 2022, Section 4.2.3).
double InFlightLayers(const Layout& layout, int64_t stage, int64_t model_layers,
                      int64_t stage_layers);

}  // namespace tessera::costmodel
