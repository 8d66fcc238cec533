#include "costmodel/search/pareto.h"

#include <random>

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

TEST(ParetoFrontTest, SmallCaseByHand) {
  ParetoFront f;
  EXPECT_TRUE(f.Offer(1, 5, 0));
  EXPECT_TRUE(f.Offer(3, 3, 1));
  EXPECT_TRUE(f.Offer(5, 1, 2));
  EXPECT_FALSE(f.Offer(2, 2, 3));  // dominated by (3, 3)
  EXPECT_FALSE(f.Offer(3, 3, 4));  // equal: the first stays
  EXPECT_TRUE(f.Offer(4, 4, 5));   // dominates (3, 3)
  ASSERT_EQ(f.points().size(), 3u);
  EXPECT_EQ(f.points()[0].id, 2);
  EXPECT_EQ(f.points()[1].id, 5);
  EXPECT_EQ(f.points()[2].id, 0);
  EXPECT_TRUE(f.Offer(5, 2, 6));  // same x, larger y: replaces (5, 1)
  EXPECT_EQ(f.points()[0].id, 6);
  EXPECT_EQ(f.points().size(), 3u);
}

TEST(ParetoFrontTest, MatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coord(0, 40);  // many ties
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<double, double>> pts(200);
    ParetoFront f;
    for (size_t i = 0; i < pts.size(); ++i) {
      pts[i] = {coord(rng), coord(rng)};
      f.Offer(pts[i].first, pts[i].second, static_cast<int64_t>(i));
    }
    // Brute force: i is on the front if no j beats it in both (>=, with one
    // >), and it is the first of its equals.
    std::vector<int64_t> expected;
    for (size_t i = 0; i < pts.size(); ++i) {
      bool keep = true;
      for (size_t j = 0; j < pts.size() && keep; ++j) {
        const bool ge =
            pts[j].first >= pts[i].first && pts[j].second >= pts[i].second;
        const bool equal = pts[j] == pts[i];
        if (ge && (!equal || j < i)) keep = false;
      }
      if (keep) expected.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> got;
    for (const ParetoPoint& p : f.points()) got.push_back(p.id);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected);
    for (size_t k = 1; k < f.points().size(); ++k) {
      EXPECT_GT(f.points()[k - 1].x, f.points()[k].x);
      EXPECT_LT(f.points()[k - 1].y, f.points()[k].y);
    }
  }
}

}  // namespace
}  // namespace tessera::costmodel
