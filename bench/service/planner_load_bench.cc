// The planner service under the load of a large fleet (issue 5's benchmark):
// a real PlannerServer (SQLite store in a temporary directory, gRPC on
// 127.0.0.1) with N simulated agents, each a thread with its own gRPC
// connection that behaves as tessera-agent does: Register, Heartbeat every
// heartbeat_interval_ms (with its running trial), LeaseTrial every
// lease_poll_interval_ms while idle, "runs" a leased trial for --trial-ms and
// reports a synthetic ok result (tessera-trial's JSON), then leases again at
// once. A few user threads query the studies meanwhile (GetStudy, ListTrials,
// GetRecommendation), as `tessera watch` and `tessera trials` do.
//
// Prints, per RPC, calls, errors, p50 / p99 / max latency (client side, over
// loopback), and the trial-result ingestion rate: ReportTrial calls
// acknowledged per second of the window in which results arrived. It then
// checks that every acknowledged result is stored exactly once (ListTrials)
// and exits 1 when not.
//
//   build/bench/service/planner_load_bench                 # 500 agents
//   build/bench/service/planner_load_bench --agents 100 --trial-ms 500
//   # issue 15: heartbeats while ten users run the largest Plan
//   build/bench/service/planner_load_bench --agents 50 --plan-callers 10
//
// Agents and server share the machine (and its cores): the latencies include
// the clients' own scheduling, an upper bound of what a remote agent sees.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/service/fleet/synthetic_result.h"
#include "core/flags.h"
#include "core/trial_result.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "service/server.h"
#include "proto/convert.h"
#include "tessera/v1/service.grpc.pb.h"
#include "tests/service/planner/maximal_plan.h"

namespace tessera::service {
namespace {

struct BenchOptions {
  int64_t agents = 500;
  int64_t studies = 20;
  int64_t trials_per_study = 32;  // rung 0; halving adds about as many again
  int64_t trial_ms = 200;         // how long a simulated trial runs
  int64_t heartbeat_ms = 1000;
  int64_t lease_poll_ms = 1000;
  int64_t users = 2;
  // Threads that call Plan back to back with the largest search the service
  // takes (plan_callers: 0 none): what one heavy user does to the fleet.
  int64_t plan_callers = 0;
  double max_duration_s = 120;
  bool timeline = false;  // print p50 / p99 per second as well
};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One call: when it started (steady clock) and how long it took.
struct Sample {
  int64_t start_ns = 0;
  double ms = 0;
  bool ok = true;
};

// The calls of one thread, by RPC name, merged at the end (no sharing while
// running).
class Recorder {
 public:
  // Runs `call` (returning grpc::Status), timing it under `rpc`.
  template <typename Call>
  grpc::Status Time(const std::string& rpc, Call&& call) {
    const int64_t start = SteadyNs();
    grpc::Status s = call();
    samples_[rpc].push_back(
        {.start_ns = start,
         .ms = 1e-6 * static_cast<double>(SteadyNs() - start),
         .ok = s.ok()});
    if (!s.ok() && first_error_.empty()) {
      first_error_ =
          absl::StrCat(rpc, ": ", s.error_code(), ": ", s.error_message());
    }
    return s;
  }
  void MergeInto(std::map<std::string, std::vector<Sample>>& all,
                 std::string& first_error) const {
    for (const auto& [name, samples] : samples_) {
      all[name].insert(all[name].end(), samples.begin(), samples.end());
    }
    if (first_error.empty()) first_error = first_error_;
  }

