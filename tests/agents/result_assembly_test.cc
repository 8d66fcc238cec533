#include "agents/result_assembly.h"

#include <signal.h>

#include <string>

#include "agents/files.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

class ResultAssemblyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "assembly-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    base_.backend = "cpu";
    base_.model = "tiny";
    base_.layout.tp = 2;
    base_.ranks = 4;
    base_.global_batch = 8;
    base_.seq_len = 32;
    base_.warmup_steps = 1;
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  // A run of local rank `local` that wrote `json` ("" = nothing) and
  // `stderr_text`, and ended as `outcome` says.
  RankRun Run(int64_t local, const std::string& json,
              const std::string& stderr_text = "",
              ProcessOutcome outcome = {}) {
    RankRun run;
    run.local_rank = local;
    run.global_rank = local;
    run.outcome = outcome;
    run.json_path = dir_ + "/rank-" + std::to_string(local) + ".json";
    run.stderr_path = dir_ + "/rank-" + std::to_string(local) + ".err";
    if (!json.empty()) {
      EXPECT_TRUE(WriteFileAtomically(run.json_path, json).ok());
    }
    EXPECT_TRUE(WriteFileAtomically(run.stderr_path, stderr_text).ok());
    return run;
  }

  static std::string Json(TrialStatus status, double tokens_per_s,
                          const std::string& reason = "") {
    TrialResult r;
    r.status = status;
    r.reason = reason;
    r.tokens_per_s = tokens_per_s;
    return TrialResultToJson(r).dump(2) + "\n";
  }

  static TrialResult Parse(const std::string& text) {
    absl::StatusOr<TrialResult> r =
        TrialResultFromJson(nlohmann::json::parse(text));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : TrialResult{};
  }

  static ProcessOutcome Exited(int code) {
    ProcessOutcome o;
    o.exit.exited = true;
    o.exit.exit_code = code;
    return o;
  }
  static ProcessOutcome Signalled(int sig, KillReason kill) {
    ProcessOutcome o;
    o.exit.signal = sig;
    o.kill = kill;
    return o;
  }

  std::string dir_;
  TrialResult base_;
};

TEST_F(ResultAssemblyTest, AllOkPassesTheLowestRanksJsonThrough) {
  const std::string rank0 = Json(TrialStatus::kOk, 5120);
  // Given out of order: rank 0's text still wins, byte for byte.
  std::vector<RankRun> runs = {Run(1, Json(TrialStatus::kOk, 999)),
                               Run(0, rank0)};
  EXPECT_EQ(AssembleTrialResult(runs, base_, {}), rank0);
}

TEST_F(ResultAssemblyTest, AFailingRanksJsonIsChosen) {
  const std::string oom =
      Json(TrialStatus::kOom, 0, "rank 1: 2 GiB over the memory limit");
  std::vector<RankRun> runs = {Run(0, Json(TrialStatus::kOk, 5120)),
                               Run(1, oom)};
  EXPECT_EQ(AssembleTrialResult(runs, base_, {}), oom);
}

TEST_F(ResultAssemblyTest, TypedFailureBeatsACrashEcho) {
  const std::string nan = Json(TrialStatus::kNan, 0, "loss is nan at step 3");
  std::vector<RankRun> runs = {
      Run(0, Json(TrialStatus::kCrash, 0, "world rank 1 disconnected")),
      Run(1, nan)};
  EXPECT_EQ(AssembleTrialResult(runs, base_, {}), nan);
}

TEST_F(ResultAssemblyTest, NoJsonIsACrashWithTheStderrTail) {
  // 10 KiB of stderr: only the last 4 KiB make it into the reason.
  std::string err(10 * 1024, 'x');
  err += "\nSegmentation fault in attention_backward\n";
  std::vector<RankRun> runs = {
      Run(0, Json(TrialStatus::kCrash, 0, "world rank 1 disconnected")),
      Run(1, "", err, Signalled(SIGSEGV, KillReason::kNone))};
  const TrialResult r = Parse(AssembleTrialResult(runs, base_, {}));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("tessera-trial rank 1 (local rank 1) killed by "
                          "signal 11"),
            std::string::npos)
      << r.reason;
  EXPECT_NE(r.reason.find("Segmentation fault in attention_backward"),
            std::string::npos);
  EXPECT_LT(r.reason.size(), 4096u + 200u);
  EXPECT_GT(r.reason.size(), 4096u);
  // The trial's identity comes from the base.
  EXPECT_EQ(r.model, "tiny");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.global_batch, 8);
}

