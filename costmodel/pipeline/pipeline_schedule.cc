#include "costmodel/pipeline/pipeline_schedule.h"

#include <algorithm>

namespace tessera::costmodel {

double PipelineBubbleFraction(int64_t pp, int64_t vpp, int64_t micro_batches) {
  if (pp <= 1) return 0;
  return static_cast<double>(pp - 1) /
         (static_cast<double>(vpp) * static_cast<double>(micro_batches));
}

double InFlightLayers(const Layout& l, int64_t stage, int64_t model_layers,
                      int64_t stage_layers) {
  const int64_t m = l.grad_accum > 0 ? l.grad_accum : 1;
  if (l.vpp <= 1) {
    const int64_t in_flight = std::min<int64_t>(m, l.pp - stage);
    return static_cast<double>(in_flight) * stage_layers;
  }
  const int64_t chunks = std::min<int64_t>(
      m * l.vpp, 2 * (l.pp - stage - 1) + (l.vpp - 1) * l.pp + 1);
  return static_cast<double>(chunks) * model_layers /
         static_cast<double>(l.pp * l.vpp);
}

}  // namespace tessera::costmodel
