// The command backend end to end: the real tessera-planner and two
// tessera-agent daemons started with --backend command run the PyTorch
// example trainer (deploy/examples/llama_train.py, Debian's torch on CPU
// with gloo) under torchrun as the study's own training command. Checks a
// study of several layouts on two agents (results stored, calibration
// refit, measured recommendation), a two-node gang trial meeting through
// torchrun's static rendezvous relayed by the planner, a trial that runs out
// of its memory limit (oom), and one that hangs (timeout, its processes
// gone). Skips, saying why, where /usr/bin/python3 has no torch.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/service/e2e/system_fixture.h"

namespace tessera::e2e {
namespace {

// torch 1.13's torchrun (Debian): underscore flags; `-r 1 -t 1` because its
// default --redirects/--tee "0" fail under Python 3.11.
std::string Command(const std::string& extra = "") {
  return absl::StrCat(
      "/usr/bin/torchrun --nnodes {nodes} --nproc_per_node {gpus_per_node} "
      "--node_rank {node_rank} --master_addr {master_addr} --master_port "
      "{master_port} -r 1 -t 1 ",
      TESSERA_EXAMPLES_DIR,
      "/llama_train.py --layers {layers} --hidden {hidden} --heads {heads} "
      "--kv-heads {kv_heads} --ffn-hidden {ffn_hidden} --vocab {vocab} "
      "--global-batch {global_batch} --seq-len {seq_len} --micro-batch "
      "{micro_batch} --grad-accum {grad_accum} --dp {dp} --zero {zero} "
      "--recompute {recompute} --warmup-steps {warmup_steps} --steps {steps} "
      "--seed {seed} --memory-limit-bytes {memory_limit_bytes}",
      extra);
}

// A tiny Llama on the agents' own CPUs, trained by the example's stack.
std::string Study(int64_t nodes, int64_t gpus_per_node,
                  const std::string& trials) {
  return absl::StrCat(
      R"({"name": "command-e2e", "model": {"preset": "tiny"},
          "cluster": {"gpu": {"preset": "agents"}, "nodes": )",
      nodes, R"(, "gpus_per_node": )", gpus_per_node, R"(},
          "training": {"global_batch": 8, "seq_len": 64, "total_tokens": 1e8,
                       "stack": "pytorch-ddp"},
          "trials": )",
      trials, "}");
}

std::string CommandTrials(const std::string& command, const std::string& rest) {
  nlohmann::json c = command;
  return absl::StrCat(R"({"backend": "command", "command": )", c.dump(), ", ",
                      rest, "}");
}

class CommandBackendTest : public SystemTest {
 protected:
  void SetUp() override {
    SystemTest::SetUp();
    std::string out;
    if (RunToEnd({"/usr/bin/python3", "-c", "import torch.distributed"},
                 (dir_ / "torch.log").string(), absl::Seconds(60), &out) != 0 ||
        access("/usr/bin/torchrun", X_OK) != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no torch (or no /usr/bin/torchrun):"
                      " apt-get install python3-torch to run the example "
                      "trainer";
    }
  }

