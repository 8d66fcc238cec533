// Issue 28, "a finished result is never lost", with the real tessera-planner
// and real tessera-agent daemons on loopback: the three faults the red team
// found each dropped a finished result (and counted an attempt against it).
//   - the disk under the store full while a trial runs and reports: the
//     lease clock stops while the store refuses writes;
//   - four planner restarts in a row while a trial runs: the lease is not
//     lost to the time the planner was away, and a late report of a trial
//     not leased again is taken;
//   - the planner stopped (SIGSTOP) longer than the lease and agent
//     timeouts with two trials running: on SIGCONT no lease expires and no
//     agent is told to kill its trial.
// Each trial is a command trial (a shell script that sleeps, then writes its
// steps), so that it runs through the fault; each must end ok, reported
// once, with no attempt counted and its lease never lost, and no agent may
// have dropped a result or been told to kill a trial.
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/service/e2e/system_fixture.h"

namespace tessera::e2e {
namespace {

class ResultSurvivalTest : public SystemTest {
 protected:
  void TearDown() override {
    if (!store_mount_.empty()) {
      agents_.clear();
      planner_.reset();
      ::umount2(store_mount_.c_str(), MNT_DETACH);
    }
    SystemTest::TearDown();
  }

  // A command trial that runs `seconds`, then reports warm-up + measured
  // steps of 5 s each (slow enough for any CPU's plausibility ceiling).
  std::string Study(int64_t trials, int64_t seconds) {
    const std::string script = (dir_ / "fake_train.sh").string();
    std::ofstream(script)
        << "sleep \"$1\"\n"
           "i=0\n"
           "while [ \"$i\" -lt \"$2\" ]; do\n"
           "  echo \"{\\\"step\\\": $i, \\\"step_time_s\\\": 5.0, "
           "\\\"loss\\\": 3.0}\" >> \"$TESSERA_METRICS\"\n"
           "  i=$((i+1))\n"
           "done\n";
    fs::permissions(script, fs::perms::owner_all | fs::perms::group_read |
                                fs::perms::others_read);
    const nlohmann::json command = absl::StrCat(
        "/bin/sh ", script, " ", seconds, " {total_steps} {config}");
    return absl::StrCat(
        R"({"name": "survival", "model": {"preset": "tiny"},
            "cluster": {"gpu": {"preset": "agents"}, "nodes": 1,
                        "gpus_per_node": 2},
            "training": {"global_batch": 8, "seq_len": 64,
                         "total_tokens": 1e8, "stack": "pytorch-ddp"},
            "trials": {"backend": "command", "command": )",
        command.dump(), R"(, "max_trials": )", trials,
        R"(, "first_rung": )", trials,
        R"(, "warmup_steps": 1, "steps": 2, "trial_time_limit_s": 120}})");
  }

  int64_t Count(const std::string& where) {
    return CountRows(db_, "SELECT count(*) FROM trials WHERE " + where);
  }

  // Every trial ok, reported once, no attempt counted; no agent dropped a
  // result or was told to kill a trial.
  void ExpectEveryResultKept(int64_t study, int64_t trials) {
    ASSERT_TRUE(WaitDone(study, absl::Seconds(90))) << Logs();
    EXPECT_EQ(Count("status = 'ok'"), trials) << Logs();
    EXPECT_EQ(Count("attempts > 0"), 0) << Logs();
    // No lease was lost on the way (a lost lease clears the trial's start;
    // a late report, taken, would not set it again).
    EXPECT_EQ(Count("started_at_us IS NULL"), 0) << Logs();
    for (const auto& [name, agent] : agents_) {
      const std::string log = ReadFile((dir_ / (name + ".log")).string());
      EXPECT_EQ(log.find("result dropped"), std::string::npos) << log;
      EXPECT_EQ(log.find("planner cancelled trial"), std::string::npos) << log;
    }
  }

  std::string store_mount_;
};

// The red team: disk full under the store for ~35 s while a trial ran; one
// second after space returned the reaper expired the lease and the agent
// dropped its spooled result on the FAILED_PRECONDITION.
TEST_F(ResultSurvivalTest, ADiskFullUnderTheStoreLosesNoResult) {
  store_mount_ = (dir_ / "store").string();
  fs::create_directories(store_mount_);
  if (::mount("tmpfs", store_mount_.c_str(), "tmpfs", 0, "size=8m") != 0) {
    const std::string why = std::strerror(errno);
    store_mount_.clear();
    GTEST_SKIP() << "cannot mount a small tmpfs to fill (" << why
                 << "): needs root with CAP_SYS_ADMIN";
  }
  db_ = store_mount_ + "/tessera.db";
  StartPlanner();
  StartAgent("cmd-a", "command");
  const int64_t study = Submit(Study(1, 6));
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return Count("status = 'leased'") == 1;
  })) << Logs();
  // The disk fills up.
  const std::string filler = store_mount_ + "/filler";
  {
    std::FILE* f = std::fopen(filler.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string block(64 << 10, '\0');
    while (std::fwrite(block.data(), 1, block.size(), f) == block.size() &&
           std::fflush(f) == 0) {
    }
    std::fclose(f);
  }
  // The trial finishes; its report fails while the disk is full, for more
  // than a lease timeout (2 s) past its last heartbeat.
  const std::string agent_log = (dir_ / "cmd-a.log").string();
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    return ReadFile(agent_log).find("reporting trial") != std::string::npos;
  })) << Logs();
  absl::SleepFor(absl::Seconds(5));
  fs::remove(filler);
  ExpectEveryResultKept(study, 1);
  // The reaper's next pass after the store writes again says the outage is
  // over: possibly after the study ended (the report may land first).
  EXPECT_TRUE(WaitFor(absl::Seconds(10), [&] {
    return ReadFile((dir_ / "planner.out").string())
               .find("planner outage over (the store refused writes") !=
           std::string::npos;
  })) << Logs();
}

// The red team: four planner restarts 9 s apart; after the fourth the
// planner expired the lease before the agent had reconnected, and the
// finished result was dropped.
TEST_F(ResultSurvivalTest, PlannerRestartsInARowLoseNoResult) {
  StartPlanner();
  const int port = PlannerPort();
  StartAgent("cmd-a", "command");
  const int64_t study = Submit(Study(1, 10));
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return Count("status = 'leased'") == 1;
  })) << Logs();
  for (int restart = 0; restart < 4; ++restart) {
    planner_->Signal(SIGKILL);
    planner_->Wait(absl::Seconds(10));
    absl::SleepFor(absl::Milliseconds(500));
    StartPlanner(port);
    absl::SleepFor(absl::Milliseconds(1500));
  }
  ExpectEveryResultKept(study, 1);
}

// The red team: the planner stopped for 20 s with two trials running; on
// SIGCONT both leases expired in the same instant and the agents were told
// to kill their trials.
TEST_F(ResultSurvivalTest, APlannerStoppedPastEveryTimeoutLosesNoTrial) {
  StartPlanner();
  StartAgent("cmd-a", "command");
  StartAgent("cmd-b", "command");
  const int64_t study = Submit(Study(2, 12));
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return Count("status = 'leased'") == 2;
  })) << Logs();
  // Past the lease (2 s) timeout three times over and the agent (8 s) one.
  planner_->Signal(SIGSTOP);
  absl::SleepFor(absl::Seconds(9));
  planner_->Signal(SIGCONT);
  ExpectEveryResultKept(study, 2);
  EXPECT_NE(ReadFile((dir_ / "planner.out").string())
                .find("planner outage over (the planner did not run for"),
            std::string::npos)
      << Logs();
}

}  // namespace
}  // namespace tessera::e2e
