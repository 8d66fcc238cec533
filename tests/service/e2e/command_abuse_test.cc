// Issue 28, the red team's first attack, end to end with the real planner
// and a real command agent: a study whose command writes `id`, reads the
// agent's environment through /proc and lists the agent's spool. An agent whose policy does not allow the command never
// runs it (the trial ends a crash naming the refusal); one that allows it
// runs it as its run-as account, which sees none of the agent's secrets.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/service/e2e/system_fixture.h"

namespace tessera::e2e {
namespace {

class CommandAbuseTest : public SystemTest {
 protected:
  // A one-trial command study of `command` (which reads {config}).
  std::string Study(const std::string& command) {
    const nlohmann::json c = command;
    return absl::StrCat(
        R"({"name": "abuse", "model": {"preset": "tiny"},
            "cluster": {"gpu": {"preset": "agents"}, "nodes": 1,
                        "gpus_per_node": 2},
            "training": {"global_batch": 8, "seq_len": 64,
                         "total_tokens": 1e8, "stack": "pytorch-ddp"},
            "trials": {"backend": "command", "command": )",
        c.dump(),
        R"(, "max_trials": 1, "first_rung": 1, "warmup_steps": 1,
            "steps": 2, "trial_time_limit_s": 60}})");
  }
};

TEST_F(CommandAbuseTest, ACommandTheAgentDoesNotAllowNeverRuns) {
  const std::string pwned = (dir_ / "pwned").string();
  StartPlanner();
  // The policy allows torchrun only (the fixture's default is torchrun and
  // /bin/sh).
  StartAgent("cmd-a", "command", {"/usr/bin/torchrun"});
  const int64_t study =
      Submit(Study(absl::StrCat("id > ", pwned, "; echo {config} {dp}")));
  ASSERT_TRUE(WaitState(study, v1::STUDY_FAILED, absl::Seconds(90)) ||
              WaitDone(study, absl::Seconds(1)))
      << Logs();
  const std::vector<v1::Trial> trials = Trials(study);
  ASSERT_EQ(trials.size(), 1u) << Logs();
  EXPECT_EQ(trials[0].state(), v1::TRIAL_CRASH) << trials[0].reason();
  EXPECT_NE(trials[0].reason().find("command refused: not allowed by"),
            std::string::npos)
      << trials[0].reason();
  EXPECT_FALSE(fs::exists(pwned));
}

TEST_F(CommandAbuseTest, AnAllowedCommandRunsAsTheRunAsAccountAwayFromSecrets) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "switching users needs root (or CAP_SETUID/CAP_SETGID)";
  }
  // What the attack leaves is written where anyone may write.
  const std::string loot = (dir_ / "loot").string();
  fs::create_directories(loot);
  ::chmod(loot.c_str(), 01777);
  StartPlanner();
  ::setenv("TESSERA_AGENT_TEST_SECRET", "s3cr3t", 1);  // the agent inherits
  StartAgent("cmd-a", "command");
  ::unsetenv("TESSERA_AGENT_TEST_SECRET");
  // The command's parent is its shell; the agent is the one to rob.
  const std::string script = (dir_ / "attack.sh").string();
  std::ofstream(script)
      << "id -u > " << loot << "/uid\n"
      << "cat /proc/" << agents_["cmd-a"]->pid() << "/environ > " << loot
      << "/environ 2>&1\n"
      << "ls " << dir_.string() << "/agent-cmd-a/spool > " << loot
      << "/spool 2>&1\n"
      << "grep CapEff /proc/self/status > " << loot << "/caps\n"
      << "env > " << loot << "/env\n"
      << "exit 1\n";
  ::chmod(script.c_str(), 0755);
  Submit(Study(absl::StrCat("/bin/sh ", script, " {config}")));
  ASSERT_TRUE(WaitFor(absl::Seconds(90), [&] {
    return !ReadFile(loot + "/env").empty();
  })) << Logs();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(ReadFile(loot + "/uid"), "65534\n");
  EXPECT_NE(ReadFile(loot + "/environ").find("Permission denied"),
            std::string::npos)
      << ReadFile(loot + "/environ");
  EXPECT_NE(ReadFile(loot + "/spool").find("Permission denied"),
            std::string::npos)
      << ReadFile(loot + "/spool");
  EXPECT_EQ(ReadFile(loot + "/caps"), "CapEff:\t0000000000000000\n");
  EXPECT_EQ(ReadFile(loot + "/env").find("s3cr3t"), std::string::npos);
}

}  // namespace
}  // namespace tessera::e2e
