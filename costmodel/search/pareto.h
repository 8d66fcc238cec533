// The Pareto front of points whose two coordinates are both maximised
// (tokens/s and tokens/J): the points no other point beats or equals in both.
// Points are offered one at a time; the front stays sorted by x descending (so
// y ascending), which makes each offer a binary search plus a short erase.
// Of equal points the first offered stays.
//
//   ParetoFront front;
//   front.Offer(tokens_per_s, tokens_per_joule, /*id=*/i);
//   for (const ParetoPoint& p : front.points()) ...
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::costmodel {

struct ParetoPoint {
  double x = 0;
  double y = 0;
  int64_t id = 0;
};

class ParetoFront {
 public:
  // Adds the point unless a point on the front has x' >= x and y' >= y;
  // removes the points it dominates. Returns whether it joined.
  bool Offer(double x, double y, int64_t id);

  // Sorted by x descending.
  const std::vector<ParetoPoint>& points() const { return points_; }

 private:
  std::vector<ParetoPoint> points_;
};

}  // namespace tessera::costmodel
