// The measured layout sweep's reader (costmodel/published/layout_sweep.h) on
// tests/data/usp_sweep.json: rows as the file gives them, and the runs that
// collapsed against the same layout on half the nodes.
#include "costmodel/published/layout_sweep.h"

#include <string>

#include "gtest/gtest.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {

const LayoutSweep& Sweep() {
  static const LayoutSweep* sweep = [] {
    absl::StatusOr<LayoutSweep> s = LoadLayoutSweep(
        std::string(TESSERA_SOURCE_DIR) + "/tests/data/usp_sweep.json");
    EXPECT_TRUE(s.ok()) << s.status();
    return new LayoutSweep(s.ok() ? *std::move(s) : LayoutSweep{});
  }();
  return *sweep;
}

const SweepRow& Row(int64_t index) { return Sweep().rows.at(index); }

TEST(LayoutSweepTest, RowsAsTheFileGivesThem) {
  const LayoutSweep& s = Sweep();
  ASSERT_EQ(s.rows.size(), 903u);
  int64_t ran = 0;
  for (const SweepRow& r : s.rows) ran += r.ran ? 1 : 0;
  EXPECT_EQ(ran, 432);
  EXPECT_NE(s.collectives, nullptr);
  // Row 323: the 1B on 8 nodes, tp 1, pp 4, dp 16, zero 1, micro-batch 1.
  const SweepRow& r = Row(323);
  EXPECT_EQ(r.nodes, 8);
  EXPECT_EQ(r.layout.pp, 4);
  EXPECT_EQ(r.layout.dp, 16);
  EXPECT_EQ(r.layout.micro_batch, 1);
  EXPECT_DOUBLE_EQ(r.measured_tokens_per_s_per_gpu, 890);
}

TEST(LayoutSweepTest, CollapsedAgainstTheSameLayoutOnHalfTheNodes) {
  // 890 tokens/s per GPU on 8 nodes where the same layout ran 32,105 on 4
  // (row 199): collapsed. Its micro-batch-4 sibling (3,293 against 27,235)
  // too; the 8B's tp 2, pp 16, zero 1 on 8 nodes (4,264) has no run on 4
  // nodes to compare with, and the 1B's zero-1 pure data parallelism on 8
  // nodes (31,297 against 35,951) lost 13%, not half.
  EXPECT_TRUE(Row(323).collapsed);
  EXPECT_TRUE(Row(326).collapsed);
  EXPECT_FALSE(Row(199).collapsed);
  EXPECT_FALSE(Row(312).collapsed);
  EXPECT_FALSE(Row(813).collapsed);
  int64_t collapsed = 0;
  for (const SweepRow& r : Sweep().rows) {
    collapsed += r.collapsed ? 1 : 0;
    if (r.collapsed) {
      EXPECT_TRUE(r.ran);
      EXPECT_GE(r.nodes, 2);  // 1-node runs have nothing to compare with
    }
  }
  EXPECT_EQ(collapsed, 15);  // 2 on 2 nodes, 13 on 4 and 8 (the check)
}

TEST(LayoutSweepTest, CheckWithoutCollapsedRowsScoresTheRest) {
  const LayoutSweep& s = Sweep();
  const SweepReport r = EvaluateLayoutSweep(s, [&](const SweepRow& row) {
    absl::StatusOr<Calibration> c = DefaultCalibration(row.workload);
    Calibration out = c.ok() ? *c : Calibration{};
    out.collectives = s.collectives;
    return out;
  });
  EXPECT_EQ(r.collapsed_rows, 13);
  EXPECT_EQ(r.check_without_collapsed.measured_rows,
            r.check.measured_rows - 13);
  EXPECT_EQ(r.check_without_collapsed.groups, r.check.groups);
}

}  // namespace
}  // namespace tessera::costmodel
