// NCCL group semantics for receives, with a recording stand-in for the
// communicator's receive: nesting, call order, the first error, and a
// GroupEnd without GroupStart.
#include "executor/comm/internal/deferred_recvs.h"

#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::comm_internal {
namespace {

TEST(DeferredRecvsTest, TheOutermostEndRunsTheReceivesInCallOrder) {
  DeferredRecvs deferred;
  float a = 0, b = 0, c = 0;
  std::vector<int> peers;
  auto recv_now = [&](const Tensor& buf, int peer) {
    peers.push_back(peer);
    *buf.data_as<float>() = static_cast<float>(peer);
    return absl::OkStatus();
  };
  EXPECT_FALSE(deferred.open());
  deferred.Start();
  deferred.Start();  // nested
  EXPECT_TRUE(deferred.open());
  ASSERT_TRUE(deferred.Defer(Tensor{&a, DType::kF32, 1}, 3).ok());
  ASSERT_TRUE(deferred.Defer(Tensor{&b, DType::kF32, 1}, 1).ok());
  ASSERT_TRUE(deferred.End(recv_now).ok());  // inner: nothing runs
  EXPECT_TRUE(peers.empty());
  ASSERT_TRUE(deferred.Defer(Tensor{&c, DType::kF32, 1}, 2).ok());
  ASSERT_TRUE(deferred.End(recv_now).ok());
  EXPECT_FALSE(deferred.open());
  EXPECT_EQ(peers, (std::vector<int>{3, 1, 2}));
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
}

TEST(DeferredRecvsTest, StopsAtTheFirstErrorAndDropsTheRest) {
  DeferredRecvs deferred;
  float x = 0;
  std::vector<int> peers;
  auto recv_now = [&](const Tensor&, int peer) {
    peers.push_back(peer);
    return peer == 1 ? absl::InvalidArgumentError("bad size")
                     : absl::OkStatus();
  };
  deferred.Start();
  for (int peer : {0, 1, 2}) {
    ASSERT_TRUE(deferred.Defer(Tensor{&x, DType::kF32, 1}, peer).ok());
  }
  EXPECT_EQ(deferred.End(recv_now).message(), "bad size");
  EXPECT_EQ(peers, (std::vector<int>{0, 1}));
  // The next group starts empty.
  deferred.Start();
  peers.clear();
  ASSERT_TRUE(deferred.End(recv_now).ok());
  EXPECT_TRUE(peers.empty());
}

TEST(DeferredRecvsTest, BadBuffersAndUnbalancedEndsAreRejected) {
  DeferredRecvs deferred;
  auto never = [](const Tensor&, int) {
    ADD_FAILURE() << "nothing was queued";
    return absl::OkStatus();
  };
  const absl::Status unbalanced = deferred.End(never);
  EXPECT_EQ(unbalanced.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(unbalanced.message(), "GroupEnd without GroupStart");
  deferred.Start();
  const absl::Status bad = deferred.Defer(Tensor{nullptr, DType::kF32, 2}, 0);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "Recv: buf.data is null");
  EXPECT_TRUE(deferred.End(never).ok());
}

}  // namespace
}  // namespace tessera::executor::comm_internal
