// Command trials (backend "command") run by the agent's real code on real
// /bin/sh commands: placeholders and environment, metrics typed into a
// TrialResult, every failure typed (oom, nan, timeout with its processes
// gone, crash for a missing command, no metrics, malformed metrics, too few
// steps), and the framework-log fallback.
#include "agents/command_trial.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/command_launch.h"
#include "agents/command_policy.h"
#include "agents/files.h"
#include "core/trial_result.h"
#include "service/framework_config.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

class CommandTrialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "command-");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    options_.agent_id = "a";
    options_.work_root = root_;
    options_.kill_grace = absl::Seconds(1);
  }
  void TearDown() override { (void)RemoveTree(root_); }

  // A trial of `command` on 2 ranks of one agent: 1 warm-up + 2 steps.
  static v1::TrialAssignment Trial(const std::string& command) {
    v1::TrialAssignment a;
    a.set_trial_id(9);
    a.mutable_model()->set_preset("tiny");
    a.mutable_layout()->set_dp(2);
    a.mutable_layout()->set_zero(1);
    a.mutable_layout()->set_micro_batch(2);
    a.mutable_layout()->set_grad_accum(1);
    a.set_global_batch(4);
    a.set_seq_len(32);
    a.set_warmup_steps(1);
    a.set_steps(2);
    a.set_backend("command");
    a.set_world_size(2);
    a.set_gang_size(1);
    a.set_ranks_per_node(2);
    a.set_time_limit_s(30);
    a.set_seed(7);
    a.set_stack("pytorch-ddp");
    a.set_command(command);
    return a;
  }

  // This agent's operator allows the command (command_policy.h).
  void Allow(const v1::TrialAssignment& a) {
    options_.command_policy.source = "test policy";
    options_.command_policy.templates.push_back(a.command());
  }

  TrialResult Run(const v1::TrialAssignment& a) {
    Allow(a);
    TrialOutcome outcome =
        RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
    EXPECT_EQ(outcome.end, TrialEnd::kResult) << outcome.summary;
    work_dir_ = outcome.work_dir;
    nlohmann::json json =
        nlohmann::json::parse(outcome.result_json, nullptr, false);
    absl::StatusOr<TrialResult> r = TrialResultFromJson(json);
    EXPECT_TRUE(r.ok()) << outcome.result_json;
    return r.ok() ? *r : TrialResult{};
  }

  // `shell` as template text: its braces literal.
  static std::string Literal(const std::string& shell) {
    std::string out;
    for (char c : shell) {
      out += c;
      if (c == '{' || c == '}') out += c;
    }
    return out;
  }

  // A shell line that appends one metrics line per "loss/seconds" given.
  static std::string Steps(const std::string& losses_and_times) {
    return Literal(
        absl::StrCat("for s in ", losses_and_times,
                     "; do i=$((i+1)); t=${s#*/}; l=${s%/*}; "
                     "echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": $t, "
                     "\\\"loss\\\": $l, \\\"tokens\\\": 128}\" "
                     ">> $TESSERA_METRICS; done"));
  }

  std::string root_;
  std::string work_dir_;
  TrialExecutionOptions options_;
};

TEST_F(CommandTrialTest, MetricsBecomeTheMeasuredResultWithoutTheWarmUp) {
  const TrialResult r = Run(Trial(Steps("5.0/9.0 4.0/0.2 3.0/0.4")));
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason << r.output_tail;
  EXPECT_EQ(r.backend, "command");
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.step_times_s, (std::vector<double>{9.0, 0.2, 0.4}));
  EXPECT_EQ(r.loss, (std::vector<double>{5.0, 4.0, 3.0}));
  // The 9 s warm-up step is dropped: median of 0.2 and 0.4.
  EXPECT_DOUBLE_EQ(r.step_time_s.median, 0.3);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 128 / 0.3);
  EXPECT_DOUBLE_EQ(r.tokens_per_s_per_gpu, 64 / 0.3);
  EXPECT_GT(r.tflops_per_gpu, 0);
  EXPECT_FALSE(r.watts_per_gpu.has_value());
}

