#include "agents/process_runner.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agents/files.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

// Polls `condition` for up to 5 s.
template <typename F>
bool WaitUntil(F condition) {
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (!condition()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

class ProcessRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "runner-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  ProcessSpec Shell(const std::string& script, const std::string& name) {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.working_dir = dir_;
    spec.stdout_path = dir_ + "/" + name + ".out";
    spec.stderr_path = dir_ + "/" + name + ".err";
    return spec;
  }

  // Whether `pid` is gone (or a zombie nobody reaped yet: it runs no more).
  static bool Gone(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() &&
           line[paren + 2] == 'Z';
  }

  pid_t ReadPid(const std::string& file) {
    absl::StatusOr<std::string> text = ReadFile(dir_ + "/" + file);
    int pid = 0;
    EXPECT_TRUE(text.ok()) << text.status();
    if (text.ok()) {
      EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid));
    }
    return pid;
  }

  std::string dir_;
};

TEST_F(ProcessRunnerTest, ExitCodesAndOutputFiles) {
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({Shell("echo to-stdout; echo to-stderr >&2; exit 3", "a"),
                    Shell("pwd; exit 0", "b")},
                   RunLimits{}, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE((*out)[0].exit.exited);
  EXPECT_EQ((*out)[0].exit.exit_code, 3);
  EXPECT_EQ((*out)[0].kill, KillReason::kNone);
  EXPECT_EQ((*out)[0].exit.Describe(), "exit 3");
  EXPECT_TRUE((*out)[1].exit.success());
  EXPECT_EQ(ReadFile(dir_ + "/a.out").value(), "to-stdout\n");
  EXPECT_EQ(ReadFile(dir_ + "/a.err").value(), "to-stderr\n");
  // The working folder is the spec's.
  EXPECT_EQ(ReadFile(dir_ + "/b.out").value(), dir_ + "\n");
}

TEST_F(ProcessRunnerTest, StderrTailIsTheLastBytes) {
  absl::StatusOr<std::vector<ProcessOutcome>> out = RunProcesses(
      {Shell("i=0; while [ $i -lt 2000 ]; do echo line-$i >&2; i=$((i+1)); "
             "done; echo last-words >&2; exit 7",
             "t")},
      RunLimits{}, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].exit.exit_code, 7);
  const std::string tail = ReadFileTail(dir_ + "/t.err", 4096);
  EXPECT_EQ(tail.size(), 4096u);
  EXPECT_EQ(tail.substr(tail.size() - 11), "last-words\n");
  EXPECT_EQ(tail.find("line-0\n"), std::string::npos);
}

TEST_F(ProcessRunnerTest, DeathBySignal) {
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({Shell("kill -SEGV $$", "s")}, RunLimits{}, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE((*out)[0].exit.exited);
  EXPECT_EQ((*out)[0].exit.signal, SIGSEGV);
  EXPECT_EQ((*out)[0].exit.Describe().rfind("killed by signal 11", 0), 0u);
}

TEST_F(ProcessRunnerTest, TimeLimitKillsTheWholeGroup) {
  RunLimits limits;
  limits.time_limit = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({Shell("sleep 100 & echo $! > grandchild.pid; wait", "g")},
                   limits, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ((*out)[0].kill, KillReason::kTimeLimit);
  EXPECT_EQ((*out)[0].exit.signal, SIGTERM);
  const pid_t grandchild = ReadPid("grandchild.pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(WaitUntil([&] { return Gone(grandchild); }))
      << "grandchild " << grandchild << " survived";
}

TEST_F(ProcessRunnerTest, SigkillAfterTheGraceForWhatIgnoresSigterm) {
  RunLimits limits;
  limits.time_limit = absl::Milliseconds(200);
  limits.kill_grace = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({Shell("trap '' TERM; sleep 100 & echo $! > grandchild.pid; "
                          "while :; do sleep 1; done",
                          "k")},
                   limits, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].kill, KillReason::kTimeLimit);
  EXPECT_EQ((*out)[0].exit.signal, SIGKILL);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));
  const pid_t grandchild = ReadPid("grandchild.pid");
  EXPECT_TRUE(WaitUntil([&] { return Gone(grandchild); }));
}

TEST_F(ProcessRunnerTest, StopCancelsEveryProcess) {
  std::atomic<bool> cancel{false};
  ProcessGroupRegistry registry;
  std::atomic<size_t> live_seen{0};
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    cancel = true;
  });
  absl::StatusOr<std::vector<ProcessOutcome>> out = RunProcesses(
      {Shell("sleep 100", "x"), Shell("sleep 100", "y")}, RunLimits{},
      [&] {
        live_seen = std::max(live_seen.load(), registry.size());
        return cancel.load();
      },
      &registry);
  canceller.join();
  ASSERT_TRUE(out.ok());
  for (const ProcessOutcome& o : *out) {
    EXPECT_EQ(o.kill, KillReason::kStopped);
    EXPECT_EQ(o.exit.signal, SIGTERM);
  }
  EXPECT_EQ(live_seen.load(), 2u);  // both registered while they ran
  EXPECT_EQ(registry.size(), 0u);   // and removed once they ended
}

