// TcpCommunicator between real processes: fork() children that each join
// the world through the rendezvous file, run a sequence of collectives,
// splits and sends, and write what they got to a file the parent checks
// against hand-computed values; and a child killed with SIGKILL in the
// middle of the collectives, whose peers must fail (not hang) and exit.
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/comm/tcp_communicator.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

// A fresh folder for one test's files, removed with them at the end.
class TempDir {
 public:
  TempDir() : path_(::testing::TempDir() + "/tcp_process_XXXXXX") {
    if (::mkdtemp(path_.data()) == nullptr) path_.clear();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// The sequence every child runs; each line of output is one result. The
// expected lines are computed independently by ExpectedLines.
absl::Status Sequence(int rank, int n, Communicator& world, std::ostream& out) {
  // AllReduce sum, f32, 5 elements: x_i = 10 * rank + i.
  float sum[5];
  for (int i = 0; i < 5; ++i) sum[i] = 10.0f * rank + i;
  TESSERA_RETURN_IF_ERROR(world.AllReduce(Tensor{sum, DType::kF32, 5},
                                          Tensor{sum, DType::kF32, 5},
                                          ReduceOp::kSum));
  out << "allreduce_sum " << absl::StrJoin(sum, sum + 5, " ") << "\n";
  // AllReduce max, bf16, 3 elements: (rank * 7) % 5 - i.
  uint16_t max[3];
  for (int i = 0; i < 3; ++i) max[i] = FloatToBf16((rank * 7) % 5 - i);
  TESSERA_RETURN_IF_ERROR(world.AllReduce(Tensor{max, DType::kBF16, 3},
                                          Tensor{max, DType::kBF16, 3},
                                          ReduceOp::kMax));
  out << "allreduce_max";
  for (uint16_t m : max) out << " " << Bf16ToFloat(m);
  out << "\n";
  // AllGather of two i32 per rank: (rank, rank * rank).
  int32_t mine[2] = {rank, rank * rank};
  std::vector<int32_t> all(2 * n);
  TESSERA_RETURN_IF_ERROR(world.AllGather(
      Tensor{mine, DType::kI32, 2}, Tensor{all.data(), DType::kI32, 2 * n}));
  out << "allgather " << absl::StrJoin(all, " ") << "\n";
  // ReduceScatter sum, f32: element j of rank r's send is r + j.
  std::vector<float> send(2 * n);
  for (int j = 0; j < 2 * n; ++j) send[j] = rank + j;
  float block[2];
  TESSERA_RETURN_IF_ERROR(
      world.ReduceScatter(Tensor{send.data(), DType::kF32, 2 * n},
                          Tensor{block, DType::kF32, 2}, ReduceOp::kSum));
  out << "reducescatter " << block[0] << " " << block[1] << "\n";
  // Broadcast from the last rank.
  int32_t b[2] = {rank, -rank};
  TESSERA_RETURN_IF_ERROR(world.Broadcast(Tensor{b, DType::kI32, 2}, n - 1));
  out << "broadcast " << b[0] << " " << b[1] << "\n";
  // Split by parity; sum of world ranks in each half.
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> half,
                           world.Split(rank % 2, rank));
  int32_t ranks_sum = rank;
  TESSERA_RETURN_IF_ERROR(half->AllReduce(Tensor{&ranks_sum, DType::kI32, 1},
                                          Tensor{&ranks_sum, DType::kI32, 1},
                                          ReduceOp::kSum));
  out << "split " << half->rank() << " " << half->size() << " " << ranks_sum
      << "\n";
  // A ring: send to the next rank, receive from the previous.
  int32_t token = 1000 + rank, got = -1;
  TESSERA_RETURN_IF_ERROR(world.GroupStart());
  TESSERA_RETURN_IF_ERROR(
      world.Send(Tensor{&token, DType::kI32, 1}, (rank + 1) % n));
  TESSERA_RETURN_IF_ERROR(
      world.Recv(Tensor{&got, DType::kI32, 1}, (rank + n - 1) % n));
  TESSERA_RETURN_IF_ERROR(world.GroupEnd());
  out << "ring " << got << "\n";
  return world.Barrier();
}

std::string ExpectedLines(int rank, int n) {
  std::ostringstream out;
  out << "allreduce_sum";
  for (int i = 0; i < 5; ++i) {
    int total = 0;
    for (int r = 0; r < n; ++r) total += 10 * r + i;
    out << " " << total;
  }
  out << "\nallreduce_max";
  for (int i = 0; i < 3; ++i) {
    int best = -100;
    for (int r = 0; r < n; ++r) best = std::max(best, (r * 7) % 5 - i);
    out << " " << best;
  }
  out << "\nallgather";
  for (int r = 0; r < n; ++r) out << " " << r << " " << r * r;
  out << "\nreducescatter";
  for (int j = 2 * rank; j < 2 * rank + 2; ++j) {
    int total = 0;
    for (int r = 0; r < n; ++r) total += r + j;
    out << " " << total;
  }
  out << "\nbroadcast " << n - 1 << " " << -(n - 1) << "\n";
  int half_size = 0, half_sum = 0;
  for (int r = rank % 2; r < n; r += 2) {
    ++half_size;
    half_sum += r;
  }
  out << "split " << rank / 2 << " " << half_size << " " << half_sum << "\n";
  out << "ring " << 1000 + (rank + n - 1) % n << "\n";
  return out.str();
}

// The body of child `rank`: its exit code.
int RunChild(int rank, int n, const std::string& dir) {
  TcpWorldOptions options;
  options.rendezvous_file = dir + "/rendezvous";
  options.timeout = absl::Seconds(30);
  std::ofstream out(absl::StrCat(dir, "/rank", rank, ".txt"));
  absl::StatusOr<std::unique_ptr<Communicator>> world =
      ConnectTcpWorld(rank, n, options);
  if (!world.ok()) {
    out << "connect failed: " << world.status() << "\n";
    return 2;
  }
  absl::Status s = Sequence(rank, n, **world, out);
  if (!s.ok()) {
    out << "failed: " << s << "\n";
    return 3;
  }
  return 0;
}

// Waits for each pid until the deadline; kills what is left. Returns the
// wait statuses (-1: killed by this function after the deadline).
std::vector<int> WaitAll(const std::vector<pid_t>& pids,
                         Clock::time_point deadline) {
  std::vector<int> statuses(pids.size(), -1);
  std::vector<bool> done(pids.size(), false);
  size_t left = pids.size();
  while (left > 0 && Clock::now() < deadline) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        statuses[i] = status;
        done[i] = true;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (done[i]) continue;
    ::kill(pids[i], SIGKILL);
    ::waitpid(pids[i], nullptr, 0);
  }
  return statuses;
}