TEST_F(CommandTrialTest, PlaceholdersAndTheLauncherEnvironmentReachTheCommand) {
  const TrialResult r =
      Run(Trial("echo dp={dp} zero={zero} mb={micro_batch} ga={grad_accum} "
                "nodes={nodes} gpn={gpus_per_node} layers={layers} "
                "addr=$MASTER_ADDR:$MASTER_PORT={rendezvous} ws=$WORLD_SIZE "
                "nr=$NODE_RANK cfg={config} > {trial_dir}/seen; " +
                Steps("1/1 1/1 1/1")));
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  absl::StatusOr<std::string> seen = ReadFile(work_dir_ + "/seen");
  ASSERT_TRUE(seen.ok());
  EXPECT_NE(seen->find("dp=2 zero=1 mb=2 ga=1 nodes=1 gpn=2 layers=4 "),
            std::string::npos)
      << *seen;
  EXPECT_NE(seen->find(" ws=2 nr=0 "), std::string::npos) << *seen;
  // MASTER_ADDR:MASTER_PORT is {rendezvous}, a real port.
  const size_t at = seen->find("addr=127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << *seen;
  const std::string rest = seen->substr(at + 5);
  const std::string env = rest.substr(0, rest.find('='));
  EXPECT_EQ(rest.substr(env.size() + 1, env.size()), env) << *seen;
  // {config} is the layout and workload as JSON.
  // {config} is Tessera's JSON for a stack without an exporter.
  EXPECT_NE(seen->find("cfg=" + work_dir_ + "/tessera_config.json"),
            std::string::npos)
      << *seen;
  absl::StatusOr<std::string> config =
      ReadFile(work_dir_ + "/tessera_config.json");
  ASSERT_TRUE(config.ok());
  nlohmann::json c = nlohmann::json::parse(*config);
  EXPECT_EQ(c["layout"]["zero"], 1);
  EXPECT_EQ(c["global_batch"], 4);
  EXPECT_EQ(c["stack"], "pytorch-ddp");
}

// For a stack with an exporter, {config} is the framework's own file.
TEST_F(CommandTrialTest, ConfigIsTheStacksOwnFormatWhereThereIsAnExporter) {
  v1::TrialAssignment a =
      Trial("cp {config} {trial_dir}/seen.json; " + Steps("1/1 1/1 1/1"));
  a.set_stack("deepspeed");
  service::AttachFrameworkConfig(a);  // what the planner does at lease time
  const TrialResult r = Run(a);
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  absl::StatusOr<std::string> text = ReadFile(work_dir_ + "/seen.json");
  ASSERT_TRUE(text.ok());
  const nlohmann::json ds = nlohmann::json::parse(*text);
  EXPECT_EQ(ds["zero_optimization"]["stage"], 1);
  EXPECT_EQ(ds["train_batch_size"], 4);
  EXPECT_EQ(ds["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(ds["gradient_accumulation_steps"], 1);
  // A layout the framework's configuration cannot say is not run.
  a.set_stack("torchtitan");  // no ZeRO-1
  service::AttachFrameworkConfig(a);
  EXPECT_EQ(a.framework_config_file(), "torchtitan_config.py");
  const TrialResult refused = Run(a);
  EXPECT_EQ(refused.status, TrialStatus::kInvalid);
  EXPECT_NE(refused.reason.find("{config}: layout.zero"), std::string::npos)
      << refused.reason;
}

TEST_F(CommandTrialTest, AnOutOfMemoryExitIsOom) {
  const TrialResult r =
      Run(Trial(Steps("5/1") +
                "; echo 'torch.OutOfMemoryError: CUDA out of memory. Tried "
                "to allocate 2.00 GiB' >&2; exit 1"));
  EXPECT_EQ(r.status, TrialStatus::kOom) << r.reason;
  EXPECT_NE(r.reason.find("exit 1"), std::string::npos) << r.reason;
  EXPECT_NE(r.output_tail.find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(r.step_times_s.size(), 1u);  // what it reported is kept
}

TEST_F(CommandTrialTest, ANonFiniteLossIsNan) {
  const TrialResult r = Run(Trial(Steps("5/1 null/1 4/1")));
  EXPECT_EQ(r.status, TrialStatus::kNan) << r.reason;
  EXPECT_NE(r.reason.find("step 2"), std::string::npos) << r.reason;
}

TEST_F(CommandTrialTest, AHangIsKilledAtTheTimeLimitWithEveryProcessItStarted) {
  v1::TrialAssignment a =
      Trial("sleep 300 & echo $! > $TESSERA_TRIAL_DIR/child.pid; " +
            Steps("5/1") + "; wait");
  a.set_time_limit_s(1.5);
  const absl::Time start = absl::Now();
  const TrialResult r = Run(a);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  EXPECT_EQ(r.status, TrialStatus::kTimeout) << r.reason;
  EXPECT_NE(r.reason.find("time limit of 1.5 s (1 of 3 steps reported)"),
            std::string::npos)
      << r.reason;
  absl::StatusOr<std::string> pid_text = ReadFile(work_dir_ + "/child.pid");
  ASSERT_TRUE(pid_text.ok());
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*pid_text), &pid));
  // The grandchild is gone (or a zombie reaped by init shortly).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0 && errno == ESRCH;
    if (!gone) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(gone) << "sleep " << pid << " outlived its trial";
}

TEST_F(CommandTrialTest, AMissingCommandIsACrashThatSaysSo) {
  const TrialResult r = Run(Trial("no-such-trainer-xyz --tp {tp}"));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("exit 127 (command not found)"), std::string::npos)
      << r.reason;
  EXPECT_NE(r.reason.find("no-such-trainer-xyz"), std::string::npos)
      << r.reason;
}

