#include "core/trial_backend.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TrialBackendTest, CpuAndCudaWithWhatTheirMeasurementsAreGoodFor) {
  ASSERT_EQ(TrialBackends().size(), 3u);
  absl::StatusOr<const TrialBackend*> cpu = FindTrialBackend("cpu");
  absl::StatusOr<const TrialBackend*> cuda = FindTrialBackend("cuda");
  ASSERT_TRUE(cpu.ok() && cuda.ok());
  // CPU ranks of one agent are threads over the in-process communicator;
  // their blocking collectives time waiting too; host memory is not the
  // model's device memory; trials run on the agents' cores.
  EXPECT_FALSE((*cpu)->process_per_rank);
  EXPECT_FALSE((*cpu)->times_comm_apart);
  EXPECT_FALSE((*cpu)->measures_model_memory);
  EXPECT_FALSE((*cpu)->one_agent_sweep);
  EXPECT_FALSE((*cpu)->runs_on_named_gpu);
  EXPECT_TRUE((*cuda)->process_per_rank);
  EXPECT_TRUE((*cuda)->times_comm_apart);
  EXPECT_TRUE((*cuda)->measures_model_memory);
  EXPECT_TRUE((*cuda)->one_agent_sweep);
  EXPECT_TRUE((*cuda)->runs_on_named_gpu);
  // Both are Tessera's executor, launched as tessera-trial, measuring the
  // tessera stack, on the hardware they are named for.
  for (const TrialBackend* b : {*cpu, *cuda}) {
    EXPECT_EQ(b->launcher, TrialLauncher::kTesseraTrial);
    EXPECT_EQ(b->trial_stack, "tessera");
    EXPECT_FALSE(b->any_device);
  }
}

TEST(TrialBackendTest, CommandRunsTheStudysOwnStackOnAnyDevice) {
  absl::StatusOr<const TrialBackend*> command = FindTrialBackend("command");
  ASSERT_TRUE(command.ok());
  EXPECT_EQ((*command)->launcher, TrialLauncher::kCommand);
  EXPECT_EQ((*command)->trial_stack, "");
  EXPECT_TRUE((*command)->any_device);
  // A framework's own step time is all it reports: no split, and its peak
  // memory is not the cost model's count.
  EXPECT_FALSE((*command)->times_comm_apart);
  EXPECT_FALSE((*command)->measures_comm);
  EXPECT_TRUE((*FindTrialBackend("cpu"))->measures_comm);
  EXPECT_FALSE((*command)->measures_model_memory);
}

// What code asks instead of comparing names: what a rank runs on, whether
// the study's command runs. A name that is no backend is neither.
TEST(TrialBackendTest, RanksRunOnTheDeviceOfTheirRow) {
  EXPECT_EQ((*FindTrialBackend("cpu"))->ranks_on, RankDevice::kCpuCore);
  EXPECT_EQ((*FindTrialBackend("cuda"))->ranks_on, RankDevice::kGpu);
  EXPECT_EQ((*FindTrialBackend("command"))->ranks_on,
            RankDevice::kHostsDevice);
  EXPECT_TRUE(BackendRanksOn("cpu", RankDevice::kCpuCore));
  EXPECT_FALSE(BackendRanksOn("cuda", RankDevice::kCpuCore));
  EXPECT_TRUE(BackendRanksOn("cuda", RankDevice::kGpu));
  EXPECT_FALSE(BackendRanksOn("command", RankDevice::kGpu));
  EXPECT_FALSE(BackendRanksOn("rocm", RankDevice::kGpu));
  EXPECT_FALSE(BackendRanksOn("", RankDevice::kCpuCore));
  EXPECT_TRUE(RunsCommand("command"));
  EXPECT_FALSE(RunsCommand("cpu"));
  EXPECT_FALSE(RunsCommand("cuda"));
  EXPECT_FALSE(RunsCommand("Command"));
}

TEST(TrialBackendTest, AnUnknownNameIsAnErrorListingTheKnownOnes) {
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend("rocm");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(), "'rocm' is not cpu, cuda or command");
  EXPECT_FALSE(FindTrialBackend("").ok());
  EXPECT_FALSE(FindTrialBackend("CUDA").ok());
  EXPECT_EQ(TrialBackendNames(), "cpu, cuda or command");
}

}  // namespace
}  // namespace tessera
