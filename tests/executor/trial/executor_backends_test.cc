// The executor's backend table (executor/tessera_trial/executor_backends.h): trials
// and collective sweeps dispatched by name, a name it does not know and a
// backend this build lacks told apart.
#include "executor/tessera_trial/executor_backends.h"

#include <string>

#include "executor/tessera_trial/run_collective_probe.h"
#include "executor/tessera_trial/trial_runner.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TEST(ExecutorBackendsTest, EveryTrialBackendOfTheExecutorHasARow) {
  // core/trial_backend.h's executor backends, in its order.
  ASSERT_EQ(ExecutorBackends().size(), 2u);
  EXPECT_STREQ(ExecutorBackends()[0].name, "cpu");
  EXPECT_STREQ(ExecutorBackends()[1].name, "cuda");
  absl::StatusOr<const ExecutorBackend*> cpu =
      FindExecutorBackend("cpu", ExecutorCapability::kTrial);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_NE((*cpu)->run_trial, nullptr);
  EXPECT_NE((*cpu)->sweep_collectives, nullptr);
}

TEST(ExecutorBackendsTest, UnknownNamesAndMissingToolkitsSayWhich) {
  absl::StatusOr<const ExecutorBackend*> gpu =
      FindExecutorBackend("gpu", ExecutorCapability::kTrial);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(), "'gpu' is not cpu or cuda");
  const ExecutorBackend& cuda = ExecutorBackends()[1];
  absl::StatusOr<const ExecutorBackend*> found =
      FindExecutorBackend("cuda", ExecutorCapability::kCollectiveSweep);
  if (cuda.sweep_collectives == nullptr) {  // built without CUDA
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.status().message(), "'cuda' is not part of this build");
  } else {
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(*found, &cuda);
  }
}

// tessera-trial --probe dispatches through the table: the CPU executor
// probes its host; CUDA has no probes of its own in any build.
TEST(ExecutorBackendsTest, ProbesAreARowsCapability) {
  absl::StatusOr<const ExecutorBackend*> cpu =
      FindExecutorBackend("cpu", ExecutorCapability::kProbes);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::vector<ProbeResult> probes = (*cpu)->run_probes(1);
  EXPECT_FALSE(probes.empty());
  absl::StatusOr<const ExecutorBackend*> cuda =
      FindExecutorBackend("cuda", ExecutorCapability::kProbes);
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().message(), "'cuda' probes are not part of this build");
  EXPECT_EQ(FindExecutorBackend("gpu", ExecutorCapability::kProbes)
                .status()
                .message(),
            "'gpu' is not cpu or cuda");
}

TEST(ExecutorBackendsTest, RunTrialAndTheProbeNameABadBackend) {
  TrialConfig c;  // a valid tiny trial but for its backend
  c.model = *ModelPreset("tiny");
  c.layout = *ParseLayout("micro_batch=1");
  c.ranks = 1;
  c.global_batch = 8;
  c.seq_len = 32;
  c.backend = "gpu";
  const TrialResult r = RunTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("backend: 'gpu' is not cpu or cuda"),
            std::string::npos)
      << r.reason;
  CollectiveProbeConfig p;
  p.backend = "gpu";
  p.rendezvous_file = "/nonexistent/rendezvous";
  const nlohmann::json out = RunCollectiveProbe(p);
  EXPECT_EQ(out["error"], "--backend: 'gpu' is not cpu or cuda");
  EXPECT_TRUE(out["collectives"].empty());
}

}  // namespace
}  // namespace tessera::executor
