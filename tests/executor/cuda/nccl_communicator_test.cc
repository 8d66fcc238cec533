// The NCCL communicator on GPUs (skipped without one): a one-rank world on
// one GPU (every call, splits, timings, the async calls, the rendezvous file
// removed), and, where two GPUs are visible, a world of two processes (this
// test binary started twice as children) with hand-checked collectives,
// point-to-point messages in both directions without a group (the pattern
// blocking sends would deadlock on) and a split. NCCL runs one rank per GPU,
// so two processes need two devices.
#include "executor/cuda/nccl_communicator.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "executor/cuda/cuda_backend.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

extern char** environ;

namespace tessera::executor {
namespace {

using cuda_test::Download;
using cuda_test::Upload;

std::string TempPath(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "_" + std::to_string(::getpid())))
      .string();
}

TEST(NcclCommunicatorTest, OneRankWorld) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = *CudaBackend::Create({.device = 0});
  const std::string file = TempPath("tessera_nccl_one");
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> world =
      ConnectNcclWorld(0, 1, 0, gpu->stream(), {.rendezvous_file = file});
  ASSERT_TRUE(world.ok()) << world.status();
  NcclCommunicator& w = **world;
  EXPECT_EQ(w.rank(), 0);
  EXPECT_EQ(w.size(), 1);
  EXPECT_FALSE(std::filesystem::exists(file));  // rank 0 removed it

  DeviceBuffer x = Upload(*gpu, {1, 2, 3, 4}, DType::kF32);
  gpu->Scale(x.view(), 4, 2.0f);  // ordered before the collective
  ASSERT_TRUE(w.AllReduce(x.view(), x.view(), ReduceOp::kSum).ok());
  EXPECT_EQ(Download(*gpu, x.view()), (std::vector<float>{2, 4, 6, 8}));
  DeviceBuffer y = std::move(*gpu->Allocate(4, DType::kF32, "y"));
  ASSERT_TRUE(w.AllGather(x.view(), y.view()).ok());
  ASSERT_TRUE(w.ReduceScatter(y.view(), x.view(), ReduceOp::kMax).ok());
  ASSERT_TRUE(w.Broadcast(x.view(), 0).ok());
  EXPECT_EQ(Download(*gpu, x.view()), (std::vector<float>{2, 4, 6, 8}));

  // A message to itself goes only inside a group.
  DeviceBuffer in = std::move(*gpu->Allocate(4, DType::kF32, "in"));
  ASSERT_TRUE(w.GroupStart().ok());
  ASSERT_TRUE(w.Send(x.view(), 0).ok());
  ASSERT_TRUE(w.Recv(in.view(), 0).ok());
  ASSERT_TRUE(w.GroupEnd().ok());
  EXPECT_EQ(Download(*gpu, in.view()), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(w.Send(x.view(), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.GroupEnd().code(), absl::StatusCode::kFailedPrecondition);

  // Async: the timings refuse while a started collective is not waited for.
  absl::StatusOr<PendingComm> pending = w.StartAllGather(x.view(), y.view());
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_EQ(w.TakeTimings().status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(w.Wait(*pending).ok());
  absl::StatusOr<CommTimings> t = w.TakeTimings();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ops, 6);  // all-reduce, -gather, reduce-scatter, broadcast,
                         // the group, the started all-gather
  EXPECT_GT(t->comm_s, 0);
  EXPECT_GE(t->exposed_s, 0);

  absl::StatusOr<std::unique_ptr<Communicator>> split = w.Split(7, 0);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ((*split)->size(), 1);
  EXPECT_TRUE((*split)->AllReduce(x.view(), x.view(), ReduceOp::kSum).ok());
  EXPECT_TRUE(w.Barrier().ok());
  EXPECT_EQ(w.Split(-1, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- Two processes -------------------------------------------------------

constexpr char kChildRank[] = "TESSERA_NCCL_TEST_CHILD_RANK";
constexpr char kChildFile[] = "TESSERA_NCCL_TEST_CHILD_FILE";

TEST(NcclCommunicatorTest, TwoProcessesOnTwoGpus) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) {
    GTEST_SKIP() << "NCCL runs one rank per GPU; " << count << " visible";
  }
  const std::string file = TempPath("tessera_nccl_two");
  std::vector<pid_t> children;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    env_strings.push_back(std::string(kChildRank) + "=" + std::to_string(rank));
    env_strings.push_back(std::string(kChildFile) + "=" + file);
    std::vector<char*> env;
    for (std::string& s : env_strings) env.push_back(s.data());
    env.push_back(nullptr);
    std::string self = "/proc/self/exe";
    std::string filter = "--gtest_filter=NcclChildTest.*";
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(
        posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data()),
        0);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << pid << " status " << status;
  }
}