TEST_F(ResultAssemblyTest, ExitWithoutJsonNamesTheExitCode) {
  std::vector<RankRun> runs = {
      Run(0, "", "--json: cannot write 'x'\n", Exited(1))};
  runs[0].global_rank = -1;  // threads mode
  const TrialResult r = Parse(AssembleTrialResult(runs, base_, {}));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_EQ(r.reason.rfind("tessera-trial exit 1 without a result", 0), 0u)
      << r.reason;
  EXPECT_NE(r.reason.find("cannot write"), std::string::npos);
}

TEST_F(ResultAssemblyTest, KilledForTimeIsATimeout) {
  AssemblyOptions options;
  options.time_limit_s = 42;
  std::vector<RankRun> runs = {
      Run(0, "", "step 1\nstep 2\n",
          Signalled(SIGTERM, KillReason::kTimeLimit)),
      Run(1, "", "", Signalled(SIGTERM, KillReason::kTimeLimit))};
  const TrialResult r = Parse(AssembleTrialResult(runs, base_, options));
  EXPECT_EQ(r.status, TrialStatus::kTimeout);
  EXPECT_NE(r.reason.find("time limit of 42 s"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("step 2"), std::string::npos);
}

TEST_F(ResultAssemblyTest, ARankThatDiedBeatsOnesKilledAfterIt) {
  std::vector<RankRun> runs = {
      Run(0, "", "waiting\n", Signalled(SIGTERM, KillReason::kPeerFailed)),
      Run(1, "", "abort: bad alloc\n", Signalled(SIGABRT, KillReason::kNone))};
  const TrialResult r = Parse(AssembleTrialResult(runs, base_, {}));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("rank 1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("bad alloc"), std::string::npos);
}

TEST_F(ResultAssemblyTest, MalformedJsonCountsAsNone) {
  std::vector<RankRun> runs = {
      Run(0, "{\"status\": \"ok\"", "", Exited(0)),
      Run(1, "{\"status\": \"great\"}", "", Exited(0))};
  const TrialResult r = Parse(AssembleTrialResult(runs, base_, {}));
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("is not JSON"), std::string::npos) << r.reason;
}

TEST_F(ResultAssemblyTest, InvalidUtf8InStderrStillGivesValidJson) {
  std::string err = "bad bytes: \xff\xfe\xc3";  // ends inside a character
  std::vector<RankRun> runs = {
      Run(0, "", err, Signalled(SIGKILL, KillReason::kNone))};
  const std::string text = AssembleTrialResult(runs, base_, {});
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << text;
  EXPECT_NE(json["reason"].get<std::string>().find("bad bytes: "),
            std::string::npos);
}

TEST_F(ResultAssemblyTest, OnlyASignalFromOutsideIsAnInfrastructureFailure) {
  // Killed from outside (OOM killer, operator, shutdown): named.
  for (int signal : {SIGKILL, SIGTERM, SIGINT, SIGHUP}) {
    const std::vector<RankRun> runs = {
        Run(0, Json(TrialStatus::kCrash, 0, "peer gone")),
        Run(1, "", "", Signalled(signal, KillReason::kNone))};
    const std::optional<std::string> why = OutsideKill(runs);
    ASSERT_TRUE(why.has_value()) << signal;
    EXPECT_NE(why->find("tessera-trial rank 1 (local rank 1) killed by signal"),
              std::string::npos)
        << *why;
  }
  // The trial's own crash, or the agent's own kill: not.
  for (int signal : {SIGSEGV, SIGABRT, SIGBUS}) {
    EXPECT_FALSE(
        OutsideKill({Run(0, "", "", Signalled(signal, KillReason::kNone))}))
        << signal;
  }
  for (KillReason why : {KillReason::kTimeLimit, KillReason::kStopped,
                         KillReason::kPeerFailed}) {
    EXPECT_FALSE(OutsideKill({Run(0, "", "", Signalled(SIGKILL, why))}));
  }
  EXPECT_FALSE(OutsideKill({Run(0, Json(TrialStatus::kOk, 10))}));
}

}  // namespace
}  // namespace tessera::agents
