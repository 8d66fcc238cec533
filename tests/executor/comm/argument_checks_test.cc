// The argument checks both communicators share, against hand-written texts:
// every error names the field and the values, in place is accepted only in
// NCCL's form, and empty tensors need no buffer.
#include "executor/comm/internal/argument_checks.h"

#include "gtest/gtest.h"

namespace tessera::executor::comm_internal {
namespace {

// INVALID_ARGUMENT with exactly `text`.
void ExpectInvalid(const absl::Status& s, absl::string_view text) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message(), text);
}

TEST(ArgumentChecksTest, TensorNeedsANonNegativeCountAndABufferWhenNotEmpty) {
  float x[2] = {};
  EXPECT_TRUE(CheckTensor("buf", Tensor{x, DType::kF32, 2}).ok());
  EXPECT_TRUE(CheckTensor("buf", Tensor{nullptr, DType::kF32, 0}).ok());
  ExpectInvalid(CheckTensor("buf", Tensor{x, DType::kF32, -1}),
                "buf.numel is -1");
  ExpectInvalid(CheckTensor("send", Tensor{nullptr, DType::kBF16, 3}),
                "send.data is null");
}

TEST(ArgumentChecksTest, OverlapsComparesBytes) {
  float a[8] = {};
  const Tensor first4{a, DType::kF32, 4};
  EXPECT_TRUE(Overlaps(first4, Tensor{a + 3, DType::kF32, 4}));
  EXPECT_TRUE(Overlaps(Tensor{a + 3, DType::kF32, 4}, first4));
  EXPECT_FALSE(Overlaps(first4, Tensor{a + 4, DType::kF32, 4}));  // adjacent
  EXPECT_FALSE(Overlaps(first4, Tensor{a + 2, DType::kF32, 0}));  // empty
  // 4 bf16 are the 8 bytes of a[0..1]; a fifth reaches into a[2].
  EXPECT_FALSE(
      Overlaps(Tensor{a, DType::kBF16, 4}, Tensor{a + 2, DType::kF32, 1}));
  EXPECT_TRUE(
      Overlaps(Tensor{a, DType::kBF16, 5}, Tensor{a + 2, DType::kF32, 1}));
}

TEST(ArgumentChecksTest, SendAndRecvMustBeUsableAndOfOneDtype) {
  float a[4] = {}, b[4] = {};
  EXPECT_TRUE(
      CheckSendRecv(Tensor{a, DType::kF32, 4}, Tensor{b, DType::kF32, 2}).ok());
  ExpectInvalid(
      CheckSendRecv(Tensor{a, DType::kF32, 4}, Tensor{b, DType::kBF16, 4}),
      "send.dtype f32 != recv.dtype bf16");
  ExpectInvalid(CheckSendRecv(Tensor{a, DType::kF32, -2},
                              Tensor{nullptr, DType::kF32, 4}),
                "send.numel is -2");
  ExpectInvalid(
      CheckSendRecv(Tensor{a, DType::kF32, 4}, Tensor{nullptr, DType::kF32, 4}),
      "recv.data is null");
}

TEST(ArgumentChecksTest, AllReduceInPlaceOrApart) {
  float a[8] = {};
  const Tensor send{a, DType::kF32, 4};
  EXPECT_TRUE(CheckAllReduce(send, send).ok());
  EXPECT_TRUE(CheckAllReduce(send, Tensor{a + 4, DType::kF32, 4}).ok());
  ExpectInvalid(CheckAllReduce(send, Tensor{a + 4, DType::kF32, 3}),
                "recv.numel 3 != send.numel 4");
  ExpectInvalid(CheckAllReduce(send, Tensor{a + 1, DType::kF32, 4}),
                "recv partly overlaps send (in place needs recv == send)");
  ExpectInvalid(CheckAllReduce(send, Tensor{a + 4, DType::kI32, 4}),
                "send.dtype f32 != recv.dtype i32");
}

TEST(ArgumentChecksTest, AllGatherSendIsOneBlockOfRecv) {
  float a[12] = {};
  const Tensor recv{a, DType::kF32, 6};  // 3 ranks x 2
  EXPECT_TRUE(CheckAllGather(Tensor{a + 6, DType::kF32, 2}, recv, 1, 3).ok());
  EXPECT_TRUE(CheckAllGather(recv.Slice(2, 2), recv, 1, 3).ok());  // in place
  ExpectInvalid(CheckAllGather(Tensor{a + 6, DType::kF32, 2},
                               Tensor{a, DType::kF32, 5}, 1, 3),
                "recv.numel 5 != group size 3 x send.numel 2");
  ExpectInvalid(CheckAllGather(recv.Slice(0, 2), recv, 1, 3),
                "send partly overlaps recv (in place needs send == this "
                "rank's block of recv)");
}

TEST(ArgumentChecksTest, ReduceScatterRecvIsOneBlockOfSend) {
  float a[12] = {};
  const Tensor send{a, DType::kF32, 6};  // 3 ranks x 2
  EXPECT_TRUE(
      CheckReduceScatter(send, Tensor{a + 6, DType::kF32, 2}, 2, 3).ok());
  EXPECT_TRUE(CheckReduceScatter(send, send.Slice(4, 2), 2, 3).ok());
  ExpectInvalid(CheckReduceScatter(Tensor{a, DType::kF32, 7},
                                   Tensor{a + 8, DType::kF32, 2}, 2, 3),
                "send.numel 7 != group size 3 x recv.numel 2");
  ExpectInvalid(CheckReduceScatter(send, send.Slice(3, 2), 2, 3),
                "recv partly overlaps send (in place needs recv == this "
                "rank's block of send)");
}

TEST(ArgumentChecksTest, BroadcastRootAndSplitColorAndPeers) {
  float x = 0;
  EXPECT_TRUE(CheckBroadcast(Tensor{&x, DType::kF32, 1}, 2, 3).ok());
  ExpectInvalid(CheckBroadcast(Tensor{&x, DType::kF32, 1}, 3, 3),
                "root 3 is outside the group's ranks [0, 3)");
  ExpectInvalid(CheckBroadcast(Tensor{nullptr, DType::kF32, 1}, 9, 3),
                "buf.data is null");
  EXPECT_TRUE(CheckSplitColor(0).ok());
  ExpectInvalid(CheckSplitColor(-1), "color -1 (must be >= 0)");
  EXPECT_TRUE(CheckPeer("Send: peer", 0, 1).ok());
  ExpectInvalid(CheckPeer("Send: peer", 2, 2),
                "Send: peer 2 is outside the group's ranks [0, 2)");
  ExpectInvalid(CheckPeer("Recv: peer", -1, 4),
                "Recv: peer -1 is outside the group's ranks [0, 4)");
}

TEST(ArgumentChecksTest, RecvMustMatchItsSend) {
  float x[4] = {};
  EXPECT_TRUE(
      CheckRecvMatchesSend(Tensor{x, DType::kF32, 4}, DType::kF32, 4).ok());
  ExpectInvalid(CheckRecvMatchesSend(Tensor{x, DType::kF32, 3}, DType::kF32, 4),
                "expected f32 x 3 but the matching Send has f32 x 4");
  ExpectInvalid(
      CheckRecvMatchesSend(Tensor{x, DType::kI32, 4}, DType::kBF16, 4),
      "expected i32 x 4 but the matching Send has bf16 x 4");
}

}  // namespace
}  // namespace tessera::executor::comm_internal
