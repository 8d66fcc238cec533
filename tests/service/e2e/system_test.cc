// The whole system, as a user runs it: the real tessera-planner, two
// tessera-agent daemons (CPU backend) and the tessera command line, on free
// loopback ports with a temporary history database. Checks that real trials
// run and are stored; that a trial whose agent is SIGKILLed mid-trial is
// re-queued and finished by the other agent; that a planner SIGKILLed
// mid-study and restarted on the same file finishes the study with every
// earlier result there exactly once; and that bad requests are rejected with
// the right status code and write nothing.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/service/e2e/system_fixture.h"

namespace tessera::e2e {
namespace {

// A tiny Llama planned for the agents' own (probed) CPU hardware.
std::string Study(const std::string& trials) {
  return absl::StrCat(R"({"name": "e2e",
    "model": {"preset": "tiny"},
    "cluster": {"gpu": {"preset": "agents"}, "nodes": 1, "gpus_per_node": 2},
    "training": {"global_batch": 8, "seq_len": 64, "total_tokens": 1e8},
    "trials": )",
                      trials, "}");
}

// Kills (SIGKILL) every process whose command line mentions `text`: an


TEST_F(SystemTest, RealTrialsRunAndAreStored) {
  StartPlanner();
  StartAgent("e2e-a");
  StartAgent("e2e-b");
  const int64_t id = Submit(Study(
      R"({"backend": "cpu", "max_trials": 6, "first_rung": 4, "eta": 2,
          "warmup_steps": 1, "steps": 2})"));
  ASSERT_TRUE(WaitDone(id, absl::Seconds(240))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  int ok = 0;
  std::set<std::string> agents;
  for (const v1::Trial& t : trials) {
    ASSERT_EQ(t.state(), v1::TRIAL_OK) << t.id() << ": " << t.reason();
    ++ok;
    EXPECT_GT(t.measured().tokens_per_s(), 0);
    EXPECT_GT(t.measured().mfu(), 0);
    EXPECT_EQ(t.measured().steps(), t.steps());
    EXPECT_EQ(t.measured().loss_size(), t.warmup_steps() + t.steps());
    EXPECT_EQ(t.measured().backend(), "cpu");
    EXPECT_FALSE(t.measured().has_watts_per_gpu());  // never invented
    ASSERT_EQ(t.agents_size(), 1);
    agents.insert(t.agents(0));
    // Every step of every trial is in the history, once.
    EXPECT_EQ(CountRows(db_, absl::StrCat("SELECT COUNT(*) FROM trial_metrics "
                                          "WHERE trial_id = ",
                                          t.id())),
              t.warmup_steps() + t.steps());
  }
  EXPECT_GE(ok, 4);
  for (const std::string& a : agents) {
    EXPECT_TRUE(a == "e2e-a" || a == "e2e-b") << a;
  }
  // The recommendation is final and measured.
  v1::Recommendation rec;
  ASSERT_TRUE(GetRecommendation(id, &rec).ok());
  EXPECT_TRUE(rec.final());
  EXPECT_EQ(rec.best_throughput().provenance(), v1::MEASURED);
  EXPECT_EQ(rec.history_db(), db_);
  // The command line reads the same history.
  std::string out;
  ASSERT_EQ(RunToEnd({TESSERA_CLI_BIN, "trials", "--study", absl::StrCat(id),
                      "--json", "--planner", address_},
                     (dir_ / "cli.log").string(), absl::Seconds(30), &out),
            0);
  EXPECT_EQ(nlohmann::json::parse(out).size(), trials.size());
}

TEST_F(SystemTest, AgentKilledMidTrialIsRequeuedAndFinishedByAnother) {
  StartPlanner();
  StartAgent("e2e-a");
  // One trial, long enough to be killed in the middle.
  const int64_t id = Submit(Study(
      R"({"backend": "cpu", "max_trials": 1, "first_rung": 1,
          "warmup_steps": 1, "steps": 400})"));
  int64_t trial_id = 0;
  ASSERT_TRUE(WaitFor(absl::Seconds(120), [&] {
    for (const v1::Trial& t : Trials(id)) {
      if (t.state() == v1::TRIAL_LEASED && t.agents_size() == 1 &&
          t.agents(0) == "e2e-a") {
        trial_id = t.id();
        return true;
      }
    }
    return false;
  })) << Logs();
  // Let it run, then the machine dies: the agent and its trial processes.
  absl::SleepFor(absl::Seconds(1));
  agents_["e2e-a"]->Signal(SIGKILL);
  KillProcessesMentioning(AgentDir("e2e-a"));
  EXPECT_NE(agents_["e2e-a"]->Wait(absl::Seconds(10)), -1);
  StartAgent("e2e-b");
  ASSERT_TRUE(WaitDone(id, absl::Seconds(300))) << Logs();
  const std::vector<v1::Trial> trials = Trials(id);
  ASSERT_EQ(trials.size(), 1u);
  const v1::Trial& t = trials[0];
  EXPECT_EQ(t.id(), trial_id);
  EXPECT_EQ(t.state(), v1::TRIAL_OK) << t.reason();
  EXPECT_EQ(t.attempts(), 1);  // the lease that ended with its agent
  ASSERT_EQ(t.agents_size(), 1);
  EXPECT_EQ(t.agents(0), "e2e-b");
  EXPECT_EQ(CountRows(db_, absl::StrCat("SELECT COUNT(*) FROM trial_metrics "
                                        "WHERE trial_id = ",
                                        trial_id)),
            t.warmup_steps() + t.steps());
}

TEST_F(SystemTest, PlannerKilledMidStudyResumesWithEveryResultOnce) {
  StartPlanner();
  const int port = PlannerPort();
  StartAgent("e2e-a");
  StartAgent("e2e-b");
  const int64_t id = Submit(Study(
      R"({"backend": "cpu", "max_trials": 6, "first_rung": 4, "eta": 2,
          "warmup_steps": 1, "steps": 30, "stop_margin": 10})"));
  // Some results are in, the study is not over.
  std::map<int64_t, double> before;  // ok trial -> measured tokens/s
  ASSERT_TRUE(WaitFor(absl::Seconds(240), [&] {
    before.clear();
    for (const v1::Trial& t : Trials(id)) {
      if (t.state() == v1::TRIAL_OK)
        before[t.id()] = t.measured().tokens_per_s();
    }
    return !before.empty();
  })) << Logs();
  v1::GetStudyResponse mid;
  ASSERT_TRUE(GetStudy(id, &mid).ok());
  ASSERT_NE(mid.study().state(), v1::STUDY_DONE)
      << "the study ended before the planner could be killed";
  planner_->Signal(SIGKILL);
  ASSERT_NE(planner_->Wait(absl::Seconds(10)), -1);
  // The results it had are durable; restart on the same file and port.
  StartPlanner(port);
  ASSERT_TRUE(WaitDone(id, absl::Seconds(300))) << Logs();
  std::set<int64_t> ids;
  for (const v1::Trial& t : Trials(id)) {
    EXPECT_TRUE(ids.insert(t.id()).second) << "trial " << t.id() << " twice";
    EXPECT_EQ(t.state(), v1::TRIAL_OK) << t.id() << ": " << t.reason();
    EXPECT_EQ(CountRows(db_, absl::StrCat("SELECT COUNT(*) FROM trial_metrics "
                                          "WHERE trial_id = ",
                                          t.id())),
              t.warmup_steps() + t.steps())
        << "trial " << t.id();
    auto it = before.find(t.id());
    if (it != before.end()) {
      EXPECT_DOUBLE_EQ(t.measured().tokens_per_s(), it->second)
          << "trial " << t.id() << " changed";
    }
  }
  for (const auto& [trial, tokens_per_s] : before) {
    EXPECT_TRUE(ids.count(trial)) << "trial " << trial << " lost";
  }
  EXPECT_EQ(CountRows(db_, "SELECT COUNT(*) FROM studies"), 1);
}

TEST_F(SystemTest, BadRequestsAreRejectedAndWriteNothing) {
  StartPlanner();
  // An agent that registers (and never leases).
  {
    grpc::ClientContext ctx;
    v1::RegisterRequest r;
    r.mutable_agent()->set_agent_id("intruder");
    r.mutable_agent()->set_hostname("localhost");
    r.mutable_agent()->set_backend("cpu");
    r.mutable_agent()->set_gpu_count(2);
    r.mutable_agent()->set_memory_bytes(int64_t{1} << 30);
    v1::RegisterResponse out;
    ASSERT_TRUE(agent_stub_->Register(&ctx, r, &out).ok());
  }
  // A study for a named GPU, so its trials are queued for the CPU agent.
  const int64_t id = Submit(absl::StrCat(R"({"name": "e2e",
    "model": {"preset": "tiny"},
    "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1, "gpus_per_node": 2},
    "training": {"global_batch": 8, "seq_len": 64},
    "trials": {"backend": "cpu", "max_trials": 2}})"));
  std::vector<v1::Trial> trials;
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    trials = Trials(id);
    return !trials.empty();
  })) << Logs();
  const int64_t studies = CountRows(db_, "SELECT COUNT(*) FROM studies");
  const int64_t trial_rows = CountRows(db_, "SELECT COUNT(*) FROM trials");
  const int64_t metric_rows =
      CountRows(db_, "SELECT COUNT(*) FROM trial_metrics");

  // A malformed spec: exit 2, one line naming the problem.
  std::ofstream(dir_ / "bad.json") << R"({"model": {"preset": "tiny"}, )";
  std::string out;
  EXPECT_EQ(RunToEnd({TESSERA_CLI_BIN, "submit", (dir_ / "bad.json").string(),
                      "--planner", address_},
                     (dir_ / "bad.log").string(), absl::Seconds(30), &out),
            2);
  EXPECT_NE(ReadFile((dir_ / "bad.log").string()).find("malformed JSON"),
            std::string::npos);
  // A spec the planner refuses: INVALID_ARGUMENT naming the field.
  {
    grpc::ClientContext ctx;
    v1::SubmitStudyRequest r;
    r.mutable_spec()->mutable_model()->set_preset("tiny");
    r.mutable_spec()->mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
    r.mutable_spec()->mutable_cluster()->set_nodes(0);
    r.mutable_spec()->mutable_cluster()->set_gpus_per_node(8);
    r.mutable_spec()->mutable_training()->set_global_batch(8);
    r.mutable_spec()->mutable_training()->set_seq_len(64);
    v1::SubmitStudyResponse resp;
    const grpc::Status s = planner_stub_->SubmitStudy(&ctx, r, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("cluster.nodes"), std::string::npos)
        << s.error_message();
  }
  // An unknown study.
  v1::GetStudyResponse unknown;
  EXPECT_EQ(GetStudy(424242, &unknown).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // A report for a trial the agent does not hold, and for no trial at all.
  const std::string result = R"({"status": "ok", "steps": 2})";
  {
    grpc::ClientContext ctx;
    v1::ReportTrialRequest r;
    r.set_agent_id("intruder");
    r.set_trial_id(trials[0].id());
    r.set_result_json(result);
    v1::ReportTrialResponse resp;
    EXPECT_EQ(agent_stub_->ReportTrial(&ctx, r, &resp).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    v1::ReportTrialRequest r;
    r.set_agent_id("intruder");
    r.set_trial_id(987654);
    r.set_result_json(result);
    v1::ReportTrialResponse resp;
    EXPECT_EQ(agent_stub_->ReportTrial(&ctx, r, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  // Nothing was written.
  EXPECT_EQ(CountRows(db_, "SELECT COUNT(*) FROM studies"), studies);
  EXPECT_EQ(CountRows(db_, "SELECT COUNT(*) FROM trials"), trial_rows);
  EXPECT_EQ(CountRows(db_, "SELECT COUNT(*) FROM trial_metrics"), metric_rows);
  for (const v1::Trial& t : Trials(id)) {
    EXPECT_EQ(t.state(), v1::TRIAL_QUEUED) << t.id();
    EXPECT_EQ(t.measured().steps(), 0) << t.id();
  }
}

}  // namespace
}  // namespace tessera::e2e
