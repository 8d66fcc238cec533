// How both communicators name a point-to-point call in their errors, and
// that an abort's cause is passed on untouched.
#include "executor/comm/internal/call_context.h"

#include "gtest/gtest.h"

namespace tessera::executor::comm_internal {
namespace {

TEST(CallContextTest, DescribesSendsAndRecvs) {
  float x[4] = {};
  EXPECT_EQ(DescribeSend(Tensor{x, DType::kF32, 4}, "rank 1", "world"),
            "Send of f32 x 4 to rank 1 on group world");
  EXPECT_EQ(DescribeRecv(Tensor{x, DType::kBF16, 3}, "rank 0 (world rank 4)",
                         "rank 1 (world rank 5)", "world/split#0:color=1"),
            "Recv of bf16 x 3 from rank 0 (world rank 4) at rank 1 (world "
            "rank 5) on group world/split#0:color=1");
}

TEST(CallContextTest, AnnotatePrefixesAllButOkAndAborted) {
  const absl::Status s =
      Annotate(absl::InvalidArgumentError("buf.data is null"), "Send of x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Send of x: buf.data is null");
  EXPECT_EQ(Annotate(absl::DeadlineExceededError("late"), "Recv").message(),
            "Recv: late");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "Send of x").ok());
  const absl::Status aborted = absl::AbortedError("rank 3 ran out of memory");
  EXPECT_EQ(Annotate(aborted, "Send of x"), aborted);
}

}  // namespace
}  // namespace tessera::executor::comm_internal
