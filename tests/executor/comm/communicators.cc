#include "tests/executor/comm/communicators.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "executor/comm/internal/rank_threads.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/tcp_run_ranks.h"

namespace tessera::executor::testing {

absl::string_view CommKindName(CommKind kind) {
  return kind == CommKind::kInProcess ? "InProcess" : "Tcp";
}

void PrintTo(CommKind kind, std::ostream* os) { *os << CommKindName(kind); }

std::string CommKindParamName(const ::testing::TestParamInfo<CommKind>& info) {
  return std::string(CommKindName(info.param));
}

std::string SizeAndKindParamName(
    const ::testing::TestParamInfo<std::tuple<CommKind, int>>& info) {
  return absl::StrCat("n", std::get<1>(info.param), "_",
                      CommKindName(std::get<0>(info.param)));
}

std::vector<absl::Status> RunRanksOf(CommKind kind, int n,
                                     const RankFunction& fn,
                                     absl::Duration timeout) {
  if (kind == CommKind::kInProcess) {
    InProcessOptions options;
    options.timeout = timeout;
    return RunRanks(n, fn, options);
  }
  TcpWorldOptions options;
  options.timeout = timeout;
  return RunTcpRanks(n, fn, options);
}

void RunAllOk(CommKind kind, int n, const RankFunction& fn,
              absl::Duration timeout) {
  const std::vector<absl::Status> statuses = RunRanksOf(kind, n, fn, timeout);
  ASSERT_EQ(statuses.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
  }
}

std::vector<absl::Status> RunInProcessRaw(
    int n, const std::function<absl::Status(int, InProcessWorld&)>& fn,
    absl::Duration timeout) {
  InProcessOptions options;
  options.timeout = timeout;
  absl::StatusOr<std::unique_ptr<InProcessWorld>> world =
      InProcessWorld::Create(n, options);
  if (!world.ok()) return {world.status()};
  return comm_internal::RunOnThreads(n, [&](int r) { return fn(r, **world); });
}

std::vector<absl::Status> RunRaw(CommKind kind, int n, const RankFunction& fn,
                                 absl::Duration timeout) {
  if (kind == CommKind::kInProcess) {
    return RunInProcessRaw(
        n,
        [&](int r, InProcessWorld& world) {
          return fn(r, world.communicator(r));
        },
        timeout);
  }
  TcpWorldOptions options;
  options.rendezvous_file = UniqueRendezvousFile();
  options.timeout = timeout;
  return comm_internal::RunOnThreads(n, [&](int r) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Communicator>> world =
        ConnectTcpWorld(r, n, options);
    return world.ok() ? fn(r, **world) : world.status();
  });
}

std::string UniqueRendezvousFile() {
  static std::atomic<int> counter{0};
  return absl::StrCat(::testing::TempDir(), "/comm_rendezvous_", ::getpid(),
                      "_", counter++);
}

int WorldRank(const Communicator& comm) {
  if (const auto* inproc = dynamic_cast<const InProcessCommunicator*>(&comm)) {
    return inproc->world_rank();
  }
  return dynamic_cast<const TcpCommunicator&>(comm).world_rank();
}

std::string GroupName(const Communicator& comm) {
  if (const auto* inproc = dynamic_cast<const InProcessCommunicator*>(&comm)) {
    return inproc->group_name();
  }
  return dynamic_cast<const TcpCommunicator&>(comm).group_name();
}

std::string PeerAbortMessage(CommKind kind, int rank, absl::string_view cause) {
  if (kind == CommKind::kInProcess) return std::string(cause);
  return absl::StrCat("world rank ", rank, " aborted: ", cause);
}

}  // namespace tessera::executor::testing
