// TcpCommunicator's own failure behaviour (failure_test.cc has what every
// communicator shares): a missing participant or sender times out naming
// op, group and rank in the TCP wording, an abort reaches the other
// processes and their splits as "world rank <r> aborted: <cause>", a peer
// that closes fails what still needs it, and the rendezvous rejects bad
// arguments and disagreeing ranks, survives a stale file and binds to a
// wildcard address.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/status_macros.h"
#include "executor/comm/internal/tcp_socket.h"
#include "executor/comm/tcp_communicator.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::Clock;
using testing::Contains;
using testing::SecondsSince;

TEST(TcpFailureTest, MissingParticipantTimesOutNamingOpGroupAndRank) {
  absl::Notification done;
  const Clock::time_point start = Clock::now();
  std::vector<double> waited_s(3);
  const std::vector<absl::Status> statuses = testing::RunRaw(
      testing::CommKind::kTcp, 3,
      [&](int rank, Communicator& comm) -> absl::Status {
        if (rank == 2) {  // alive, but skips the collective
          done.WaitForNotificationWithTimeout(absl::Seconds(20));
          return absl::OkStatus();
        }
        const Clock::time_point begin = Clock::now();
        float x[5] = {};
        absl::Status s =
            comm.AllReduce(Tensor{x, DType::kF32, 5}, Tensor{x, DType::kF32, 5},
                           ReduceOp::kSum);
        waited_s[rank] = SecondsSince(begin);
        if (rank == 0) {
          // Rank 1 is still waiting when rank 0 gives up: let it finish.
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          done.Notify();
        }
        return s;
      },
      absl::Seconds(1));
  for (int r : {0, 1}) {
    const absl::Status& s = statuses[r];
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_TRUE(Contains(s, absl::StrCat("AllReduce #0 (f32 x 5, sum) on group "
                                         "world: rank ",
                                         r, " waited 1s but rank 2")))
        << s;
    EXPECT_TRUE(Contains(s, "did not arrive")) << s;
    EXPECT_GE(waited_s[r], 1.0);
    EXPECT_LT(waited_s[r], 10);
  }
  EXPECT_LT(SecondsSince(start), 20);
}

TEST(TcpFailureTest, RecvTimesOutNamingThePeer) {
  absl::Notification done;
  const std::vector<absl::Status> statuses = testing::RunRaw(
      testing::CommKind::kTcp, 2,
      [&](int rank, Communicator& comm) -> absl::Status {
        if (rank == 1) {  // alive, but sends nothing
          done.WaitForNotificationWithTimeout(absl::Seconds(20));
          return absl::OkStatus();
        }
        float x = 0;
        absl::Status s = comm.Recv(Tensor{&x, DType::kF32, 1}, 1);
        done.Notify();
        return s;
      },
      absl::Milliseconds(800));
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded)
      << statuses[0];
  EXPECT_TRUE(Contains(statuses[0],
                       "Recv of f32 x 1 from rank 1 at rank 0 on group world: "
                       "no message within 800ms"))
      << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
}

TEST(TcpFailureTest, AbortReachesBlockedRanksInOtherWorldsAndSplits) {
  std::vector<double> waited_s(4);
  const Clock::time_point start = Clock::now();
  const std::vector<absl::Status> statuses = testing::RunRaw(
      testing::CommKind::kTcp, 4,
      [&](int rank, Communicator& comm) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> pair,
                                 comm.Split(rank / 2, rank));
        float x = 0;
        const Tensor t{&x, DType::kF32, 1};
        if (rank == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          auto& tcp = static_cast<TcpCommunicator&>(comm);
          tcp.Abort(absl::ResourceExhaustedError("rank 0 ran out of memory"));
          // Every later call here fails too, with the cause as it was.
          for (absl::Status s : {comm.Send(t, 1), comm.Recv(t, 1),
                                 comm.Barrier(), comm.Split(0, 0).status(),
                                 pair->Broadcast(t, 0), tcp.abort_status()}) {
            if (s.code() != absl::StatusCode::kAborted ||
                s.message() != "rank 0 ran out of memory") {
              return absl::InternalError(
                  absl::StrCat("after abort: ", s.ToString()));
            }
          }
          tcp.Abort(absl::InternalError("later"));  // the first cause stays
          return tcp.abort_status();
        }
        const Clock::time_point begin = Clock::now();
        // Rank 1 waits in a Recv from rank 0; ranks 2 and 3 in their pair's
        // barrier loop, which rank 0 is not even part of.
        absl::Status s;
        if (rank == 1) {
          s = comm.Recv(t, 0);
        } else {
          do {
            s = pair->Barrier();
          } while (s.ok());
        }
        waited_s[rank] = SecondsSince(begin);
        return s;
      },
      absl::Seconds(60));
  EXPECT_EQ(statuses[0].message(), "rank 0 ran out of memory");
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_EQ(statuses[r].message(),
              "world rank 0 aborted: rank 0 ran out of memory");
    EXPECT_LT(waited_s[r], 10) << "rank " << r;
  }
  EXPECT_LT(SecondsSince(start), 30);
}