 private:
  std::map<std::string, std::vector<Sample>> samples_;
  std::string first_error_;
};

std::unique_ptr<grpc::ClientContext> Deadline(absl::Duration d) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(absl::ToChronoTime(absl::Now() + d));
  return c;
}

// Each simulated agent opens its own connection, as separate hosts would
// (channels with equal arguments otherwise share one).
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

// What the agents did, beyond latencies.
struct Tally {
  std::atomic<int64_t> reports_acked{0};
  std::atomic<int64_t> first_report_ns{0};  // steady clock, 0: none yet
  std::atomic<int64_t> last_report_ns{0};
  absl::Mutex mu;
  std::set<int64_t> reported_trials ABSL_GUARDED_BY(mu);
  int64_t duplicate_reports ABSL_GUARDED_BY(mu) = 0;
};

// One agent's life: the loop of tessera-agent with the trial process replaced
// by a sleep and a synthetic result.
void RunAgent(const std::string& address, int64_t index, const BenchOptions& o,
              const absl::Notification& stop, Tally& tally, Recorder& rec) {
  auto stub = v1::AgentService::NewStub(OwnChannel(address));
  const std::string id = absl::StrFormat("sim-agent-%04d", index);
  v1::RegisterRequest reg;
  v1::AgentInfo* info = reg.mutable_agent();
  info->set_agent_id(id);
  info->set_hostname(id);
  info->set_backend("cpu");
  info->set_gpu_name("simulated CPU");
  info->set_gpu_count(8);
  info->set_memory_bytes(int64_t{8} << 30);
  info->set_interconnect("shared-memory");
  info->set_address("127.0.0.1");
  v1::RegisterResponse registered;
  if (!rec.Time("Register",
                [&] {
                  return stub->Register(Deadline(absl::Seconds(30)).get(), reg,
                                        &registered);
                })
           .ok()) {
    return;
  }
  const absl::Duration heartbeat = absl::Milliseconds(o.heartbeat_ms);
  const absl::Duration poll = absl::Milliseconds(o.lease_poll_ms);
  // Spread the fleet's heartbeats and polls over an interval.
  std::mt19937_64 rng(static_cast<uint64_t>(index));
  absl::Time next_heartbeat =
      absl::Now() + heartbeat * std::uniform_real_distribution<>(0, 1)(rng);
  absl::Time next_poll =
      absl::Now() + poll * std::uniform_real_distribution<>(0, 1)(rng);
  std::optional<v1::TrialAssignment> running;
  absl::Time finish_at;
  while (!stop.HasBeenNotified()) {
    absl::Time now = absl::Now();
    if (now >= next_heartbeat) {
      v1::HeartbeatRequest hb;
      hb.set_agent_id(id);
      if (running) hb.add_running_trials(running->trial_id());
      v1::HeartbeatResponse ignored;
      rec.Time("Heartbeat", [&] {
        return stub->Heartbeat(Deadline(absl::Seconds(30)).get(), hb, &ignored);
      });
      next_heartbeat += heartbeat;
    }
    if (running && now >= finish_at) {
      v1::ReportTrialRequest report;
      report.set_agent_id(id);
      report.set_trial_id(running->trial_id());
      report.set_result_json(bench::SyntheticResultJson(*running));
      v1::ReportTrialResponse ignored;
      if (rec.Time("ReportTrial",
                   [&] {
                     return stub->ReportTrial(Deadline(absl::Seconds(30)).get(),
                                              report, &ignored);
                   })
              .ok()) {
        const int64_t t = SteadyNs();
        int64_t zero = 0;
        tally.first_report_ns.compare_exchange_strong(zero, t);
        int64_t last = tally.last_report_ns.load();
        while (last < t &&
               !tally.last_report_ns.compare_exchange_weak(last, t)) {
        }
        tally.reports_acked.fetch_add(1);
        absl::MutexLock lock(&tally.mu);
        if (!tally.reported_trials.insert(running->trial_id()).second) {
          ++tally.duplicate_reports;
        }
      }
      running.reset();
      next_poll = now;  // a finished agent asks for the next trial at once
    }
    if (!running && now >= next_poll) {
      v1::LeaseTrialRequest lease;
      lease.set_agent_id(id);
      v1::LeaseTrialResponse got;
      const grpc::Status s = rec.Time("LeaseTrial", [&] {
        return stub->LeaseTrial(Deadline(absl::Seconds(30)).get(), lease, &got);
      });
      if (s.ok() && got.has_assignment()) {
        running = got.assignment();
        finish_at = absl::Now() + absl::Milliseconds(o.trial_ms);
      } else {
        next_poll = absl::Now() + poll;
      }
    }
    const absl::Time wake =
        std::min(next_heartbeat, running ? finish_at : next_poll);
    stop.WaitForNotificationWithTimeout(wake - absl::Now());
  }
}

// A user following the studies: GetStudy, ListTrials and GetRecommendation
// on each study in turn, 10 queries a second.
void RunUser(const std::string& address, const std::vector<int64_t>& studies,
             const absl::Notification& stop, Recorder& rec) {
  auto stub = v1::PlannerService::NewStub(OwnChannel(address));
  for (size_t i = 0; !stop.HasBeenNotified(); ++i) {
    const int64_t study = studies[i % studies.size()];
    switch (i % 3) {
      case 0: {
        v1::GetStudyRequest r;
        r.set_study_id(study);
        v1::GetStudyResponse out;
        rec.Time("GetStudy", [&] {
          return stub->GetStudy(Deadline(absl::Seconds(30)).get(), r, &out);
        });
        break;
      }
      case 1: {
        v1::ListTrialsRequest r;
        r.set_study_id(study);
        v1::ListTrialsResponse out;
        rec.Time("ListTrials", [&] {
          return stub->ListTrials(Deadline(absl::Seconds(30)).get(), r, &out);
        });
        break;
      }
      default: {
        v1::GetRecommendationRequest r;
        r.set_study_id(study);
        v1::Recommendation out;
        rec.Time("GetRecommendation", [&] {
          return stub->GetRecommendation(Deadline(absl::Seconds(30)).get(), r,
                                         &out);
        });
      }
    }
    stop.WaitForNotificationWithTimeout(absl::Milliseconds(100));
  }
}

// A heavy user: Plan calls back to back until `stop`. A refusal
// (RESOURCE_EXHAUSTED: the planner's Plan queue is full) waits 100 ms.
void RunPlanCaller(const std::string& address, const absl::Notification& stop,
                   Recorder& rec) {
  auto stub = v1::PlannerService::NewStub(OwnChannel(address));
  const v1::PlanRequest request = testing::MaximalPlan();
  while (!stop.HasBeenNotified()) {
    v1::PlanResponse out;
    const grpc::Status s = rec.Time("Plan", [&] {
      return stub->Plan(Deadline(absl::Seconds(120)).get(), request, &out);
    });
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      stop.WaitForNotificationWithTimeout(absl::Milliseconds(100));
    }
  }
}

