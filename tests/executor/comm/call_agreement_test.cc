// How calls are described and checked for agreement across ranks, against
// hand-written texts: the first disagreeing rank in rank order is named with
// rank 0's value, and only the fields a collective uses must agree.
#include "executor/comm/internal/call_agreement.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera::executor::comm_internal {
namespace {

CallSignature Call(CollectiveKind kind, DType dtype = DType::kF32,
                   int64_t count = 4, ReduceOp op = ReduceOp::kSum,
                   int root = 0) {
  CallSignature c;
  c.kind = kind;
  c.dtype = dtype;
  c.count = count;
  c.op = op;
  c.root = root;
  return c;
}

// CheckCallsAgree over `calls` as collective #2 of group "g", ranks named
// "rank r (world rank 10+r)".
absl::Status Agree(const std::vector<CallSignature>& calls) {
  return CheckCallsAgree(
      static_cast<int>(calls.size()),
      [&](int r) -> const CallSignature& { return calls[r]; }, 2, "g",
      [](int r) {
        return absl::StrCat("rank ", r, " (world rank ", 10 + r, ")");
      });
}

TEST(CallAgreementTest, DescribesEachKindWithTheFieldsItUses) {
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kAllReduce, DType::kF32, 1000), 3,
                         "world"),
            "AllReduce #3 (f32 x 1000, sum) on group world");
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kReduceScatter, DType::kI32, 2,
                              ReduceOp::kMax),
                         0, "g"),
            "ReduceScatter #0 (i32 x 2, max) on group g");
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kAllGather, DType::kBF16, 5,
                              ReduceOp::kMax),
                         1, "world"),
            "AllGather #1 (bf16 x 5) on group world");
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kBroadcast, DType::kBF16, 7,
                              ReduceOp::kSum, 2),
                         0, "world/split#1:color=0"),
            "Broadcast #0 (bf16 x 7, root 2) on group world/split#1:color=0");
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kBarrier), 4, "world"),
            "Barrier #4 on group world");
  EXPECT_EQ(DescribeCall(Call(CollectiveKind::kSplit), 0, "world"),
            "Split #0 on group world");
  EXPECT_EQ(CollectiveName(CollectiveKind::kReduceScatter), "ReduceScatter");
}

TEST(CallAgreementTest, EqualCallsAgree) {
  const CallSignature c = Call(CollectiveKind::kAllReduce);
  EXPECT_TRUE(Agree({c}).ok());
  EXPECT_TRUE(Agree({c, c, c}).ok());
}

TEST(CallAgreementTest, NamesTheFirstDisagreeingRankAndRankZerosValue) {
  const CallSignature c = Call(CollectiveKind::kAllReduce);
  CallSignature count = c, dtype = c, op = c;
  count.count = 5;
  dtype.dtype = DType::kBF16;
  op.op = ReduceOp::kMax;
  const std::string what = "AllReduce #2 (f32 x 4, sum) on group g: ";
  absl::Status s = Agree({c, c, count, dtype});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), what +
                             "rank 2 (world rank 12) passed count 5 but "
                             "rank 0 (world rank 10) passed 4");
  EXPECT_EQ(Agree({c, dtype}).message(),
            what +
                "rank 1 (world rank 11) passed dtype bf16 but rank 0 "
                "(world rank 10) passed f32");
  EXPECT_EQ(Agree({c, op}).message(),
            what +
                "rank 1 (world rank 11) passed op max but rank 0 (world "
                "rank 10) passed sum");
  CallSignature root = Call(CollectiveKind::kBroadcast);
  root.root = 1;
  EXPECT_EQ(Agree({Call(CollectiveKind::kBroadcast), root}).message(),
            "Broadcast #2 (f32 x 4, root 0) on group g: rank 1 (world rank "
            "11) passed root 1 but rank 0 (world rank 10) passed 0");
  EXPECT_EQ(Agree({c, Call(CollectiveKind::kBarrier)}).message(),
            what +
                "rank 1 (world rank 11) called Barrier instead "
                "(collectives must be called in the same order)");
}

TEST(CallAgreementTest, ALocalErrorIsReportedWithItsOwnCall) {
  const CallSignature c = Call(CollectiveKind::kAllReduce);
  CallSignature bad = Call(CollectiveKind::kAllReduce, DType::kF32, 2);
  bad.local = absl::InvalidArgumentError("recv.numel 1 != send.numel 2");
  CallSignature count = c;
  count.count = 9;
  // Rank 1's own error comes before rank 2's mismatch (rank order).
  const absl::Status s = Agree({c, bad, count});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "AllReduce #2 (f32 x 2, sum) on group g: rank 1 (world rank 11): "
            "recv.numel 1 != send.numel 2");
}

TEST(CallAgreementTest, OnlyTheFieldsACollectiveUsesMustAgree) {
  // AllGather has no op, AllReduce no root, Barrier and Split no data.
  EXPECT_TRUE(
      Agree({Call(CollectiveKind::kAllGather),
             Call(CollectiveKind::kAllGather, DType::kF32, 4, ReduceOp::kMax)})
          .ok());
  EXPECT_TRUE(Agree({Call(CollectiveKind::kAllReduce),
                     Call(CollectiveKind::kAllReduce, DType::kF32, 4,
                          ReduceOp::kSum, 3)})
                  .ok());
  EXPECT_TRUE(Agree({Call(CollectiveKind::kBarrier),
                     Call(CollectiveKind::kBarrier, DType::kI32, 7)})
                  .ok());
  EXPECT_TRUE(Agree({Call(CollectiveKind::kSplit),
                     Call(CollectiveKind::kSplit, DType::kBF16, 1)})
                  .ok());
}

}  // namespace
}  // namespace tessera::executor::comm_internal
