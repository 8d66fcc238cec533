#include "costmodel/search/pareto.h"

#include <algorithm>

namespace tessera::costmodel {

bool ParetoFront::Offer(double x, double y, int64_t id) {
  // First point with a smaller x; those before it have x' >= x and, along the
  // front, their largest y is the last one's.
  auto pos =
      std::partition_point(points_.begin(), points_.end(),
                           [x](const ParetoPoint& p) { return p.x >= x; });
  if (pos != points_.begin() && std::prev(pos)->y >= y) return false;
  // Points with the same x and a smaller y are dominated.
  auto first_same_x = pos;
  while (first_same_x != points_.begin() && std::prev(first_same_x)->x == x) {
    --first_same_x;
  }
  // Points with a smaller x and a y no larger are dominated; along the front
  // they follow directly.
  auto last_dominated = pos;
  while (last_dominated != points_.end() && last_dominated->y <= y) {
    ++last_dominated;
  }
  pos = points_.erase(first_same_x, last_dominated);
  points_.insert(pos, ParetoPoint{x, y, id});
  return true;
}

}  // namespace tessera::costmodel
