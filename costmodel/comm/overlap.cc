#include "costmodel/comm/overlap.h"

#include <algorithm>

namespace tessera::costmodel {

OverlapCost OverlappedComm(double comm_s, double window_s, double efficiency,
                           double floor_s, const Calibration& c) {
  OverlapCost r;
  r.exposed_s = std::min(
      comm_s, std::max({0.0, floor_s, comm_s - efficiency * window_s}));
  r.slowdown_s = c.overlap_compute_slowdown * (comm_s - r.exposed_s);
  return r;
}

}  // namespace tessera::costmodel
