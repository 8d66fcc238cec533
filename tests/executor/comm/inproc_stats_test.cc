// InProcessCommunicator's traffic counters (CommStats, outside the
// Communicator contract): collectives, sends, receives and payload bytes as
// nccl-tests counts them, and plausible wait and copy times.
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/comm_stats.h"
#include "executor/comm/inproc_communicator.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::CommKind;
using testing::HostBuffer;
using testing::RunAllOk;

TEST(InProcessStatsTest, StatsCountPayloadBytes) {
  std::vector<CommStats> stats(4);
  RunAllOk(CommKind::kInProcess, 4,
           [&](int rank, Communicator& comm) -> absl::Status {
             auto& inproc = dynamic_cast<InProcessCommunicator&>(comm);
             HostBuffer a(DType::kF32, 100), gathered(DType::kF32, 400);
             HostBuffer b(DType::kBF16, 10);
             TESSERA_RETURN_IF_ERROR(
                 comm.AllReduce(a.view(), a.view(), ReduceOp::kSum));
             TESSERA_RETURN_IF_ERROR(comm.AllGather(a.view(), gathered.view()));
             TESSERA_RETURN_IF_ERROR(comm.Broadcast(b.view(), 0));
             TESSERA_RETURN_IF_ERROR(comm.Barrier());
             TESSERA_RETURN_IF_ERROR(comm.Send(b.view(), (rank + 1) % 4));
             TESSERA_RETURN_IF_ERROR(comm.Recv(b.view(), (rank + 3) % 4));
             stats[rank] = inproc.stats();
             return absl::OkStatus();
           });
  for (const CommStats& s : stats) {
    EXPECT_EQ(s.collectives, 4);
    EXPECT_EQ(s.sends, 1);
    EXPECT_EQ(s.recvs, 1);
    // 400 (AllReduce) + 1600 (AllGather recv) + 20 (Broadcast) + 20 + 20.
    EXPECT_EQ(s.bytes, 400 + 1600 + 20 + 20 + 20);
    EXPECT_GE(s.wait_s, 0);
    EXPECT_GE(s.copy_s, 0);
    EXPECT_LT(s.wait_s + s.copy_s, 30);
  }
}

}  // namespace
}  // namespace tessera::executor