v1::StudySpec LoadStudy(int64_t index, const BenchOptions& o) {
  v1::StudySpec spec;
  spec.set_name(absl::StrCat("load-", index));
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec.mutable_cluster()->set_nodes(1);
  spec.mutable_cluster()->set_gpus_per_node(8);
  spec.mutable_training()->set_global_batch(16);
  spec.mutable_training()->set_seq_len(128);
  spec.mutable_training()->set_total_tokens(1e9);
  v1::TrialOptions* t = spec.mutable_trials();
  t->set_backend("cpu");
  t->set_first_rung(o.trials_per_study);
  t->set_max_trials(2 * o.trials_per_study);
  t->set_stop_margin(10);  // never stop early: every rung runs
  return spec;
}

// The q-quantile of v (reordered), nearest rank below.
double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

// Per RPC: calls that started in [from_ns, to_ns), their rate, failures and
// latency percentiles.
void PrintPhase(const std::string& title,
                const std::map<std::string, std::vector<Sample>>& all,
                int64_t from_ns, int64_t to_ns) {
  const double span_s = 1e-9 * static_cast<double>(to_ns - from_ns);
  absl::PrintF("\n%s: %.1f s\n", title, span_s);
  if (span_s <= 0) return;
  absl::PrintF("%-18s %8s %7s %9s %9s %9s %9s\n", "rpc", "calls", "errors",
               "calls/s", "p50_ms", "p99_ms", "max_ms");
  for (const auto& [name, samples] : all) {
    std::vector<double> ms;
    int64_t errors = 0;
    for (const Sample& x : samples) {
      if (x.start_ns < from_ns || x.start_ns >= to_ns) continue;
      ms.push_back(x.ms);
      errors += x.ok ? 0 : 1;
    }
    if (ms.empty()) continue;
    const double max_ms = *std::max_element(ms.begin(), ms.end());
    const double p50 = Percentile(ms, 0.50);
    const double p99 = Percentile(ms, 0.99);
    absl::PrintF("%-18s %8d %7d %9.1f %9.2f %9.2f %9.2f\n", name, ms.size(),
                 errors, static_cast<double>(ms.size()) / span_s, p50, p99,
                 max_ms);
  }
}

