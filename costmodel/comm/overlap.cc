#include "costmodel/comm/overlap.h"

#include <algorithm>

namespace tessera::costmodel {

double OverlappedCommCostS(double comm_s, double window_s, double efficiency,
                           double floor_s, const Calibration& c) {
  const double exposed_s = std::min(
      comm_s, std::max({0.0, floor_s, comm_s - efficiency * window_s}));
  const double hidden_s = comm_s - exposed_s;
  return exposed_s + c.overlap_compute_slowdown * hidden_s;
}

}  // namespace tessera::costmodel