TEST_F(ProcessRunnerTest, OthersGetAGraceAfterOneFails) {
  RunLimits limits;
  limits.after_failure_grace = absl::Milliseconds(200);
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({Shell("sleep 100", "waiter"), Shell("exit 1", "failer"),
                    Shell("sleep 0.05; exit 0", "quick")},
                   limits, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].kill, KillReason::kPeerFailed);
  EXPECT_EQ((*out)[1].kill, KillReason::kNone);
  EXPECT_EQ((*out)[1].exit.exit_code, 1);
  EXPECT_TRUE((*out)[2].exit.success());  // finished within the grace
}

TEST_F(ProcessRunnerTest, AProgramThatCannotStartIsAnError) {
  ProcessSpec missing;
  missing.argv = {dir_ + "/no-such-program"};
  absl::StatusOr<std::vector<ProcessOutcome>> out = RunProcesses(
      {Shell("sleep 100", "first"), missing}, RunLimits{}, nullptr);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("no-such-program"), std::string::npos);
  ProcessSpec empty;
  EXPECT_EQ(RunProcesses({empty}, RunLimits{}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ProcessRunnerTest, ChildrenDieWithTheThreadThatStartedThem) {
  // A SIGKILLed agent cannot clean up: its trial processes must die with it
  // (PR_SET_PDEATHSIG through setpriv). The kernel sends the signal when the
  // thread that started the child ends: a thread that starts a child and
  // returns stands in for an agent that dies.
  if (access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "no /usr/bin/setpriv (util-linux): children outlive "
                    "their agent here";
  }
  // Started by a thread that then ends; polled from this one.
  auto start_and_leave = [&](bool die_with_parent) {
    ProcessSpec spec = Shell("exec sleep 30", "orphan");
    if (!die_with_parent) spec.die_with_parent = false;  // else the default
    std::optional<ChildProcess> child;
    std::thread starter([&] {
      absl::StatusOr<ChildProcess> started = ChildProcess::Start(spec);
      ASSERT_TRUE(started.ok()) << started.status();
      // Until it runs `sleep` (setpriv has set the signal and exec'd): an
      // agent's thread waits for its child far longer.
      const std::string comm = absl::StrCat("/proc/", started->pid(), "/comm");
      EXPECT_TRUE(WaitUntil([&] {
        std::ifstream in(comm);
        std::string name;
        std::getline(in, name);
        return name == "sleep";
      }));
      child.emplace(*std::move(started));
    });
    starter.join();
    return child;
  };
  auto poll_for = [](ChildProcess& child, absl::Duration d) {
    const absl::Time until = absl::Now() + d;
    std::optional<ExitStatus> exit;
    while (!(exit = child.Poll()) && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return exit;
  };
  std::optional<ChildProcess> orphan = start_and_leave(true);
  ASSERT_TRUE(orphan.has_value());
  const std::optional<ExitStatus> exit = poll_for(*orphan, absl::Seconds(5));
  ASSERT_TRUE(exit.has_value()) << "the child outlived its starting thread";
  EXPECT_FALSE(exit->exited);
  EXPECT_EQ(exit->signal, SIGKILL) << exit->Describe();
  // Without it the child lives on (its destructor kills it here).
  std::optional<ChildProcess> survivor = start_and_leave(false);
  ASSERT_TRUE(survivor.has_value());
  EXPECT_FALSE(poll_for(*survivor, absl::Milliseconds(300)).has_value());
}

// The real tessera-trial under the runner: a tiny trial writes its JSON
// and exits 0; a usage error exits 2 with the flag named on stderr.
TEST_F(ProcessRunnerTest, RealTesseraTrial) {
  ProcessSpec trial;
  trial.argv = {TESSERA_TRIAL_BINARY,
                "--model",
                "tiny",
                "--ranks",
                "2",
                "--global-batch",
                "4",
                "--seq-len",
                "32",
                "--layout",
                "tp=2,micro_batch=2",
                "--warmup",
                "1",
                "--steps",
                "2",
                "--json",
                dir_ + "/ok.json"};
  trial.stderr_path = dir_ + "/ok.err";
  ProcessSpec usage;
  usage.argv = {TESSERA_TRIAL_BINARY, "--rankz", "2", "--json",
                dir_ + "/usage.json"};
  usage.stderr_path = dir_ + "/usage.err";
  RunLimits limits;
  limits.time_limit = absl::Seconds(120);
  absl::StatusOr<std::vector<ProcessOutcome>> out =
      RunProcesses({trial, usage}, limits, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].exit.success()) << (*out)[0].exit.Describe();
  absl::StatusOr<std::string> json = ReadFile(dir_ + "/ok.json");
  ASSERT_TRUE(json.ok());
  absl::StatusOr<TrialResult> result =
      TrialResultFromJson(nlohmann::json::parse(*json));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->status, TrialStatus::kOk) << result->reason;
  EXPECT_EQ((*out)[1].exit.exit_code, 2);
  EXPECT_NE(ReadFileTail(dir_ + "/usage.err", 4096).find("--rankz"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::agents