TEST(TcpFailureTest, APeerThatClosesFailsWhatStillNeedsItPromptly) {
  const Clock::time_point start = Clock::now();
  std::latch survivors_done(2);
  const std::vector<absl::Status> statuses = testing::RunRaw(
      testing::CommKind::kTcp, 3,
      [&](int rank, Communicator& comm) -> absl::Status {
        float x = 1;
        absl::Status s = comm.Send(Tensor{&x, DType::kF32, 1}, (rank + 1) % 3);
        if (rank == 2) return s;  // and closes its communicator
        // What rank 2 sent before closing still arrives...
        if (s.ok() && rank == 0) s = comm.Recv(Tensor{&x, DType::kF32, 1}, 2);
        // ...but a collective that needs it fails, naming it (the two
        // survivors stay until both are done: they need each other too).
        if (s.ok()) {
          s = comm.AllReduce(Tensor{&x, DType::kF32, 1},
                             Tensor{&x, DType::kF32, 1}, ReduceOp::kSum);
        }
        survivors_done.arrive_and_wait();
        return s;
      },
      absl::Seconds(60));
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  for (int r : {0, 1}) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_TRUE(Contains(statuses[r],
                         "world rank 2 has closed its "
                         "communicator"))
        << statuses[r];
  }
  EXPECT_LT(SecondsSince(start), 10);
}