  // Processes whose environment says they run a trial under `dir`
  // (TESSERA_TRIAL_DIR, which every process of a command trial inherits).
  static std::vector<int> ProcessesOfTrialsIn(const std::string& dir) {
    std::vector<int> found;
    for (const auto& e : fs::directory_iterator("/proc")) {
      int pid = 0;
      if (!absl::SimpleAtoi(e.path().filename().string(), &pid)) continue;
      std::string env = ReadFile((e.path() / "environ").string());
      for (char& c : env) {
        if (c == '\0') c = '\n';
      }
      if (env.find("TESSERA_TRIAL_DIR=" + dir) != std::string::npos) {
        found.push_back(pid);
      }
    }
    return found;
  }
};

TEST_F(CommandBackendTest, LayoutsOfTheExampleTrainerAreMeasuredAndCalibrated) {
  StartPlanner();
  StartAgent("cmd-a", "command");
  StartAgent("cmd-b", "command");
  const int64_t id = Submit(
      Study(1, 2, CommandTrials(Command(), R"("max_trials": 4, "first_rung": 4,
                           "warmup_steps": 1, "steps": 3,
                           "trial_time_limit_s": 120)")));
  ASSERT_TRUE(WaitDone(id, absl::Seconds(400))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  ASSERT_GE(trials.size(), 2u);
  std::set<std::string> layouts;
  for (const v1::Trial& t : trials) {
    ASSERT_EQ(t.state(), v1::TRIAL_OK) << t.id() << ": " << t.reason();
    EXPECT_EQ(t.measured().backend(), "command");
    EXPECT_EQ(t.measured().steps(), t.steps());
    EXPECT_EQ(t.measured().loss_size(), t.warmup_steps() + t.steps());
    EXPECT_GT(t.measured().tokens_per_s(), 0);
    EXPECT_FALSE(t.measured().has_watts_per_gpu());  // no GPU: none
    layouts.insert(t.layout().DebugString());
  }
  EXPECT_EQ(layouts.size(), trials.size()) << "each trial its own layout";
  // The trials refit the pytorch-ddp stack's coefficients on these agents.
  EXPECT_NE(ReadFile((dir_ / "planner.out").string()).find("recalibrated on"),
            std::string::npos)
      << Logs();
  v1::Recommendation rec;
  ASSERT_TRUE(GetRecommendation(id, &rec).ok());
  EXPECT_TRUE(rec.final());
  EXPECT_EQ(rec.best_throughput().provenance(), v1::MEASURED);
}

TEST_F(CommandBackendTest, ATwoNodeGangMeetsThroughTorchrunsRendezvous) {
  StartPlanner();
  StartAgent("cmd-a", "command");
  StartAgent("cmd-b", "command");
  const int64_t id = Submit(
      Study(2, 1, CommandTrials(Command(), R"("max_trials": 2, "first_rung": 2,
                           "warmup_steps": 1, "steps": 2,
                           "trial_time_limit_s": 120)")));
  ASSERT_TRUE(WaitDone(id, absl::Seconds(400))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  ASSERT_FALSE(trials.empty());
  for (const v1::Trial& t : trials) {
    ASSERT_EQ(t.state(), v1::TRIAL_OK) << t.id() << ": " << t.reason();
    EXPECT_EQ(t.gang_size(), 2);  // one torchrun node on each agent
    // The other agent ran node rank 1's torchrun and left the report to
    // node rank 0 (its part ended, or was stopped once the trial was in).
    const std::string part = absl::StrCat("leased trial ", t.id(), " (study ",
                                          id, ", node rank 1 of 2");
    const bool ran_node_1 =
        ReadFile((dir_ / "cmd-a.log").string()).find(part) !=
            std::string::npos ||
        ReadFile((dir_ / "cmd-b.log").string()).find(part) != std::string::npos;
    EXPECT_TRUE(ran_node_1) << Logs();
  }
}

TEST_F(CommandBackendTest, RunningOutOfItsMemoryLimitIsOomAndTheStudyGoesOn) {
  StartPlanner();
  StartAgent("cmd-a", "command");
  const int64_t id = Submit(
      Study(1, 2, CommandTrials(Command(), R"("max_trials": 2, "first_rung": 2,
                           "warmup_steps": 1, "steps": 2,
                           "memory_limit_bytes": 1000,
                           "trial_time_limit_s": 120)")));
  // The first oom does not end the study: the second layout runs too, and
  // only then does the study fail, nothing having been measured.
  ASSERT_TRUE(WaitState(id, v1::STUDY_FAILED, absl::Seconds(300))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  ASSERT_EQ(trials.size(), 2u);
  for (const v1::Trial& t : trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_OOM) << t.id() << ": " << t.reason();
    EXPECT_NE(t.reason().find("out of memory"), std::string::npos)
        << t.reason();
  }
}

TEST_F(CommandBackendTest, AHangingTrialIsKilledAtItsLimitWithItsProcesses) {
  StartPlanner();
  StartAgent("cmd-a", "command");
  const int64_t id = Submit(Study(
      1, 2,
      CommandTrials(Command(" --hang-at-step 2"),
                    R"("max_trials": 1, "first_rung": 1, "warmup_steps": 1,
                "steps": 2, "trial_time_limit_s": 25)")));
  ASSERT_TRUE(WaitState(id, v1::STUDY_FAILED, absl::Seconds(300))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].state(), v1::TRIAL_TIMEOUT) << trials[0].reason();
  EXPECT_NE(trials[0].reason().find("time limit of 25 s"), std::string::npos)
      << trials[0].reason();
  // torchrun and both ranks are gone with the trial.
  std::vector<int> left;
  ASSERT_TRUE(WaitFor(absl::Seconds(10),
                      [&] {
                        left = ProcessesOfTrialsIn(AgentDir("cmd-a"));
                        return left.empty();
                      }))
      << left.size() << " processes left in " << AgentDir("cmd-a");
}

}  // namespace
}  // namespace tessera::e2e