// Terminal trials of `study` (every trial stored with a result).
absl::StatusOr<std::vector<v1::Trial>> StoredTrials(
    v1::PlannerService::Stub& stub, int64_t study) {
  v1::ListTrialsRequest r;
  r.set_study_id(study);
  r.set_limit(100000);
  v1::ListTrialsResponse out;
  const grpc::Status s =
      stub.ListTrials(Deadline(absl::Seconds(60)).get(), r, &out);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return std::vector<v1::Trial>(out.trials().begin(), out.trials().end());
}

bool StudyEnded(v1::StudyState s) {
  return s == v1::STUDY_DONE || s == v1::STUDY_FAILED ||
         s == v1::STUDY_CANCELLED;
}

// Per second of the run: calls started, p50 and p99 over every RPC.
void PrintTimeline(const std::map<std::string, std::vector<Sample>>& all,
                   int64_t start_ns) {
  std::map<int64_t, std::vector<double>> by_second;
  for (const auto& [name, samples] : all) {
    for (const Sample& x : samples) {
      by_second[(x.start_ns - start_ns) / 1'000'000'000].push_back(x.ms);
    }
  }
  absl::PrintF("\n%-8s %8s %9s %9s %9s\n", "second", "calls", "p50_ms",
               "p99_ms", "max_ms");
  for (auto& [second, ms] : by_second) {
    const double max_ms = *std::max_element(ms.begin(), ms.end());
    const double p50 = Percentile(ms, 0.50);
    const double p99 = Percentile(ms, 0.99);
    absl::PrintF("%-8d %8d %9.2f %9.2f %9.2f\n", second, ms.size(), p50, p99,
                 max_ms);
  }
}

int Run(const BenchOptions& o) {
  // 500 agents hold 500 client and 500 server sockets in this one process.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      absl::StrCat("tessera_load_bench_", getpid());
  std::filesystem::create_directories(dir);
  PlannerOptions options;
  options.db_path = (dir / "tessera.db").string();
  options.heartbeat_interval = absl::Milliseconds(o.heartbeat_ms);
  options.lease_poll_interval = absl::Milliseconds(o.lease_poll_ms);
  options.log = Log(LogLevel::kError);  // refits of synthetic results warn
  absl::StatusOr<std::unique_ptr<PlannerServer>> server =
      PlannerServer::Start("127.0.0.1:0", options);
  if (!server.ok()) {
    std::cerr << "planner_load_bench: " << server.status() << "\n";
    return 1;
  }
  const std::string address = (*server)->address();
  auto planner = v1::PlannerService::NewStub(OwnChannel(address));

  std::vector<int64_t> studies;
  for (int64_t i = 0; i < o.studies; ++i) {
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = LoadStudy(i, o);
    v1::SubmitStudyResponse out;
    const grpc::Status s =
        planner->SubmitStudy(Deadline(absl::Seconds(60)).get(), r, &out);
    if (!s.ok()) {
      std::cerr << "planner_load_bench: SubmitStudy: " << s.error_message()
                << "\n";
      return 1;
    }
    studies.push_back(out.study_id());
  }

  absl::Notification stop;
  Tally tally;
  std::vector<Recorder> recorders(
      static_cast<size_t>(o.agents + o.users + o.plan_callers));
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  const int64_t start_ns = SteadyNs();
  for (int64_t i = 0; i < o.agents; ++i) {
    threads.emplace_back(RunAgent, address, i, std::cref(o), std::cref(stop),
                         std::ref(tally),
                         std::ref(recorders[static_cast<size_t>(i)]));
  }
  for (int64_t i = 0; i < o.users; ++i) {
    threads.emplace_back(
        RunUser, address, std::cref(studies), std::cref(stop),
        std::ref(recorders[static_cast<size_t>(o.agents + i)]));
  }

  for (int64_t i = 0; i < o.plan_callers; ++i) {
    threads.emplace_back(
        RunPlanCaller, address, std::cref(stop),
        std::ref(recorders[static_cast<size_t>(o.agents + o.users + i)]));
  }

  // Until every study ended, or the time is up.
  int64_t ended = 0;
  while (absl::Now() - start < absl::Seconds(o.max_duration_s)) {
    absl::SleepFor(absl::Milliseconds(250));
    ended = 0;
    for (int64_t id : studies) {
      v1::GetStudyRequest r;
      r.set_study_id(id);
      v1::GetStudyResponse out;
      if (planner->GetStudy(Deadline(absl::Seconds(30)).get(), r, &out).ok() &&
          StudyEnded(out.study().state())) {
        ++ended;
      }
    }
    if (ended == o.studies) break;
  }
  const double elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
  const int64_t end_ns = SteadyNs();
  stop.Notify();
  for (std::thread& t : threads) t.join();

  std::map<std::string, std::vector<Sample>> all;
  std::string first_error;
  for (const Recorder& r : recorders) r.MergeInto(all, first_error);
  absl::PrintF(
      "planner_load_bench: %d agents (heartbeat %d ms, lease poll %d ms,"
      " trials of %d ms), %d users, %d plan callers, %d studies\n",
      o.agents, o.heartbeat_ms, o.lease_poll_ms, o.trial_ms, o.users,
      o.plan_callers, o.studies);
  // Start-up: every agent connects and registers at once, then sends its
  // first heartbeats and lease polls while the backlog drains (two intervals
  // past the last registration); steady state: the fleet at its own pace.
  int64_t registered_ns = start_ns;
  for (const Sample& r : all["Register"]) {
    registered_ns =
        std::max(registered_ns, r.start_ns + static_cast<int64_t>(r.ms * 1e6));
  }
  const int64_t steady_ns =
      registered_ns + 2'000'000 * std::max(o.heartbeat_ms, o.lease_poll_ms);
  PrintPhase("start-up (agents connect and register at once)", all, start_ns,
             steady_ns);
  PrintPhase("steady state", all, steady_ns, end_ns);
  if (o.timeline) PrintTimeline(all, start_ns);
  if (!first_error.empty()) absl::PrintF("first error: %s\n", first_error);

  const int64_t acked = tally.reports_acked.load();
  const double window_s =
      acked > 1 ? 1e-9 * static_cast<double>(tally.last_report_ns.load() -
                                             tally.first_report_ns.load())
                : 0;
  absl::PrintF(
      "ingestion: %d results acknowledged in %.1f s: %.1f results/s (whole run"
      " %.1f s, %d of %d studies ended)\n",
      acked, window_s, window_s > 0 ? static_cast<double>(acked) / window_s : 0,
      elapsed_s, ended, o.studies);

  // Every acknowledged result stored once, nothing stored that was not.
  int64_t stored = 0;
  bool consistent = true;
  {
    absl::MutexLock lock(&tally.mu);
    for (int64_t id : studies) {
      absl::StatusOr<std::vector<v1::Trial>> trials =
          StoredTrials(*planner, id);
      if (!trials.ok()) {
        std::cerr << "planner_load_bench: ListTrials: " << trials.status()
                  << "\n";
        return 1;
      }
      for (const v1::Trial& t : *trials) {
        if (t.state() != v1::TRIAL_OK) continue;
        ++stored;
        if (!tally.reported_trials.contains(t.id())) {
          consistent = false;
          absl::PrintF("trial %d stored ok but never acknowledged\n", t.id());
        }
      }
    }
    if (stored != acked || tally.duplicate_reports != 0) consistent = false;
    if (acked == 0) {
      consistent = false;
      absl::PrintF("no result was acknowledged: nothing was measured\n");
    }
    absl::PrintF(
        "stored: %d ok trials for %d acknowledged results, %d"
        " duplicates: %s\n",
        stored, acked, tally.duplicate_reports,
        consistent ? "consistent" : "INCONSISTENT");
  }
  (*server)->Shutdown();
  server->reset();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return consistent ? 0 : 1;
}

}  // namespace
}  // namespace tessera::service

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  tessera::FlagSet flags("planner_load_bench");
  std::optional<int64_t> agents, studies, trials, trial_ms, heartbeat_ms,
      poll_ms, users, plan_callers;
  std::optional<double> duration;
  flags.AddInt("agents", "N", "simulated agents (default 500)", &agents);
  flags.AddInt("studies", "N", "studies submitted (default 20)", &studies);
  flags.AddInt("trials-per-study", "N",
               "rung-0 trials of each study (default 32)", &trials);
  flags.AddInt("trial-ms", "MS", "simulated trial length (default 200)",
               &trial_ms);
  flags.AddInt("heartbeat-ms", "MS", "agent heartbeat interval (default 1000)",
               &heartbeat_ms);
  flags.AddInt("lease-poll-ms", "MS", "idle agents' lease poll (default 1000)",
               &poll_ms);
  flags.AddInt("users", "N", "threads querying the studies (default 2)",
               &users);
  flags.AddInt("plan-callers", "N",
               "threads calling the largest Plan back to back (default 0)",
               &plan_callers);
  flags.AddDouble("max-duration-s", "S", "stop after this long (default 120)",
                  &duration);
  bool timeline = false;
  flags.AddSwitch("timeline", "print calls, p50 and p99 per second as well",
                  &timeline);
  if (tessera::FlagSet::WantsHelp(args)) {
    std::cout << flags.Help();
    return 0;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::cerr << "planner_load_bench: " << s.message() << "\n";
    return 2;
  }
  tessera::service::BenchOptions o;
  o.agents = agents.value_or(o.agents);
  o.studies = studies.value_or(o.studies);
  o.trials_per_study = trials.value_or(o.trials_per_study);
  o.trial_ms = trial_ms.value_or(o.trial_ms);
  o.heartbeat_ms = heartbeat_ms.value_or(o.heartbeat_ms);
  o.lease_poll_ms = poll_ms.value_or(o.lease_poll_ms);
  o.users = users.value_or(o.users);
  o.plan_callers = plan_callers.value_or(o.plan_callers);
  o.max_duration_s = duration.value_or(o.max_duration_s);
  o.timeline = timeline;
  if (o.agents < 1 || o.studies < 1 || o.trials_per_study < 1 ||
      o.trial_ms < 0 || o.heartbeat_ms < 1 || o.lease_poll_ms < 1 ||
      o.users < 0 || o.plan_callers < 0 || !(o.max_duration_s > 0)) {
    std::cerr << "planner_load_bench: --agents, --studies, --trials-per-study,"
                 " --heartbeat-ms and --lease-poll-ms must be positive;"
                 " --trial-ms, --users and --plan-callers not negative;"
                 " --max-duration-s"
                 " positive\n";
    return 2;
  }
  return tessera::service::Run(o);
}