TEST(TcpFailureTest, ConnectRejectsBadArgumentsNamingTheField) {
  TcpWorldOptions options;
  options.rendezvous_file = testing::UniqueRendezvousFile();
  EXPECT_TRUE(
      Contains(ConnectTcpWorld(0, 0, options).status(), "world_size 0"));
  EXPECT_TRUE(Contains(ConnectTcpWorld(2, 2, options).status(), "rank 2"));
  TcpWorldOptions no_file;
  EXPECT_TRUE(Contains(ConnectTcpWorld(0, 2, no_file).status(),
                       "options.rendezvous_file"));
  TcpWorldOptions zero = options;
  zero.timeout = absl::ZeroDuration();
  EXPECT_TRUE(
      Contains(ConnectTcpWorld(0, 2, zero).status(), "options.timeout"));
  TcpWorldOptions wildcard = options;
  wildcard.bind_host = "0.0.0.0";
  EXPECT_TRUE(Contains(ConnectTcpWorld(0, 2, wildcard).status(),
                       "options.advertise_host"));
  TcpWorldOptions port = options;
  port.port = 70000;
  EXPECT_TRUE(Contains(ConnectTcpWorld(0, 2, port).status(), "options.port"));
  for (const absl::Status& s : {ConnectTcpWorld(0, 0, options).status(),
                                ConnectTcpWorld(0, 2, wildcard).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  // A world of one needs no file and no peer.
  absl::StatusOr<std::unique_ptr<Communicator>> alone =
      ConnectTcpWorld(0, 1, no_file);
  ASSERT_TRUE(alone.ok()) << alone.status();
  float x = 3;
  EXPECT_TRUE((*alone)
                  ->AllReduce(Tensor{&x, DType::kF32, 1},
                              Tensor{&x, DType::kF32, 1}, ReduceOp::kSum)
                  .ok());
  EXPECT_EQ(x, 3);
}

TEST(TcpFailureTest, RanksThatDisagreeOnTheWorldSizeFailBoth) {
  TcpWorldOptions options;
  options.rendezvous_file = testing::UniqueRendezvousFile();
  options.timeout = absl::Seconds(20);
  absl::Status status1;
  std::thread other([&] { status1 = ConnectTcpWorld(1, 3, options).status(); });
  const absl::Status status0 = ConnectTcpWorld(0, 2, options).status();
  other.join();
  for (const absl::Status& s : {status0, status1}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(Contains(s, "rank 1 has world_size 3 but rank 0 has 2")) << s;
  }
  ::unlink(options.rendezvous_file.c_str());  // rank 0 left it
}

TEST(TcpFailureTest, RendezvousWithoutRankZeroTimesOut) {
  TcpWorldOptions options;
  options.rendezvous_file = testing::UniqueRendezvousFile();
  options.timeout = absl::Milliseconds(500);
  const Clock::time_point start = Clock::now();
  const absl::Status s = ConnectTcpWorld(1, 2, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE(Contains(s, options.rendezvous_file)) << s;
  EXPECT_GE(SecondsSince(start), 0.5);
  EXPECT_LT(SecondsSince(start), 5);
}

TEST(TcpFailureTest, StaleRendezvousFileIsRetriedAndRemovedAfterwards) {
  // A file left by an earlier world points at a port nobody listens on;
  // rank 1 starts first and must keep re-reading it until rank 0 replaces
  // it, and rank 0 removes it once everyone has connected.
  TcpWorldOptions options;
  options.rendezvous_file = testing::UniqueRendezvousFile();
  options.timeout = absl::Seconds(20);
  int dead_port = 0;
  {
    absl::StatusOr<tcp_internal::Socket> probe =
        tcp_internal::Listen("127.0.0.1", 0);
    ASSERT_TRUE(probe.ok());
    dead_port = *tcp_internal::LocalPort(*probe);
  }  // closed: connections to it are refused
  std::ofstream(options.rendezvous_file) << "127.0.0.1:" << dead_port << "\n";
  absl::StatusOr<std::unique_ptr<Communicator>> world1;
  std::thread rank1([&] { world1 = ConnectTcpWorld(1, 2, options); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  absl::StatusOr<std::unique_ptr<Communicator>> world0 =
      ConnectTcpWorld(0, 2, options);
  rank1.join();
  ASSERT_TRUE(world0.ok()) << world0.status();
  ASSERT_TRUE(world1.ok()) << world1.status();
  EXPECT_NE(::access(options.rendezvous_file.c_str(), F_OK), 0);
  int32_t a = 5, b = 7;
  std::thread t([&] {
    EXPECT_TRUE((*world1)
                    ->AllReduce(Tensor{&b, DType::kI32, 1},
                                Tensor{&b, DType::kI32, 1}, ReduceOp::kSum)
                    .ok());
  });
  EXPECT_TRUE((*world0)
                  ->AllReduce(Tensor{&a, DType::kI32, 1},
                              Tensor{&a, DType::kI32, 1}, ReduceOp::kSum)
                  .ok());
  t.join();
  EXPECT_EQ(a, 12);
  EXPECT_EQ(b, 12);
}

TEST(TcpFailureTest, WildcardBindWithAnAdvertisedHostAndAFixedPort) {
  // Every rank listens on all interfaces and tells the others 127.0.0.1;
  // rank 0 on a port chosen here (free a moment ago).
  TcpWorldOptions options;
  options.rendezvous_file = testing::UniqueRendezvousFile();
  options.bind_host = "0.0.0.0";
  options.advertise_host = "127.0.0.1";
  options.timeout = absl::Seconds(20);
  {
    absl::StatusOr<tcp_internal::Socket> probe =
        tcp_internal::Listen("127.0.0.1", 0);
    ASSERT_TRUE(probe.ok());
    options.port = *tcp_internal::LocalPort(*probe);
  }
  std::vector<absl::Status> statuses(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      if (r == 1) {  // rank 1 reads the file before it is gone
        std::string content;
        for (int tries = 0; content.empty() && tries < 2000; ++tries) {
          std::ifstream in(options.rendezvous_file);
          std::getline(in, content);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (content != absl::StrCat("127.0.0.1:", options.port)) {
          statuses[r] = absl::InternalError(content);
        }
      }
      absl::StatusOr<std::unique_ptr<Communicator>> world =
          ConnectTcpWorld(r, 3, options);
      if (!world.ok()) {
        statuses[r] = world.status();
        return;
      }
      int32_t x = r + 1;
      absl::Status s =
          (*world)->AllReduce(Tensor{&x, DType::kI32, 1},
                              Tensor{&x, DType::kI32, 1}, ReduceOp::kSum);
      if (s.ok() && x != 6) s = absl::InternalError(absl::StrCat("sum ", x));
      if (statuses[r].ok()) statuses[r] = s;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace tessera::executor