TEST(TcpProcessTest, ChildrenRunCollectivesSplitsAndSends) {
  for (int n : {2, 5}) {
    const TempDir temp;
    const std::string& dir = temp.path();
    ASSERT_FALSE(dir.empty());
    std::vector<pid_t> pids;
    for (int rank = 0; rank < n; ++rank) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) ::_exit(RunChild(rank, n, dir));
      pids.push_back(pid);
    }
    const std::vector<int> statuses =
        WaitAll(pids, Clock::now() + std::chrono::seconds(60));
    for (int rank = 0; rank < n; ++rank) {
      const std::string got =
          ReadFile(absl::StrCat(dir, "/rank", rank, ".txt"));
      EXPECT_TRUE(WIFEXITED(statuses[rank]) && WEXITSTATUS(statuses[rank]) == 0)
          << "n=" << n << " rank " << rank << " status " << statuses[rank]
          << ": " << got;
      EXPECT_EQ(got, ExpectedLines(rank, n)) << "n=" << n << " rank " << rank;
    }
    EXPECT_FALSE(Exists(dir + "/rendezvous"));  // rank 0 removed it
  }
}

// Child of the kill test: AllReduces of 4 MB until something fails. Writes
// "ready" after the first, and the failure's code and message at the end.
int RunLoopingChild(int rank, int n, const std::string& dir) {
  TcpWorldOptions options;
  options.rendezvous_file = dir + "/rendezvous";
  // Far longer than the test waits: the survivors must notice the death
  // through their connections, not through the timeout.
  options.timeout = absl::Seconds(120);
  absl::StatusOr<std::unique_ptr<Communicator>> world =
      ConnectTcpWorld(rank, n, options);
  if (!world.ok()) return 2;
  std::vector<float> buf(1 << 20, 1.0f);
  const Tensor t{buf.data(), DType::kF32, static_cast<int64_t>(buf.size())};
  const Clock::time_point start = Clock::now();
  absl::Status s;
  for (int step = 0; Clock::now() - start < std::chrono::seconds(60); ++step) {
    std::fill(buf.begin(), buf.end(), 1.0f);
    s = (*world)->AllReduce(t, t, ReduceOp::kSum);
    if (!s.ok()) break;
    if (buf[12345] != n) {
      s = absl::InternalError("wrong sum");
      break;
    }
    if (step == 0) std::ofstream(absl::StrCat(dir, "/ready", rank)) << "1";
  }
  // The failure reported, the world communicator is destroyed with a dead
  // peer: that must not hang either.
  world->reset();
  std::ofstream(absl::StrCat(dir, "/status", rank))
      << absl::StatusCodeToString(s.code()) << "\n"
      << s.message() << "\n";
  return s.code() == absl::StatusCode::kAborted ? 0 : 3;
}

TEST(TcpProcessTest, SurvivorsOfAKilledPeerFailPromptlyAndExit) {
  constexpr int kRanks = 4, kVictim = 2;
  const TempDir temp;
  const std::string& dir = temp.path();
  ASSERT_FALSE(dir.empty());
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kRanks; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(RunLoopingChild(rank, kRanks, dir));
    pids.push_back(pid);
  }
  // Once everyone is looping, kill one in the middle of its collectives.
  const Clock::time_point ready_deadline =
      Clock::now() + std::chrono::seconds(30);
  bool ready = false;
  while (!ready && Clock::now() < ready_deadline) {
    ready = true;
    for (int r = 0; r < kRanks; ++r) {
      ready = ready && Exists(absl::StrCat(dir, "/ready", r));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(ready);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_EQ(::kill(pids[kVictim], SIGKILL), 0);
  const Clock::time_point killed = Clock::now();
  const std::vector<int> statuses =
      WaitAll(pids, killed + std::chrono::seconds(20));
  const double exit_s =
      std::chrono::duration<double>(Clock::now() - killed).count();
  EXPECT_LT(exit_s, 10) << "survivors took too long to notice";
  EXPECT_TRUE(WIFSIGNALED(statuses[kVictim]) &&
              WTERMSIG(statuses[kVictim]) == SIGKILL);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    const std::string status = ReadFile(absl::StrCat(dir, "/status", r));
    // Exited normally (not by SIGPIPE, not killed by WaitAll), with ABORTED
    // naming the dead rank.
    EXPECT_TRUE(WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0)
        << "rank " << r << " status " << statuses[r] << ": " << status;
    EXPECT_EQ(status.rfind("ABORTED\n", 0), 0u)
        << "rank " << r << ": " << status;
    EXPECT_NE(status.find("world rank 2"), std::string::npos)
        << "rank " << r << ": " << status;
  }
}

}  // namespace
}  // namespace tessera::executor
