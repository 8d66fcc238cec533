// The Communicator implementations that the shared communicator tests run
// against, and how a test runs a function on n ranks of a fresh world of
// each: the in-process world (RunRanks: ranks are threads sharing memory) or
// a TCP world over loopback (RunTcpRanks: every rank a thread with its own
// sockets, reader threads and rendezvous, as separate processes would be).
// A suite parameterized by CommKind runs every test once per implementation,
// named after it ("SendRecvTest.Pipeline/InProcess", ".../Tcp").
//
//   class SendRecvTest : public ::testing::TestWithParam<CommKind> {};
//   TEST_P(SendRecvTest, Ring) {
//     RunAllOk(GetParam(), 4, [](int rank, Communicator& comm) {
//       return comm.Barrier();
//     });
//   }
//   INSTANTIATE_TEST_SUITE_P(, SendRecvTest, ::testing::ValuesIn(kCommKinds),
//                            CommKindParamName);
//   // Suites over (CommKind, group size):
//   INSTANTIATE_TEST_SUITE_P(GroupSizes, RingTest, EveryKindAndGroupSize(),
//                            SizeAndKindParamName);
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "executor/comm/communicator.h"
#include "executor/comm/inproc_communicator.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"

namespace tessera::executor::testing {

enum class CommKind { kInProcess, kTcp };
inline constexpr CommKind kCommKinds[] = {CommKind::kInProcess, CommKind::kTcp};

// "InProcess" or "Tcp": how test names and messages call the implementation.
absl::string_view CommKindName(CommKind kind);
void PrintTo(CommKind kind, std::ostream* os);

// The (CommKind, group size) parameters of the suites that sweep the group
// size: every implementation with groups of 1..8 ranks.
inline auto EveryKindAndGroupSize() {
  return ::testing::Combine(::testing::ValuesIn(kCommKinds),
                            ::testing::Range(1, 9));
}

// Test name suffixes: "InProcess" for a CommKind parameter, "n3_Tcp" for a
// (CommKind, group size) one.
std::string CommKindParamName(const ::testing::TestParamInfo<CommKind>& info);
std::string SizeAndKindParamName(
    const ::testing::TestParamInfo<std::tuple<CommKind, int>>& info);

// How long a rank of a test world waits for its peers before
// DEADLINE_EXCEEDED: what turns a hang into a failure.
inline constexpr absl::Duration kTestTimeout = absl::Seconds(30);

// Runs fn on n ranks of a fresh world of `kind` with RunRanks or
// RunTcpRanks: the first rank to fail aborts the world. The n statuses by
// rank (one INVALID_ARGUMENT for n < 1).
std::vector<absl::Status> RunRanksOf(CommKind kind, int n,
                                     const RankFunction& fn,
                                     absl::Duration timeout = kTestTimeout);

// RunRanksOf, expecting every rank to succeed.
void RunAllOk(CommKind kind, int n, const RankFunction& fn,
              absl::Duration timeout = kTestTimeout);

// Runs fn on n ranks of a fresh world of `kind`, one thread each, and
// aborts nothing when a rank fails: the communicators' own behaviour. TCP:
// each rank connects by itself (a rank that cannot returns that error) and
// closes its world communicator when fn returns.
std::vector<absl::Status> RunRaw(CommKind kind, int n, const RankFunction& fn,
                                 absl::Duration timeout = kTestTimeout);

// The in-process RunRaw, with the world at hand (for InProcessWorld::Abort).
std::vector<absl::Status> RunInProcessRaw(
    int n, const std::function<absl::Status(int, InProcessWorld&)>& fn,
    absl::Duration timeout = kTestTimeout);

// A rendezvous file path under the test's temporary folder that no other
// world of this process uses.
std::string UniqueRendezvousFile();

// The rank in the world and the group's name ("world",
// "world/split#0:color=1") of an InProcessCommunicator or a TcpCommunicator
// (both offer them outside the Communicator contract).
int WorldRank(const Communicator& comm);
std::string GroupName(const Communicator& comm);

// The message every other rank's operations return once world rank `rank`
// aborted the world with `cause`: the cause itself in process (one world,
// one status), "world rank <rank> aborted: <cause>" over TCP (the notice
// names its sender).
std::string PeerAbortMessage(CommKind kind, int rank, absl::string_view cause);

}  // namespace tessera::executor::testing