// The review: a killed trial process was stored as the layout's crash.
// SIGKILL that neither the command nor the agent sent (the OOM killer, an
// operator) hands the trial back to run again; a command that brings
// itself down (SIGSEGV) is the layout's crash.
TEST_F(CommandTrialTest, AKillFromOutsideIsAnInfrastructureFailure) {
  const v1::TrialAssignment a = Trial(Steps("5/1") + "; kill -KILL $$");
  Allow(a);
  const TrialOutcome killed =
      RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  EXPECT_EQ(killed.end, TrialEnd::kInfrastructureFailure) << killed.summary;
  EXPECT_EQ(killed.summary,
            "the command killed by signal 9 (Killed), a signal neither it "
            "nor the agent sent");
  const TrialResult crashed = Run(Trial(Steps("5/1") + "; kill -SEGV $$"));
  EXPECT_EQ(crashed.status, TrialStatus::kCrash);
}

// Issue 28, the red team's first attack: a study's command reached every
// command agent and ran. A command the agent's own policy does not allow is
// handed back, naming it, and never started.
TEST_F(CommandTrialTest, ACommandNotOnTheAgentsPolicyIsRefusedAndNeverStarted) {
  const std::string marker = root_ + "/ran";
  const v1::TrialAssignment a =
      Trial(absl::StrCat("touch ", marker, "; echo {config} {dp}"));
  // No policy file: every command refused.
  TrialOutcome refused =
      RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  EXPECT_EQ(refused.end, TrialEnd::kInfrastructureFailure);
  EXPECT_NE(refused.summary.find("command refused"), std::string::npos)
      << refused.summary;
  EXPECT_NE(refused.summary.find("no --command-policy"), std::string::npos)
      << refused.summary;
  EXPECT_NE(refused.summary.find(a.command()), std::string::npos)
      << refused.summary;
  // A policy allowing another command: still refused, naming the policy.
  options_.command_policy.source = "/etc/tessera/commands";
  options_.command_policy.templates = {"/opt/train.sh {config}"};
  options_.command_policy.programs = {"/usr/bin/touch"};
  refused = RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  EXPECT_EQ(refused.end, TrialEnd::kInfrastructureFailure);
  EXPECT_NE(refused.summary.find("not allowed by /etc/tessera/commands"),
            std::string::npos)
      << refused.summary;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// Issue 28: the command ran as the agent's user (root) and copied the
// agent's token. With a run-as user it runs as that user, with no
// capability, none of the agent's TESSERA_/GRPC_ variables, and the
// agent's 0600 files out of its reach. Needs root (to switch users).
TEST_F(CommandTrialTest, ARunAsCommandRunsAsThatUserAwayFromTheAgentsSecrets) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "switching users needs root (or CAP_SETUID/CAP_SETGID)";
  }
  absl::StatusOr<CommandPolicy> policy =
      ParseCommandPolicy("run-as nobody\n", "test policy");
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::string secret = root_ + "/agent-token";
  ASSERT_TRUE(WriteFileAtomically(secret, "s3cr3t-token\n").ok());
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0711), 0);  // as Agent::Run makes it
  ::setenv("TESSERA_AGENT_TEST_SECRET", "s3cr3t-env", 1);
  ::setenv("GRPC_TEST_SECRET", "s3cr3t-grpc", 1);
  options_.command_policy = *policy;
  const v1::TrialAssignment a = Trial(Literal(absl::StrCat(
      "echo uid=$(id -u) groups=$(id -G); grep CapEff /proc/self/status; "
      "env; cat ", secret, " || echo secret-unreadable; ")) +
      Steps("5/1 4/1 3/1"));
  const TrialResult r = Run(a);
  ::unsetenv("TESSERA_AGENT_TEST_SECRET");
  ::unsetenv("GRPC_TEST_SECRET");
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason << r.output_tail;
  const std::string out = ReadFileTail(work_dir_ + "/command.out", 1 << 20);
  EXPECT_NE(out.find("uid=65534 groups=65534\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("secret-unreadable"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cr3t"), std::string::npos) << out;
  EXPECT_NE(out.find("USER=nobody"), std::string::npos) << out;
  // What the command must see it still sees.
  EXPECT_NE(out.find("TESSERA_METRICS="), std::string::npos) << out;
}

TEST_F(CommandTrialTest, ACommandThatReportsNothingIsACrash) {
  const TrialResult r = Run(Trial("echo training done"));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("reported no steps"), std::string::npos) << r.reason;
  EXPECT_NE(r.output_tail.find("training done"), std::string::npos);
}