// Runs only as a child of TwoProcessesOnTwoGpus.
TEST(NcclChildTest, Rank) {
  const char* rank_text = std::getenv(kChildRank);
  const char* file = std::getenv(kChildFile);
  if (rank_text == nullptr || file == nullptr) {
    GTEST_SKIP() << "runs as a child of NcclCommunicatorTest."
                    "TwoProcessesOnTwoGpus";
  }
  const int rank = std::atoi(rank_text);
  auto gpu = *CudaBackend::Create({.device = rank});
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> world =
      ConnectNcclWorld(rank, 2, rank, gpu->stream(), {.rendezvous_file = file});
  ASSERT_TRUE(world.ok()) << world.status();
  NcclCommunicator& w = **world;
  const int other = 1 - rank;

  // f32 sum and bf16 max.
  DeviceBuffer x =
      Upload(*gpu, {float(rank + 1), float(10 * rank)}, DType::kF32);
  ASSERT_TRUE(w.AllReduce(x.view(), x.view(), ReduceOp::kSum).ok());
  EXPECT_EQ(Download(*gpu, x.view()), (std::vector<float>{3, 10}));
  DeviceBuffer b = Upload(*gpu, {float(rank), float(-rank)}, DType::kBF16);
  ASSERT_TRUE(w.AllReduce(b.view(), b.view(), ReduceOp::kMax).ok());
  EXPECT_EQ(Download(*gpu, b.view()), (std::vector<float>{1, 0}));
  // AllGather and ReduceScatter.
  DeviceBuffer mine = Upload(*gpu, {float(rank), float(rank + 5)}, DType::kF32);
  DeviceBuffer all = std::move(*gpu->Allocate(4, DType::kF32, "all"));
  ASSERT_TRUE(w.AllGather(mine.view(), all.view()).ok());
  EXPECT_EQ(Download(*gpu, all.view()), (std::vector<float>{0, 5, 1, 6}));
  ASSERT_TRUE(w.ReduceScatter(all.view(), mine.view(), ReduceOp::kSum).ok());
  EXPECT_EQ(Download(*gpu, mine.view()), rank == 0
                                             ? (std::vector<float>{0, 10})
                                             : (std::vector<float>{2, 12}));
  // Broadcast from rank 1.
  DeviceBuffer root = Upload(*gpu, {float(rank * 7)}, DType::kF32);
  ASSERT_TRUE(w.Broadcast(root.view(), 1).ok());
  EXPECT_EQ(Download(*gpu, root.view()), (std::vector<float>{7}));

  // Both send first, then both receive, outside a group, with messages far
  // larger than NCCL's buffers: blocking sends on one stream would deadlock.
  const int64_t n = int64_t{64} << 20;  // 256 MiB of f32
  DeviceBuffer out = std::move(*gpu->Allocate(n, DType::kF32, "out"));
  gpu->Fill(out.view(), n, float(rank + 1));
  DeviceBuffer in = std::move(*gpu->Allocate(n, DType::kF32, "in"));
  ASSERT_TRUE(w.Send(out.view(), other).ok());
  ASSERT_TRUE(w.Recv(in.view(), other).ok());
  EXPECT_DOUBLE_EQ(gpu->SumSquares(in.view(), n),
                   double(n) * (other + 1) * (other + 1));

  // A split into one-rank groups.
  absl::StatusOr<std::unique_ptr<Communicator>> alone = w.Split(rank, 0);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*alone)->size(), 1);
  absl::StatusOr<CommTimings> t = w.TakeTimings();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->ops, 0);
  EXPECT_GT(t->comm_s, 0);
  EXPECT_TRUE(w.Barrier().ok());
}

}  // namespace
}  // namespace tessera::executor
