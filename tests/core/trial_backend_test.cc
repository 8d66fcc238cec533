#include "core/trial_backend.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TrialBackendTest, CpuAndCudaWithWhatTheirMeasurementsAreGoodFor) {
  ASSERT_EQ(TrialBackends().size(), 2u);
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
}

TEST(TrialBackendTest, AnUnknownNameIsAnErrorListingTheKnownOnes) {
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend("rocm");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(), "'rocm' is not cpu or cuda");
  EXPECT_FALSE(FindTrialBackend("").ok());
  EXPECT_FALSE(FindTrialBackend("CUDA").ok());
  EXPECT_EQ(TrialBackendNames(), "cpu or cuda");
}

}  // namespace
}  // namespace tessera