TEST_F(CommandTrialTest, MalformedMetricsAreACrashNamingTheLine) {
  const TrialResult r = Run(Trial(
      Literal("echo '{\"step\": 1, \"step_time_s\": 1}' > $TESSERA_METRICS; "
              "echo 'step two took long' >> $TESSERA_METRICS")));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("malformed $TESSERA_METRICS: metrics line 2"),
            std::string::npos)
      << r.reason;
}

TEST_F(CommandTrialTest, TooFewStepsIsACrash) {
  const TrialResult r = Run(Trial(Steps("5/1 4/1")));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("after reporting 2 steps; 1 warm-up + 2 measured"),
            std::string::npos)
      << r.reason;
}

TEST_F(CommandTrialTest, MegatronsOwnLogStandsInForAMetricsFile) {
  std::string lines;
  for (int i = 1; i <= 3; ++i) {
    absl::StrAppend(
        &lines, "echo ' [2026-11-26 10:00:0", i, "] iteration        ", i,
        "/       3 | consumed samples:            ", 4 * i,
        " | elapsed time per iteration (ms): ", 100 * i,
        ".0 | learning rate: 1.0E-04 | global batch size:     4 | lm loss: "
        "1.0E+01 | loss scale: 1.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |'; ");
  }
  const TrialResult r = Run(Trial(lines));
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason << r.output_tail;
  EXPECT_EQ(r.step_times_s, (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_DOUBLE_EQ(r.step_time_s.median, 0.25);
}

TEST_F(CommandTrialTest, ABadTemplateIsInvalidNotRun) {
  const TrialResult r = Run(Trial("train --tp {tensor}"));
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("assignment.command: unknown placeholder {tensor}"),
            std::string::npos)
      << r.reason;
}

// The power of a GPU agent's command trial: energy over the measured steps.
TEST(CommandResultTest, EnergyOverTheMeasuredStepsGivesPowerAndTokensPerJoule) {
  v1::TrialAssignment a;
  a.mutable_model()->set_preset("tiny");
  a.set_global_batch(4);
  a.set_seq_len(32);
  a.set_warmup_steps(1);
  a.set_steps(2);
  a.set_world_size(2);
  CommandEnd end;
  end.process.exit.exited = true;
  end.metrics_file = true;
  end.metrics_text =
      "{\"step\": 1, \"step_time_s\": 5}\n{\"step\": 2, \"step_time_s\": 1}\n"
      "{\"step\": 3, \"step_time_s\": 1}\n";
  TrialResult base;
  base.ranks = 2;
  TrialResult r = ResultOfCommand(AssignedTrialOf(a), end, base);
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  EXPECT_FALSE(r.watts_per_gpu.has_value());  // not measured: absent
  end.energy = EnergyWindow{.joules = 1600, .seconds = 2};
  end.gpus = 2;
  r = ResultOfCommand(AssignedTrialOf(a), end, base);
  ASSERT_TRUE(r.watts_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*r.watts_per_gpu, 400);  // 1600 J / 2 s / 2 GPUs
  // 2 measured steps of 128 tokens over 1600 J.
  EXPECT_DOUBLE_EQ(*r.tokens_per_joule, 256.0 / 1600);
}

// The watcher reads the counter when the metrics file shows the warm-up
// over, and again when the measured steps are done.
TEST(MeasuredStepsEnergyTest, ReadsTheCounterAtTheMeasuredStepsBounds) {
  absl::StatusOr<std::string> dir =
      MakeUniqueDirectory(::testing::TempDir(), "energy-");
  ASSERT_TRUE(dir.ok());
  const std::string path = *dir + "/metrics.jsonl";
  std::atomic<double> counter{100};
  MeasuredStepsEnergy watch(
      [&]() -> absl::StatusOr<double> { return counter.load(); }, path, 1, 3,
      absl::Milliseconds(5));
  ASSERT_TRUE(WriteFileAtomically(path, "warm\n").ok());
  absl::SleepFor(absl::Milliseconds(100));  // the start is read: 100 J
  counter = 250;
  ASSERT_TRUE(WriteFileAtomically(path, "warm\nm1\nm2\n").ok());
  absl::SleepFor(absl::Milliseconds(100));  // the end is read: 250 J
  counter = 10000;                          // after the window: not counted
  std::optional<EnergyWindow> w = watch.Stop();
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->joules, 150);
  EXPECT_GT(w->seconds, 0);
  (void)RemoveTree(*dir);
}

TEST(MeasuredStepsEnergyTest, NoWindowWhenTheMeasuredStepsNeverBegan) {
  MeasuredStepsEnergy watch([]() -> absl::StatusOr<double> { return 1.0; },
                            "/nonexistent/metrics.jsonl", 1, 3,
                            absl::Milliseconds(5));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_FALSE(watch.Stop().has_value());
}

}  // namespace
}  // namespace tessera::agents
