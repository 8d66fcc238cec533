// The service commands against a real planner (service/server.h's
// PlannerServer on 127.0.0.1:0 with a temporary database): submit, watch,
// studies, trials, best, history, cancel, and plan/predict through
// --planner, end to end over gRPC. No agent runs here, so trials stay
// queued; a study of `"trials": {"max_trials": 0}` ends at once with a
// predicted recommendation.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/trial_result.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/server.h"
#include "proto/convert.h"
#include "tessera/v1/service.grpc.pb.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using Args = std::vector<std::string>;
using nlohmann::json;

std::string Joined(const Args& args) {
  std::string s;
  for (const std::string& a : args) s += a + " ";
  return s;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// A tiny Llama on one 8-GPU H100 node: small enough that the planner ranks
// it at once.
std::string TinyStudy(const std::string& name, const std::string& trials) {
  return absl::StrCat(R"({"name": ")", name, R"(",
    "model": {"preset": "tiny"},
    "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1,
                "gpus_per_node": 8},
    "training": {"global_batch": 16, "seq_len": 128, "total_tokens": 1e9},
    "search": {"top": 5},
    "trials": )",
                      trials, "}");
}

// An output stream another thread can read while a command writes to it.
class SharedText : public std::streambuf {
 public:
  std::string text() const {
    absl::MutexLock lock(&mu_);
    return text_;
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    absl::MutexLock lock(&mu_);
    text_.push_back(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    absl::MutexLock lock(&mu_);
    text_.append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  mutable absl::Mutex mu_;
  std::string text_;
};

// An agent that speaks the real AgentService protocol, driven by the test
// instead of running tessera-trial: it registers CPU ranks, leases trials
// and reports the results the test chooses, as tessera-trial's JSON.
class ScriptedAgent {
 public:
  ScriptedAgent(const std::string& address, std::string id, int64_t ranks)
      : id_(std::move(id)),
        ranks_(ranks),
        stub_(v1::AgentService::NewStub(grpc::CreateChannel(
            address, grpc::InsecureChannelCredentials()))) {}

  grpc::Status Register() {
    grpc::ClientContext context;
    v1::RegisterRequest request;
    v1::AgentInfo* info = request.mutable_agent();
    info->set_agent_id(id_);
    info->set_hostname("scripted");
    info->set_backend("cpu");
    info->set_gpu_name("scripted cpu");
    info->set_gpu_count(ranks_);
    info->set_memory_bytes(int64_t{64} << 30);
    info->set_interconnect("shared-memory");
    info->set_address("127.0.0.1");
    v1::RegisterResponse response;
    return stub_->Register(&context, request, &response);
  }

  // The next trial, polling for up to 10 s; nullopt when none came.
  std::optional<v1::TrialAssignment> Lease() {
    for (int i = 0; i < 100; ++i) {
      grpc::ClientContext context;
      v1::LeaseTrialRequest request;
      request.set_agent_id(id_);
      v1::LeaseTrialResponse response;
      const grpc::Status s = stub_->LeaseTrial(&context, request, &response);
      if (!s.ok()) {
        ADD_FAILURE() << "LeaseTrial: " << s.error_message();
        return std::nullopt;
      }
      if (response.has_assignment()) return response.assignment();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return std::nullopt;
  }

  // Reports an ok run of `a` at `tokens_per_s`, with power when `watts`.
  grpc::Status ReportOk(const v1::TrialAssignment& a, double tokens_per_s,
                        std::optional<double> watts) {
    TrialResult r;
    r.status = TrialStatus::kOk;
    r.layout = *LayoutFromProto(a.layout());
    r.backend = "cpu";
    r.model = "tiny";
    r.device = "scripted cpu";
    r.ranks = a.world_size();
    r.global_batch = a.global_batch();
    r.seq_len = a.seq_len();
    r.warmup_steps = a.warmup_steps();
    r.steps = a.steps();
    const double step_s =
        static_cast<double>(a.global_batch() * a.seq_len()) / tokens_per_s;
    r.step_time_s = {step_s, 0.95 * step_s, 1.05 * step_s};
    r.tokens_per_s = tokens_per_s;
    r.tokens_per_s_per_gpu = tokens_per_s / r.ranks;
    r.tflops_per_gpu = 1.5;
    r.mfu = 0.25;
    r.peak_tflops = 6;
    r.peak_tflops_source = "scripted";
    r.peak_memory_bytes.assign(r.ranks, int64_t{1} << 30);
    r.compute_s = 0.7 * step_s;
    r.comm_s = 0.4 * step_s;
    r.exposed_comm_s = 0.3 * step_s;
    if (watts.has_value()) {
      r.watts_per_gpu = *watts;
      r.tokens_per_joule = tokens_per_s / (*watts * r.ranks);
    }
    for (int64_t i = 0; i < a.warmup_steps() + a.steps(); ++i) {
      r.loss.push_back(10.0 - 0.1 * i);
      r.step_times_s.push_back(step_s);
    }
    grpc::ClientContext context;
    v1::ReportTrialRequest request;
    request.set_agent_id(id_);
    request.set_trial_id(a.trial_id());
    request.set_result_json(TrialResultToJson(r).dump());
    v1::ReportTrialResponse response;
    return stub_->ReportTrial(&context, request, &response);
  }

 private:
  std::string id_;
  int64_t ranks_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
};

class PlannerLiveTest : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("tessera_cli_live_", getpid(), "_", counter++);
    std::filesystem::create_directories(dir_);
    service::PlannerOptions options;
    options.db_path = (dir_ / "planner.db").string();
    options.log = service::Log(service::LogLevel::kOff);
    absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
        service::PlannerServer::Start("127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string File(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // `tessera args... --planner <the server>`.
  CliRun Run(Args args) {
    args.push_back("--planner");
    args.push_back(server_->address());
    return RunCli(args);
  }

  // Submits a study and returns its id (0 on failure, with the test failed).
  int64_t Submit(const std::string& name, const std::string& trials) {
    const CliRun r =
        Run({"submit", File(name + ".json", TinyStudy(name, trials))});
    EXPECT_EQ(r.status, 0) << r.err;
    // Nothing on stderr but, with no agent for it, the one-line note.
    EXPECT_TRUE(r.err.empty() ||
                (absl::StartsWith(r.err, "note: study ") && Lines(r.err) == 1))
        << r.err;
    int64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &id))
        << r.out;
    EXPECT_EQ(r.out, absl::StrCat(id, "\n"));
    return id;
  }

  std::filesystem::path dir_;
  std::unique_ptr<service::PlannerServer> server_;
};

TEST_F(PlannerLiveTest, SubmitPrintsAnIdAndTheStudyIsListed) {
  const int64_t id = Submit("queued-study", R"({"max_trials": 3})");
  ASSERT_GT(id, 0);
  EXPECT_EQ(Submit("second", R"({"max_trials": 3})"), id + 1);

  CliRun r = Run({"studies"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("queued-study"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("id  name", 0), 0u) << r.out;
  r = Run({"studies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json studies = json::parse(r.out);
  ASSERT_EQ(studies.size(), 2u);
  json mine;
  for (const json& s : studies) {
    if (s["id"] == id) mine = s;
  }
  ASSERT_FALSE(mine.is_null()) << r.out;
  EXPECT_EQ(mine["name"], "queued-study");
  EXPECT_EQ(mine["model"], "tiny");
  EXPECT_EQ(mine["gpus"], 8);
  EXPECT_EQ(mine["trials_done"], 0);
  EXPECT_TRUE(mine["state"] == "queued" || mine["state"] == "running") << mine;
  // Filters reach the planner: no study is done yet.
  r = Run({"studies", "--state", "done", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::array());
}

TEST_F(PlannerLiveTest, WithoutAgentsTheStudyWaitsAndNoTrialIsQueued) {
  // submit says at once that no agent can run it (on stderr: stdout is the
  // id alone).
  CliRun r = Run({"submit", File("no-agents.json",
                                 TinyStudy("no-agents", R"({"max_trials": 3})"))});
  ASSERT_EQ(r.status, 0) << r.err;
  int64_t id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &id))
      << r.out;
  const std::string sid = absl::StrCat(id);
  EXPECT_EQ(r.err, "note: study " + sid +
                       ": no registered agent can run its trials: each needs "
                       "8 ranks; registered: none. It waits for one "
                       "(tessera-agent --backend cpu|cuda)\n");
  // An agent too small for it is named.
  ScriptedAgent small(server_->address(), "small-0", 2);
  ASSERT_TRUE(small.Register().ok());
  r = Run({"submit", File("small.json",
                          TinyStudy("small", R"({"max_trials": 3})"))});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("each needs 8 ranks; registered: small-0 (cpu, 2 "
                       "ranks)."),
            std::string::npos)
      << r.err;
  // With trials.max_trials 0 no agent is needed: no note.
  r = Run({"submit", File("none.json",
                          TinyStudy("none", R"({"max_trials": 0})"))});
  EXPECT_EQ(r.err, "");
  // The planner queues a study's trials once agents that can run them are
  // there: until then the study says why it waits, and has no trials.
  r = Run({"studies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json study;
  for (const json& s : json::parse(r.out)) {
    if (s["id"] == id) study = s;
  }
  EXPECT_EQ(study["state"], "queued");
  EXPECT_NE(study["state_reason"].get<std::string>().find(
                "waiting for agents: no registered agent can run its trials"),
            std::string::npos)
      << study;
  r = Run({"studies"});
  EXPECT_NE(r.out.find("waiting for agents"), std::string::npos) << r.out;
  r = Run({"trials", "--study", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("id  study  rung  state  layout  steps  tokens/s", 0),
            0u)
      << r.out;
  EXPECT_EQ(Lines(r.out), 1) << r.out;  // the header alone
  r = Run({"trials", "--study", sid, "--csv"});
  EXPECT_EQ(Lines(r.out), 1) << r.out;
  EXPECT_EQ(json::parse(Run({"trials", "--json"}).out), json::array());
  EXPECT_EQ(json::parse(Run({"history", "--json"}).out), json::array());
  // best: nothing chosen yet, provisional.
  r = Run({"best", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind(
          "study " + sid + " (provisional: the study is still running)\n", 0),
      0u)
      << r.out;
  // An unknown sort key is the planner's INVALID_ARGUMENT: exit 2, its
  // message.
  r = Run({"trials", "--sort", "speed"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tessera trials: sort: 'speed' is not one of"),
            std::string::npos)
      << r.err;
}

// An agent runs the study's two trials while `watch` follows it: the
// progress arrives as events, the study ends with a measured
// recommendation, and trials, best and history show what was reported.
TEST_F(PlannerLiveTest, TrialsReportedByAnAgentReachEveryCommand) {
  ScriptedAgent agent(server_->address(), "scripted-0", 8);
  const grpc::Status registered = agent.Register();
  ASSERT_TRUE(registered.ok()) << registered.error_message();
  const int64_t id = Submit("measured", R"({"max_trials": 2})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);

  // watch, in a thread; the trials run once it has its first event.
  SharedText watch_out, watch_err;
  std::ostream watch_out_stream(&watch_out), watch_err_stream(&watch_err);
  int watch_status = -1;
  std::thread watcher([&] {
    watch_status = RunTessera({"watch", sid, "--planner", server_->address()},
                              watch_out_stream, watch_err_stream);
  });
  // However the test ends, the watch ends first: a study that is not done
  // is cancelled, which ends its stream.
  bool done = false;
  absl::Cleanup stop_watch = [&] {
    if (!watcher.joinable()) return;
    if (!done) Run({"cancel", sid});
    watcher.join();
  };
  for (int i = 0; i < 200 && watch_out.text().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(watch_out.text(), "") << watch_err.text();
  const std::optional<v1::TrialAssignment> first = agent.Lease();
  ASSERT_TRUE(first.has_value());
  // The first trial measures 80% of its prediction, with power; the
  // second half as much, without.
  CliRun r = Run({"trials", "--study", sid, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json trials = json::parse(r.out);
  // One agent runs one trial at a time: the next is chosen with this one's
  // result.
  ASSERT_EQ(trials.size(), 1u) << r.out;
  double predicted_first = 0;
  for (const json& t : trials) {
    EXPECT_EQ(t["id"], first->trial_id());
    EXPECT_EQ(t["state"], "running");
    predicted_first = t["predicted"]["tokens_per_s"].get<double>();
  }
  ASSERT_GT(predicted_first, 0);
  const double first_tokens_per_s = 0.8 * predicted_first;
  grpc::Status s = agent.ReportOk(*first, first_tokens_per_s, 400.0);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::optional<v1::TrialAssignment> second = agent.Lease();
  ASSERT_TRUE(second.has_value());
  const double second_tokens_per_s = 0.5 * first_tokens_per_s;
  s = agent.ReportOk(*second, second_tokens_per_s, std::nullopt);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // The budget is spent: the study ends and so does the watch. (Should it
  // not, stop_watch cancels the study and the test fails below.)
  for (int i = 0; i < 100 && !done; ++i) {
    const json study = json::parse(Run({"studies", "--json"}).out).at(0);
    done = study["state"] == "done";
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::move(stop_watch).Invoke();
  ASSERT_TRUE(done);
  CliRun watched;
  watched.status = watch_status;
  watched.out = watch_out.text();
  watched.err = watch_err.text();

  const std::string a = absl::StrCat(first->trial_id());
  const std::string b = absl::StrCat(second->trial_id());
  EXPECT_EQ(watched.status, 0) << watched.err << watched.out;
  EXPECT_EQ(watched.err, "");
  for (const std::string& expected : std::vector<std::string>{
           "trial " + a + " ok: ", "trial " + b + " ok: ",
           " 2/2 trials, 0 running, rung 0; best ", "\nstudy " + sid + " done",
           "MEASURED (trial " + a + "): ", "calibration: step-time MAPE "}) {
    EXPECT_NE(watched.out.find(expected), std::string::npos) << expected << "\n"
                                                             << watched.out;
  }

  // trials: what the agent reported, power measured for one only.
  r = Run({"trials", "--study", sid, "--sort", "-tokens_per_s", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  trials = json::parse(r.out);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0]["id"], first->trial_id());
  EXPECT_EQ(trials[0]["state"], "ok");
  EXPECT_DOUBLE_EQ(trials[0]["measured"]["tokens_per_s"].get<double>(),
                   first_tokens_per_s);
  EXPECT_EQ(trials[0]["measured"]["watts_per_gpu"], 400.0);
  EXPECT_EQ(trials[0]["agents"], json::array({"scripted-0"}));
  EXPECT_DOUBLE_EQ(trials[1]["measured"]["tokens_per_s"].get<double>(),
                   second_tokens_per_s);
  EXPECT_TRUE(trials[1]["measured"]["watts_per_gpu"].is_null());
  // -o wide: every column (the default table drops some to fit 100).
  r = Run({"trials", "--study", sid, "--sort", "-tokens_per_s", "-o", "wide"});
  std::vector<std::string> rows;
  for (size_t at = 0, next; (next = r.out.find('\n', at)) != std::string::npos;
       at = next + 1) {
    rows.push_back(r.out.substr(at, next - at));
  }
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_NE(rows[1].find(" 400 W "), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find(" 25.0% "), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find(" 1 GiB "), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("—"), std::string::npos) << rows[2];  // no power
  EXPECT_EQ(rows[2].find(" W "), std::string::npos) << rows[2];

  // best: the measured layout, labelled with its trial.
  r = Run({"best", sid, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json best = json::parse(r.out);
  EXPECT_EQ(best["final"], true);
  EXPECT_EQ(best["recommended"]["provenance"], "MEASURED");
  EXPECT_EQ(best["recommended"]["trial_id"], first->trial_id());
  EXPECT_DOUBLE_EQ(best["recommended"]["tokens_per_s"].get<double>(),
                   first_tokens_per_s);
  EXPECT_EQ(best["recommended"]["layout"], trials[0]["layout"]);
  // One MFU: the recommendation's is the trial's own (it ran at scale).
  EXPECT_DOUBLE_EQ(best["recommended"]["mfu"].get<double>(),
                   trials[0]["measured"]["mfu"].get<double>());
  EXPECT_EQ(best["calibration_samples"], 2);

  // history: one group per layout, each with its one ok trial.
  r = Run({"history", "--model", "tiny", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json history = json::parse(r.out);
  ASSERT_EQ(history.size(), 2u) << r.out;
  EXPECT_EQ(history[0]["trials"], json::array({first->trial_id()}));
  EXPECT_DOUBLE_EQ(history[0]["best_tokens_per_s"].get<double>(),
                   first_tokens_per_s);
  EXPECT_EQ(history[0]["median_watts_per_gpu"], 400.0);
  EXPECT_EQ(history[0]["studies"], json::array({id}));
  EXPECT_TRUE(history[1]["median_watts_per_gpu"].is_null());
  r = Run({"history", "--tp", "64"});
  EXPECT_EQ(Lines(r.out), 1) << r.out;  // no such layout: the header alone

  // report: one page with the measured layout, both trials and the spec.
  const std::string page = File("report.html", "");
  std::filesystem::remove(page);
  r = Run({"report", sid, "--out", page});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            absl::StrCat("wrote ", page, " (study ", sid, ", 2 trials)\n"));
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  for (const std::string& expected : std::vector<std::string>{
           "<title>Tessera study " + sid + ": measured</title>",
           "MEASURED</span> (trial " + a + ")",
           "<td class=\"n\">" + a + "</td>", "<td class=\"n\">" + b + "</td>",
           "400 W", "&quot;preset&quot;: &quot;tiny&quot;", "</html>"}) {
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
  }
  // A page that cannot be written is bad input: exit 2, one line naming the
  // path as given and why, no file.
  const std::string nowhere = File("no-such-dir", "") + "/x/report.html";
  r = Run({"report", sid, "--out", nowhere});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "tessera report: --out: cannot write " + nowhere +
                       ": Not a directory\n");
  EXPECT_FALSE(std::filesystem::exists(nowhere));
}

// The planner stops and starts again on the same address and database
// while `watch` follows a study: the watch says so once, picks the stream up
// again, and ends when the study does.
TEST_F(PlannerLiveTest, WatchResumesAcrossAPlannerRestart) {
  const int64_t id = Submit("restart", R"({"max_trials": 3})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);
  const std::string address = server_->address();
  SharedText watch_out, watch_err;
  std::ostream watch_out_stream(&watch_out), watch_err_stream(&watch_err);
  int watch_status = -1;
  std::thread watcher([&] {
    watch_status =
        RunTessera({"watch", sid, "--planner", address, "--reconnect", "30"},
                   watch_out_stream, watch_err_stream);
  });
  // On a failed assertion: cancelling ends the watch (or, with no planner,
  // --reconnect's 30 s do).
  absl::Cleanup join = [&] {
    if (server_ != nullptr) Run({"cancel", sid});
    watcher.join();
  };
  for (int i = 0; i < 200 && watch_out.text().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(watch_out.text(), "") << watch_err.text();

  server_.reset();  // shuts the server down, ending the watch's stream
  for (int i = 0; i < 200 && watch_err.text().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(watch_err.text().rfind(
                "tessera watch: lost the stream of study " + sid + " (", 0),
            0u)
      << watch_err.text();
  service::PlannerOptions options;
  options.db_path = (dir_ / "planner.db").string();
  options.log = service::Log(service::LogLevel::kOff);
  absl::StatusOr<std::unique_ptr<service::PlannerServer>> again =
      service::PlannerServer::Start(address, options);
  ASSERT_TRUE(again.ok()) << again.status();
  server_ = std::move(*again);

  const CliRun cancelled = Run({"cancel", sid});
  EXPECT_EQ(cancelled.status, 0) << cancelled.err;
  std::move(join).Cancel();
  watcher.join();
  EXPECT_EQ(watch_status, 4) << watch_err.text();
  EXPECT_EQ(Lines(watch_err.text()), 1) << watch_err.text();
  EXPECT_NE(watch_out.text().find("\nstudy " + sid + " cancelled"),
            std::string::npos)
      << watch_out.text();
}

TEST_F(PlannerLiveTest, NoTrialsEndsAtOnceWithAPredictedRecommendation) {
  const int64_t id = Submit("predicted-only", R"({"max_trials": 0})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);

  CliRun r = Run({"best", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("study " + sid + "\nbest throughput (tokens/s): tp=", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("  PREDICTED: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MEASURED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  full run: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nhistory: " + (dir_ / "planner.db").string()),
            std::string::npos)
      << r.out;

  r = Run({"best", sid, "--objective", "energy", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json energy = json::parse(r.out);
  EXPECT_EQ(energy["study_id"], id);
  EXPECT_EQ(energy["objective"], "energy");
  EXPECT_EQ(energy["final"], true);
  EXPECT_EQ(energy["recommended"]["provenance"], "PREDICTED");
  EXPECT_TRUE(energy["recommended"]["trial_id"].is_null());
  EXPECT_GT(energy["recommended"]["tokens_per_joule"].get<double>(), 0);
  EXPECT_GT(energy["recommended"]["full_run"]["days"].get<double>(), 0);
  const json throughput =
      json::parse(Run({"best", sid, "--json"}).out)["recommended"];
  // The energy-best layout has at least the throughput-best's tokens/J,
  // and at most its tokens/s.
  EXPECT_GE(energy["recommended"]["tokens_per_joule"].get<double>(),
            throughput["tokens_per_joule"].get<double>());
  EXPECT_LE(energy["recommended"]["tokens_per_s"].get<double>(),
            throughput["tokens_per_s"].get<double>());

  // watch of a study that is already done: the final state and the whole
  // recommendation, exit 0.
  r = Run({"watch", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nstudy " + sid + " done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("study " + sid + " recommendation:\nbest throughput: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\ncalibration: the cost model's defaults"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\npredicted for h100-sxm ("), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nhistory: "), std::string::npos);
  // Not a terminal: every progress line is a whole line.
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_NE(r.out.find("study " + sid + " done ["), std::string::npos) << r.out;

  // submit --wait: the id, then the same ending.
  r = Run({"submit",
           File("wait.json", TinyStudy("wait", R"({"max_trials": 0})")),
           "--wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind(absl::StrCat(id + 1, "\n"), 0), 0u) << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("study ", id + 1, " recommendation:")),
            std::string::npos)
      << r.out;
}

TEST_F(PlannerLiveTest, CancelEndsTheStudyAndWatchSaysSo) {
  const int64_t id = Submit("to-cancel", R"({"max_trials": 4})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);
  CliRun r = Run({"cancel", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("study " + sid + " cancelled: 0/", 0), 0u) << r.out;
  r = Run({"studies", "--state", "cancelled", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(json::parse(r.out).size(), 1u) << r.out;
  EXPECT_EQ(json::parse(r.out)[0]["id"], id);
  r = Run({"watch", sid});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.out.find("\nstudy " + sid + " cancelled"), std::string::npos)
      << r.out;
  r = Run({"trials", "--study", sid, "--state", "queued", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::array()) << "queued after cancel";
}

TEST_F(PlannerLiveTest, UnknownStudyExitsTwoNamingIt) {
  for (const Args& args : std::vector<Args>{
           {"best", "424242"},
           {"watch", "424242"},
           {"cancel", "424242"},
           {"report", "424242", "--out", File("never.html", "")}}) {
    SCOPED_TRACE(args[0]);
    const CliRun r = Run(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tessera " + args[0] + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("study 424242"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  }
}

TEST_F(PlannerLiveTest, ThePlannersOwnValidationExitsTwoNamingTheField) {
  // Valid for the local checks (the workload), invalid for the planner
  // (the trial options).
  const std::string path =
      File("bad_eta.json", TinyStudy("bad-eta", R"({"eta": 1})"));
  const CliRun r = Run({"submit", path});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tessera submit: spec: " + path + ": "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("trials.eta"), std::string::npos) << r.err;
  // The workload is the planner's to judge too (the CLI checks the file's
  // form only): zero nodes is one line naming the field, after the file.
  const std::string zero_nodes = File("zero_nodes.json",
                                      R"({"model": {"preset": "tiny"},
          "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 0,
                      "gpus_per_node": 8},
          "training": {"global_batch": 16, "seq_len": 128}})");
  const CliRun z = Run({"submit", zero_nodes});
  EXPECT_EQ(z.status, 2);
  EXPECT_EQ(Lines(z.err), 1) << z.err;
  EXPECT_NE(z.err.find("spec: " + zero_nodes + ": "), std::string::npos)
      << z.err;
  EXPECT_NE(z.err.find("cluster.nodes"), std::string::npos) << z.err;
  // Nothing was stored.
  EXPECT_EQ(json::parse(Run({"studies", "--json"}).out), json::array());
}

// The "agents" GPU preset exists only in the planner (it plans for the
// agents' probed hardware): submit must hand it over, not reject it.
TEST_F(PlannerLiveTest, SubmitAcceptsTheAgentsGpuPreset) {
  const std::string path = File("agents_gpu.json",
                                R"({"model": {"preset": "tiny"},
          "cluster": {"gpu": {"preset": "agents"}, "nodes": 1,
                      "gpus_per_node": 2},
          "training": {"global_batch": 8, "seq_len": 64},
          "trials": {"backend": "cpu"}})");
  const CliRun r = Run({"submit", path});
  EXPECT_EQ(r.status, 0) << r.err;
  int64_t id = 0;
  EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &id))
      << r.out;
  EXPECT_GT(id, 0);
}

TEST_F(PlannerLiveTest, PlanAndPredictThroughThePlannerGiveTheLocalJson) {
  const std::string spec = ExampleSpecPath();
  const CliRun local = RunCli({"plan", "--spec", spec, "--json"});
  const CliRun remote = Run({"plan", "--spec", spec, "--json"});
  ASSERT_EQ(local.status, 0) << local.err;
  ASSERT_EQ(remote.status, 0) << remote.err;
  json a = json::parse(local.out);
  json b = json::parse(remote.out);
  a.erase("elapsed_ms");
  b.erase("elapsed_ms");
  a["scale"].erase("elapsed_ms");
  b["scale"].erase("elapsed_ms");
  EXPECT_EQ(a, b);
  // The table too, but for the search times (layouts, and GPU counts).
  const CliRun local_text = RunCli({"plan", "--spec", spec, "--top", "3"});
  const CliRun remote_text = Run({"plan", "--spec", spec, "--top", "3"});
  auto without_time = [](std::string s) {
    for (const char* before : {" layouts in ", " GPUs searched in "}) {
      const size_t in = s.find(before);
      const size_t ms = s.find(" ms (", in);
      if (in != std::string::npos && ms != std::string::npos) {
        s.erase(in, ms - in);
      }
    }
    return s;
  };
  EXPECT_EQ(without_time(local_text.out), without_time(remote_text.out));

  for (const std::string layout :
       {"tp=2,zero=3,micro_batch=2", "tp=3", "tp=1,pp=1,micro_batch=64"}) {
    SCOPED_TRACE(layout);
    const Args args = {"predict", "--spec", spec, "--layout", layout, "--json"};
    const CliRun l = RunCli(args);
    const CliRun p = Run(args);
    ASSERT_EQ(l.status, 0) << l.err;
    ASSERT_EQ(p.status, 0) << p.err;
    EXPECT_EQ(json::parse(l.out), json::parse(p.out));
  }
  // Bad input is still found before any call, and the same.
  const CliRun bad = Run({"predict", "--spec", spec, "--layout", "tp=x"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err,
            RunCli({"predict", "--spec", spec, "--layout", "tp=x"}).err);
}

// A calibration made offline, imported into the planner: plan and predict
// through the planner then answer as the local commands do with the file,
// for the file's stack and for another; the export gives the file back; a
// bad file and a study on another GPU are refused and change nothing.
TEST_F(PlannerLiveTest, AnImportedCalibrationIsWhatThePlannerPlansWith) {
  const std::string csv = File(
      "bw.csv",
      "collective,nodes,gpus_per_node,bytes,busbw_gbs\n"
      "all_gather,1,8,1e8,300\nall_gather,8,8,1e8,10\n"
      "reduce_scatter,1,8,1e8,300\nreduce_scatter,8,8,1e8,10\n");
  const std::string cal = (dir_ / "cal.json").string();
  CliRun r = RunCli({"calibrate", "--collectives", csv, "--gpu", "h100-sxm",
                     "--stack", "torchtitan", "--out", cal});
  ASSERT_EQ(r.status, 0) << r.err;

  // Usage errors, before any call.
  const struct {
    Args args;
    const char* message;
  } usage[] = {
      {{"calibration", "frob"}, "'frob' is not a subcommand"},
      {{"calibration", "export"}, "--gpu: required"},
      {{"calibration", "import"}, "missing FILE"},
      {{"calibration", "import", (dir_ / "none.json").string()}, "no file"},
      {{"calibration", "export", "--gpu", "h900"}, "gpu: "},
  };
  for (const auto& u : usage) {
    r = Run(u.args);
    EXPECT_EQ(r.status, 2) << u.message;
    EXPECT_NE(r.err.find(u.message), std::string::npos) << r.err;
  }

  r = Run({"calibration", "export", "--gpu", "h100-sxm"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("calibration for gpu h100-sxm: none"),
            std::string::npos)
      << r.err;
  // A bad file: refused whole, naming the field; nothing is imported.
  json bad = json::parse(std::ifstream(cal));
  bad["coefficients"]["gemm_peak_efficiency"]["value"] = 3;
  r = Run({"calibration", "import", File("bad.json", bad.dump())});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("coefficients.gemm_peak_efficiency.value"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Run({"calibration", "export", "--gpu", "h100-sxm"}).status, 2);

  r = Run({"calibration", "import", cal});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("for h100-sxm: torchtitan stack, 0 measured runs, 4 "
                       "measured collective points"),
            std::string::npos)
      << r.out;

  for (const char* stack : {"torchtitan", "megatron-core"}) {
    SCOPED_TRACE(stack);
    const Args predict = {
        "predict", "--model", "llama3-8b", "--gpu", "h100-sxm", "--nodes",
        "8", "--gpus-per-node", "8", "--global-batch", "64", "--seq-len",
        "4096", "--stack", stack, "--layout", "zero=3,micro_batch=1",
        "--json"};
    const CliRun remote = Run(predict);
    ASSERT_EQ(remote.status, 0) << remote.err;
    Args with_file = predict;
    with_file.insert(with_file.end(), {"--calibration", cal});
    const CliRun local = RunCli(with_file);
    ASSERT_EQ(local.status, 0) << local.err;
    EXPECT_EQ(json::parse(local.out), json::parse(remote.out));
    // The slow fabric shows: FSDP's collectives are exposed.
    const CliRun defaults = RunCli(predict);
    EXPECT_GT(json::parse(remote.out)["prediction"]["exposed_comm_s"],
              json::parse(defaults.out)["prediction"]["exposed_comm_s"]);
  }

  const std::string exported = (dir_ / "exported.json").string();
  r = Run({"calibration", "export", "--gpu", "h100-sxm", "--out", exported});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("import 1 (" + cal + ")"), std::string::npos) << r.out;
  std::ifstream a(cal), b(exported);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));

  // A study on another GPU cannot start from it, and nothing is stored.
  std::string a100 = TinyStudy("on-a100", R"({"max_trials": 0})");
  a100.replace(a100.find("h100-sxm"), 8, "a100-sxm-80g");
  r = Run({"submit", File("a100.json", a100), "--calibration", cal});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("calibration: " + cal +
                       " was fitted on gpu 'h100-sxm', the study runs on "
                       "'a100-sxm-80g'"),
            std::string::npos)
      << r.err;
  r = Run({"studies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 0u) << r.out;
  // On its own GPU it can.
  r = Run({"submit",
           File("h100.json", TinyStudy("on-h100", R"({"max_trials": 0})")),
           "--calibration", cal});
  EXPECT_EQ(r.status, 0) << r.err;
}


std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// The history commands with --db read the store file itself, read-only:
// the same output as through the planner, while it runs and after it
// stopped, and the file is left byte for byte as it was.
TEST_F(PlannerLiveTest, HistoryCommandsReadTheStoreFileWithoutAPlanner) {
  ScriptedAgent agent(server_->address(), "scripted-0", 8);
  const grpc::Status registered = agent.Register();
  ASSERT_TRUE(registered.ok()) << registered.error_message();
  const int64_t id = Submit("measured", R"({"max_trials": 2})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);
  for (int i = 0; i < 2; ++i) {
    const std::optional<v1::TrialAssignment> a = agent.Lease();
    ASSERT_TRUE(a.has_value());
    const grpc::Status s = agent.ReportOk(*a, 1000.0 * (i + 1), 300.0);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  bool done = false;
  for (int i = 0; i < 100 && !done; ++i) {
    done = json::parse(Run({"studies", "--json"}).out).at(0)["state"] ==
           "done";
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(done);
  Submit("queued", R"({"max_trials": 0})");  // a second, predicted study

  const std::string db = (dir_ / "planner.db").string();
  const std::vector<Args> commands = {
      {"studies", "--json"},
      {"studies"},
      {"trials", "--study", sid, "--json"},
      {"trials", "--sort", "-tokens_per_s"},
      {"history", "--json"},
      {"history", "--model", "tiny"},
      {"best", sid, "--json"},
      {"best", sid, "--objective", "energy"},
      {"report", sid, "--out", "-"},
  };
  std::vector<std::string> served;
  for (const Args& c : commands) {
    const CliRun planner = Run(c);
    ASSERT_EQ(planner.status, 0) << Joined(c) << planner.err;
    served.push_back(planner.out);
    Args with_db = c;
    with_db.insert(with_db.end(), {"--db", db});
    const CliRun direct = RunCli(with_db);
    ASSERT_EQ(direct.status, 0) << Joined(with_db) << direct.err;
    if (c[0] != "report") {  // the page says when it was generated
      EXPECT_EQ(direct.out, planner.out) << Joined(with_db);
    }
  }
  // best --export: the recommended layout as the framework's arguments,
  // the same from either source; with --out the file and the usual text.
  const CliRun exported = Run({"best", sid, "--export", "megatron"});
  ASSERT_EQ(exported.status, 0) << exported.err;
  const json recommended =
      json::parse(Run({"best", sid, "--json"}).out)["recommended"];
  EXPECT_NE(exported.out.find(absl::StrCat(
                "\n--tensor-model-parallel-size ",
                recommended["layout"]["tp"].get<int64_t>(),
                "\n--pipeline-model-parallel-size ",
                recommended["layout"]["pp"].get<int64_t>(), "\n")),
            std::string::npos)
      << exported.out << recommended.dump();
  EXPECT_EQ(RunCli({"best", sid, "--export", "megatron", "--db", db}).out,
            exported.out);
  const std::string args_file = (dir_ / "megatron.args").string();
  const CliRun to_file =
      Run({"best", sid, "--export", "megatron", "--out", args_file});
  ASSERT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_EQ(to_file.out.rfind("wrote " + args_file + " (megatron)\nstudy " + sid,
                              0),
            0u)
      << to_file.out;
  EXPECT_EQ(FileBytes(args_file), exported.out);
  const CliRun unknown = Run({"best", sid, "--export", "jax"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("--export: "), std::string::npos) << unknown.err;

  server_.reset();  // the planner stops; the file stays
  const std::string before = FileBytes(db);
  ASSERT_FALSE(before.empty());
  for (size_t i = 0; i < commands.size(); ++i) {
    Args with_db = commands[i];
    with_db.insert(with_db.end(), {"--db", db});
    const CliRun direct = RunCli(with_db);
    ASSERT_EQ(direct.status, 0) << Joined(with_db) << direct.err;
    if (commands[i][0] == "report") {
      EXPECT_NE(direct.out.find("</html>"), std::string::npos);
    } else {
      EXPECT_EQ(direct.out, served[i]) << Joined(with_db);
    }
  }
  EXPECT_EQ(FileBytes(db), before) << "a read-only command changed the store";
  // The history is the file read, by the path given: a copy elsewhere
  // prints the copy's path, not where the planner kept it.
  const std::string copy = (dir_ / "copy-of-history.db").string();
  std::filesystem::copy_file(db, copy);
  const CliRun copied = RunCli({"best", sid, "--db", copy});
  ASSERT_EQ(copied.status, 0) << copied.err;
  EXPECT_NE(copied.out.find("\nhistory: " + copy + "\n"), std::string::npos)
      << copied.out;
  EXPECT_EQ(
      json::parse(
          RunCli({"best", sid, "--db", copy, "--json"}).out)["history_db"],
      copy);

  // Bad sources: exit 2, one line naming --db, nothing printed.
  const std::string not_a_store = File("other.db", "");
  {
    std::ofstream(not_a_store) << "SQLite format 3";  // not a database
  }
  const std::vector<std::pair<Args, std::string>> bad = {
      {{"studies", "--db", (dir_ / "nope.db").string()},
       "--db: no such file " + (dir_ / "nope.db").string()},
      {{"trials", "--db", db, "--planner", "127.0.0.1:1"},
       "--db and --planner name two sources; give one"},
      {{"history", "--db", not_a_store}, "--db: "},
      {{"best", "999", "--db", db}, "999"},
  };
  for (const auto& [args, message] : bad) {
    const CliRun r = RunCli(args);
    EXPECT_NE(r.status, 0) << Joined(args);
    EXPECT_EQ(r.out, "") << Joined(args);
    EXPECT_NE(r.err.find(message), std::string::npos)
        << Joined(args) << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(FileBytes(db), before);
}


// best names the history file by its absolute path, whatever path the
// planner was started with.
TEST_F(PlannerLiveTest, BestNamesTheHistoryFileByItsAbsolutePath) {
  const std::string relative = absl::StrCat("tessera_relative_", getpid(), ".db");
  absl::Cleanup remove = [&] {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(relative + suffix);
    }
  };
  service::PlannerOptions options;
  options.db_path = relative;
  options.log = service::Log(service::LogLevel::kOff);
  absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
      service::PlannerServer::Start("127.0.0.1:0", options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  CliRun r = RunCli({"submit",
                     File("rel.json", TinyStudy("rel", R"({"max_trials": 0})")),
                     "--planner", address, "--wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = RunCli({"best", "1", "--planner", address});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string expected =
      (std::filesystem::current_path() / relative).string();
  EXPECT_NE(r.out.find("\nhistory: " + expected + "\n"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace tessera::cli
