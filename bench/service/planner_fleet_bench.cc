// The planner under a fleet of simulated agents, measured apart from them
// (issue 32). The planner runs as its own process (tessera-planner over a
// SQLite store in a temporary directory) pinned to one CPU with taskset;
// the agents run in this process, pinned to another CPU, thousands of them
// on async gRPC (fleet/simulated_fleet.h: register, heartbeat with the
// running trial, lease when idle, gang rendezvous, report, as tessera-agent
// does), each with its own connection. For each fleet size it prints the
// latency of every RPC (client side, over loopback) in the start-up and the
// steady window, the planner's CPU time over the window (/proc/<pid>/stat:
// cores used and microseconds per RPC answered), this process's own CPU
// (near 1 core: the agents, not the planner, were the limit), results
// acknowledged per second, leases lost (trials that needed a second
// attempt) and the exactly-once check: every acknowledged result is stored
// ok once, and nothing is stored ok that was not acknowledged. Exits 1
// when that check fails or a lease was lost.
//
//   build/bench/service/planner_fleet_bench                  # 50..10000
//   build/bench/service/planner_fleet_bench --agents 2000 --trial-ms 0
//   build/bench/service/planner_fleet_bench --agents 2000 --trial-ms 0
//       --backlog --studies 200 --gang-studies 0 --first-rung 512
//       --max-trials 512 --duration-s 20      # ingestion from a full queue
//   build/bench/service/planner_fleet_bench --agents 2000 --restart-after-s 20
//   build/bench/service/planner_fleet_bench --agents 500
//       --planner-args "--heartbeat-interval-ms 1000"
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/service/fleet/call_table.h"
#include "bench/service/fleet/planner_process.h"
#include "bench/service/fleet/process_cpu.h"
#include "bench/service/fleet/simulated_fleet.h"
#include "core/flags.h"
#include "core/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::bench {
namespace {

struct BenchOptions {
  std::vector<int64_t> agents = {50, 500, 2000, 10000};
  std::string planner_binary;
  int planner_cpu = 0;
  int agents_cpu = 1;
  int64_t studies = 20;
  int64_t gang_studies = 4;  // of the studies, those on 2 nodes
  int64_t first_rung = 64;
  int64_t max_trials = 256;
  int64_t trial_ms = 30000;
  double trial_spread = 0;  // FleetOptions::trial_spread
  double duration_s = 60;
  int64_t agents_per_channel = 1;
  double start_spread_s = 0;
  std::vector<std::string> planner_args;
  std::string planner_log;  // kept after the run; "": in the run's folder
  std::string planner_log_level = "warning";
  double restart_after_s = -1;  // < 0: no restart
  // Agents hold their polls until the studies have queued their first
  // rungs (SimulatedFleet::ReleaseLeases): ingestion from a full queue.
  bool backlog = false;
  bool restart_clean = false;   // SIGTERM instead of SIGKILL
};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<grpc::ClientContext> Deadline(absl::Duration d) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(absl::ToChronoTime(absl::Now() + d));
  return c;
}

v1::StudySpec FleetStudy(int64_t index, bool gang, const BenchOptions& o) {
  v1::StudySpec spec;
  spec.set_name(absl::StrCat("fleet-", index));
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec.mutable_cluster()->set_nodes(gang ? 2 : 1);
  spec.mutable_cluster()->set_gpus_per_node(8);
  spec.mutable_training()->set_global_batch(gang ? 32 : 16);
  spec.mutable_training()->set_seq_len(128);
  spec.mutable_training()->set_total_tokens(1e9);
  v1::TrialOptions* t = spec.mutable_trials();
  t->set_backend("cpu");
  t->set_first_rung(o.first_rung);
  t->set_max_trials(o.max_trials);
  t->set_trial_time_limit_s(std::max(60.0, 4e-3 * o.trial_ms));
  return spec;
}

// One fleet size's outcome.
struct Row {
  int64_t agents = 0;
  int64_t registered = 0;
  int64_t heartbeat_ms = 0;  // as the planner told
  int64_t poll_ms = 0;
  double startup_s = 0;
  double window_s = 0;
  CallStats heartbeat, lease, report;
  double results_per_s = 0;
  // The most results acknowledged in one second of the window (a burst of
  // trials that ended together: what the planner ingests when it must).
  int64_t peak_results_per_s = 0;
  double planner_cores = 0;
  double agents_cores = 0;
  double planner_us_per_rpc = 0;
  double rpcs_per_s = 0;
  int64_t planner_rss_mib = 0;
  int64_t leases_lost = 0;       // trials with attempts > 0
  int64_t running_cancelled = 0;
  int64_t acked = 0;
  bool exactly_once = false;
  // With --backlog: the trials the studies held when the agents began to
  // lease, and those of them not yet acknowledged when the window ended
  // (more than 0: the queue never ran dry, so results/s is the rate the
  // planner ingests from a full queue; a gang trial's wait for its gang is
  // also a poll that finds nothing, so the empty polls do not tell).
  int64_t backlog = 0;
  int64_t backlog_left = 0;
};

// The answer of the planner's `rpc`, which `call(context, &response)`
// makes within `deadline`; UNAVAILABLE naming the rpc when it fails.
template <typename Response, typename Call>
absl::StatusOr<Response> Ask(absl::string_view rpc, absl::Duration deadline,
                             Call call) {
  Response out;
  const grpc::Status s = call(Deadline(deadline).get(), &out);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat(rpc, ": ", s.error_message()));
  }
  return out;
}

absl::StatusOr<std::vector<v1::Trial>> StoredTrials(
    v1::PlannerService::Stub& stub, int64_t study) {
  v1::ListTrialsRequest r;
  r.set_study_id(study);
  r.set_limit(100000);
  TESSERA_ASSIGN_OR_RETURN(
      const v1::ListTrialsResponse out,
      Ask<v1::ListTrialsResponse>(
          "ListTrials", absl::Seconds(120),
          [&](grpc::ClientContext* c, v1::ListTrialsResponse* answer) {
            return stub.ListTrials(c, r, answer);
          }));
  return std::vector<v1::Trial>(out.trials().begin(), out.trials().end());
}

// The trials the studies hold (any state), once the count has stopped
// growing for two seconds (the studies have queued what the idle fleet can
// take); at most two minutes.
absl::StatusOr<int64_t> AwaitQueuedTrials(v1::PlannerService::Stub& stub,
                                          int64_t studies) {
  int64_t last = -1;
  int64_t still = 0;
  const absl::Time give_up = absl::Now() + absl::Minutes(2);
  while (absl::Now() < give_up) {
    v1::ListStudiesRequest r;
    r.set_limit(studies);
    TESSERA_ASSIGN_OR_RETURN(
        const v1::ListStudiesResponse out,
        Ask<v1::ListStudiesResponse>(
            "ListStudies", absl::Seconds(60),
            [&](grpc::ClientContext* c, v1::ListStudiesResponse* answer) {
              return stub.ListStudies(c, r, answer);
            }));
    int64_t total = 0;
    for (const v1::StudySummary& study : out.studies()) {
      total += study.trials_total();
    }
    still = total == last && total > 0 ? still + 1 : 0;
    if (still >= 2) return total;
    last = total;
    absl::SleepFor(absl::Seconds(1));
  }
  return absl::DeadlineExceededError(
      "--backlog: the studies' trials still grew after two minutes");
}

absl::StatusOr<Row> RunFleet(const BenchOptions& o, int64_t agents) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      absl::StrCat("tessera_fleet_bench_", getpid(), "_", agents);
  std::filesystem::create_directories(dir);
  PlannerProcessOptions po;
  po.binary = o.planner_binary;
  po.db_path = (dir / "tessera.db").string();
  po.cpu = o.planner_cpu;
  if (!o.planner_log.empty()) {
    po.log_path = absl::StrCat(o.planner_log, ".", agents);
  }
  po.log_level = o.planner_log_level;
  po.extra_args = {"--no-cluster-probes"};
  po.extra_args.insert(po.extra_args.end(), o.planner_args.begin(),
                       o.planner_args.end());
  absl::StatusOr<std::unique_ptr<PlannerProcess>> planner =
      PlannerProcess::Start(po);
  if (!planner.ok()) return planner.status();
  PlannerProcess& p = **planner;
  auto users = v1::PlannerService::NewStub(
      grpc::CreateChannel(p.address(), grpc::InsecureChannelCredentials()));
  std::vector<int64_t> studies;
  auto submit_studies = [&]() -> absl::Status {
    for (int64_t i = 0; i < o.studies; ++i) {
      v1::SubmitStudyRequest r;
      *r.mutable_spec() = FleetStudy(i, i < o.gang_studies, o);
      TESSERA_ASSIGN_OR_RETURN(
          const v1::SubmitStudyResponse out,
          Ask<v1::SubmitStudyResponse>(
              "SubmitStudy", absl::Seconds(60),
              [&](grpc::ClientContext* c, v1::SubmitStudyResponse* answer) {
                return users->SubmitStudy(c, r, answer);
              }));
      studies.push_back(out.study_id());
    }
    return absl::OkStatus();
  };
  // Without --backlog the studies come first and queue as agents appear.
  if (!o.backlog) {
    if (absl::Status s = submit_studies(); !s.ok()) return s;
  }

  FleetOptions fo;
  fo.agents = agents;
  fo.agents_per_channel = o.agents_per_channel;
  fo.trial = absl::Milliseconds(o.trial_ms);
  fo.trial_spread = o.trial_spread;
  fo.start_spread = absl::Seconds(o.start_spread_s);
  fo.hold_leases = o.backlog;
  SimulatedFleet fleet(p.address(), fo);
  Row row;
  row.agents = agents;
  const int64_t start_ns = SteadyNs();
  fleet.Start();
  // Start-up: every agent registered, then two of the longest interval told
  // (the first heartbeats and polls drain the registration backlog).
  const absl::Time give_up = absl::Now() + absl::Seconds(180);
  while (fleet.registered() < agents && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::SleepFor(absl::Seconds(2));
  if (o.backlog) {
    // Every agent registered and idle, none polling: the studies see the
    // whole fleet and queue their first rungs; the window starts when the
    // agents may lease, from that backlog.
    if (absl::Status s = submit_studies(); !s.ok()) return s;
    absl::StatusOr<int64_t> queued = AwaitQueuedTrials(*users, o.studies);
    if (!queued.ok()) return queued.status();
    row.backlog = *queued;
    fleet.ReleaseLeases();
  }
  const int64_t steady_ns = SteadyNs();
  row.startup_s = 1e-9 * static_cast<double>(steady_ns - start_ns);
  absl::StatusOr<ProcessCpu> planner_before = ReadProcessCpu(p.pid());
  absl::StatusOr<ProcessCpu> self_before = ReadProcessCpu(getpid());
  double planner_cpu_s = 0;
  const absl::Duration window = absl::Seconds(o.duration_s);
  if (o.restart_after_s >= 0 && o.restart_after_s < o.duration_s) {
    absl::SleepFor(absl::Seconds(o.restart_after_s));
    absl::StatusOr<ProcessCpu> at_stop = ReadProcessCpu(p.pid());
    if (at_stop.ok() && planner_before.ok()) {
      planner_cpu_s += at_stop->total_s() - planner_before->total_s();
    }
    absl::PrintF("  %s the planner at %.0f s of the window; restarting\n",
                 o.restart_clean ? "stopping (SIGTERM)" : "killing (SIGKILL)",
                 o.restart_after_s);
    const absl::Status stopped = o.restart_clean ? p.Stop() : p.Kill();
    if (!stopped.ok()) return stopped;
    if (absl::Status s = p.Restart(); !s.ok()) return s;
    planner_before = ReadProcessCpu(p.pid());
    absl::SleepFor(window - absl::Seconds(o.restart_after_s));
  } else {
    absl::SleepFor(window);
  }
  const int64_t end_ns = SteadyNs();
  absl::StatusOr<ProcessCpu> planner_after = ReadProcessCpu(p.pid());
  absl::StatusOr<ProcessCpu> self_after = ReadProcessCpu(getpid());
  absl::StatusOr<int64_t> rss = ReadResidentBytes(p.pid());
  fleet.Stop();
  FleetTally tally = fleet.TakeTally();
  row.registered = fleet.registered();
  row.window_s = 1e-9 * static_cast<double>(end_ns - steady_ns);
  if (planner_before.ok() && planner_after.ok()) {
    planner_cpu_s += planner_after->total_s() - planner_before->total_s();
  }
  row.planner_cores = planner_cpu_s / row.window_s;
  if (self_before.ok() && self_after.ok()) {
    row.agents_cores =
        (self_after->total_s() - self_before->total_s()) / row.window_s;
  }
  row.planner_rss_mib = rss.ok() ? *rss >> 20 : 0;
  row.heartbeat_ms = tally.heartbeat_interval_ms;
  row.poll_ms = tally.lease_poll_interval_ms;

  absl::PrintF("\n== %d agents (%d registered; heartbeat %d ms, lease poll %d"
               " ms as the planner told; trials of %d ms +- %.0f%%)\n",
               agents, row.registered, row.heartbeat_ms, row.poll_ms,
               o.trial_ms, 100 * o.trial_spread);
  PrintCallTable("  start-up (agents connect and register at once)",
                 tally.calls, start_ns, steady_ns);
  PrintCallTable("  steady window", tally.calls, steady_ns, end_ns);
  int64_t rpcs = 0;
  for (const auto& [name, samples] : tally.calls) {
    rpcs += StatsOf(samples, steady_ns, end_ns).calls;
  }
  row.rpcs_per_s = static_cast<double>(rpcs) / row.window_s;
  row.planner_us_per_rpc = rpcs > 0 ? 1e6 * planner_cpu_s / rpcs : 0;
  row.heartbeat = StatsOf(tally.calls["Heartbeat"], steady_ns, end_ns);
  row.lease = StatsOf(tally.calls["LeaseTrial"], steady_ns, end_ns);
  row.report = StatsOf(tally.calls["ReportTrial"], steady_ns, end_ns);
  int64_t acked_in_window = 0;
  for (int64_t t : tally.ack_ns) {
    acked_in_window += t >= steady_ns && t < end_ns ? 1 : 0;
  }
  row.results_per_s = static_cast<double>(acked_in_window) / row.window_s;
  std::map<int64_t, int64_t> per_second;
  for (int64_t t : tally.ack_ns) {
    if (t >= steady_ns && t < end_ns) {
      ++per_second[(t - steady_ns) / 1'000'000'000];
    }
  }
  for (const auto& [second, n] : per_second) {
    row.peak_results_per_s = std::max(row.peak_results_per_s, n);
  }
  row.backlog_left = std::max<int64_t>(row.backlog - acked_in_window, 0);
  row.running_cancelled = tally.running_trials_cancelled;
  row.acked = static_cast<int64_t>(tally.acked_trials.size());
  if (!tally.first_error.empty()) {
    absl::PrintF("  first error: %s\n", tally.first_error);
  }

  // Every acknowledged result stored ok once; nothing stored ok unasked.
  int64_t stored_ok = 0, acked_found = 0;
  bool consistent = tally.duplicate_acks == 0;
  for (int64_t id : studies) {
    absl::StatusOr<std::vector<v1::Trial>> trials = StoredTrials(*users, id);
    if (!trials.ok()) return trials.status();
    for (const v1::Trial& t : *trials) {
      if (t.attempts() > 0) {
        // Why, for the first few: a bench that loses a lease says how.
        if (++row.leases_lost <= 3) {
          absl::PrintF("  trial %d ran %d more time(s): %s\n", t.id(),
                       t.attempts(), t.reason());
        }
      }
      if (t.state() != v1::TRIAL_OK) continue;
      ++stored_ok;
      if (tally.acked_trials.contains(t.id())) {
        ++acked_found;
      } else {
        consistent = false;
        absl::PrintF("  trial %d stored ok but never acknowledged\n", t.id());
      }
    }
  }
  if (acked_found != row.acked) consistent = false;
  row.exactly_once = consistent && row.acked > 0;
  absl::PrintF(
      "  planner: %.2f cores over the window, %.0f us CPU per RPC (%.0f"
      " RPCs/s), %d MiB resident; agents' process: %.2f cores\n"
      "  results: %d acknowledged (%.1f/s in the window, at most %d in one"
      " second), %d stored ok, %d"
      " duplicates, %d refused; leases lost: %d trials needed another"
      " attempt, %d running trials cancelled: %s\n"
      "  leases: %d granted, %d polls found nothing to run%s\n",
      row.planner_cores, row.planner_us_per_rpc, row.rpcs_per_s,
      row.planner_rss_mib, row.agents_cores, row.acked, row.results_per_s,
      row.peak_results_per_s, stored_ok, tally.duplicate_acks,
      tally.reports_refused, row.leases_lost, row.running_cancelled,
      row.exactly_once ? "exactly once" : "INCONSISTENT",
      tally.leases_granted, tally.leases_empty,
      o.backlog ? absl::StrFormat("; backlog: %d trials queued at the first"
                                  " lease, %d of them left at the end%s",
                                  row.backlog, row.backlog_left,
                                  row.backlog_left > 0
                                      ? " (the queue never ran dry)"
                                      : " (it ran dry: results/s understates)")
                : std::string());
  (void)p.Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return row;
}

void PrintSummary(const std::vector<Row>& rows) {
  absl::PrintF(
      "\n| agents | heartbeat / poll (ms) | Heartbeat p50 / p99 (ms) | "
      "LeaseTrial p50 / p99 (ms) | ReportTrial p50 / p99 (ms) | results/s "
      "(peak) | --backlog: trials queued / left | "
      "planner cores | planner us/RPC | RPCs/s | agents' cores | leases lost "
      "| exactly once |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (const Row& r : rows) {
    absl::PrintF(
        "| %d | %d / %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.0f (%d) "
        "| %s | %.2f | %.0f | %.0f | %.2f | %d | %s |\n",
        r.agents, r.heartbeat_ms, r.poll_ms, r.heartbeat.p50_ms,
        r.heartbeat.p99_ms, r.lease.p50_ms, r.lease.p99_ms, r.report.p50_ms,
        r.report.p99_ms, r.results_per_s, r.peak_results_per_s,
        r.backlog > 0 ? absl::StrFormat("%d / %d", r.backlog, r.backlog_left)
                      : std::string("-"),
        r.planner_cores,
        r.planner_us_per_rpc, r.rpcs_per_s, r.agents_cores, r.leases_lost,
        r.exactly_once ? "yes" : "NO");
  }
}

absl::Status PinTo(int cpu) {
  if (cpu < 0) return absl::OkStatus();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--agents-cpu: cannot pin to CPU ", cpu));
  }
  return absl::OkStatus();
}

int Run(const BenchOptions& o) {
  // Each agent holds a connection: thousands of descriptors.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  if (absl::Status s = PinTo(o.agents_cpu); !s.ok()) {
    std::cerr << "planner_fleet_bench: " << s.message() << "\n";
    return 2;
  }
  absl::PrintF(
      "planner_fleet_bench: planner %s on CPU %d, agents on CPU %d; %d studies"
      " (%d on 2 nodes: gang trials), first rung %d, at most %d trials each\n",
      o.planner_binary, o.planner_cpu, o.agents_cpu, o.studies, o.gang_studies,
      o.first_rung, o.max_trials);
  std::vector<Row> rows;
  bool ok = true;
  for (int64_t n : o.agents) {
    absl::StatusOr<Row> row = RunFleet(o, n);
    if (!row.ok()) {
      std::cerr << "planner_fleet_bench: " << n << " agents: " << row.status()
                << "\n";
      return 1;
    }
    ok = ok && row->exactly_once && row->leases_lost == 0;
    rows.push_back(*row);
  }
  PrintSummary(rows);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  tessera::FlagSet flags("planner_fleet_bench");
  std::optional<std::string> agents, planner_binary, planner_args,
      planner_log, planner_log_level;
  std::optional<int64_t> planner_cpu, agents_cpu, studies, gang_studies,
      first_rung, max_trials, trial_ms, per_channel;
  std::optional<double> duration, spread, restart_after, trial_spread;
  bool restart_clean = false, backlog = false;
  flags.AddString("agents", "N[,N...]",
                  "fleet sizes, one run each (default 50,500,2000,10000)",
                  &agents);
  flags.AddString("planner-binary", "FILE",
                  "tessera-planner (default: the one built beside this bench)",
                  &planner_binary);
  flags.AddString("planner-args", "ARGS",
                  "more flags for tessera-planner, space-separated",
                  &planner_args);
  flags.AddString("planner-log", "FILE",
                  "keep the planner's log: FILE.<agents> for each fleet size "
                  "(default: deleted with the run's folder)",
                  &planner_log);
  flags.AddString("planner-log-level", "LEVEL",
                  "the planner's --log (default warning; info names each "
                  "lease lost and re-queued)",
                  &planner_log_level);
  flags.AddInt("planner-cpu", "CPU",
               "pin the planner here with taskset (default 0; -1: not pinned)",
               &planner_cpu);
  flags.AddInt("agents-cpu", "CPU",
               "pin the simulated agents here (default 1; -1: not pinned)",
               &agents_cpu);
  flags.AddInt("studies", "N", "studies submitted (default 20)", &studies);
  flags.AddInt("gang-studies", "N",
               "of those, studies on 2 nodes, whose trials are gangs of 2"
               " agents (default 4)",
               &gang_studies);
  flags.AddInt("first-rung", "N", "each study's first_rung (default 64)",
               &first_rung);
  flags.AddInt("max-trials", "N", "each study's max_trials (default 256)",
               &max_trials);
  flags.AddInt("trial-ms", "MS",
               "how long a simulated trial runs (default 30000; 0: reported"
               " at once, to measure ingestion)",
               &trial_ms);
  flags.AddDouble("trial-spread", "F",
                  "each trial runs --trial-ms times a factor in [1-F, 1+F],"
                  " uniform, fixed per trial (default 0: all exactly"
                  " --trial-ms, so a rung reports in one burst; real trials"
                  " differ by layout)",
                  &trial_spread);
  flags.AddDouble("duration-s", "S",
                  "the steady window after start-up (default 60)", &duration);
  flags.AddInt("agents-per-channel", "N",
               "agents sharing one connection (default 1: one each)",
               &per_channel);
  flags.AddDouble("start-spread-s", "S",
                  "agents start within this (default 0: all at once)",
                  &spread);
  flags.AddDouble("restart-after-s", "S",
                  "kill the planner this far into the window and start it"
                  " again on the same store and port (default: no restart)",
                  &restart_after);
  flags.AddSwitch("restart-clean",
                  "stop the planner with SIGTERM instead of SIGKILL",
                  &restart_clean);
  flags.AddSwitch("backlog",
                  "agents register, then the studies are submitted and queue"
                  " their first rungs for the idle fleet, then the agents"
                  " lease: with --trial-ms 0, the rate the planner ingests"
                  " results from a full queue",
                  &backlog);
  if (tessera::FlagSet::WantsHelp(args)) {
    std::cout << flags.Help();
    return 0;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::cerr << "planner_fleet_bench: " << s.message() << "\n";
    return 2;
  }
  tessera::bench::BenchOptions o;
  if (agents.has_value()) {
    o.agents.clear();
    for (absl::string_view part : absl::StrSplit(*agents, ',')) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(part, &n) || n < 1) {
        std::cerr << "planner_fleet_bench: --agents: '" << part
                  << "' is not a positive count\n";
        return 2;
      }
      o.agents.push_back(n);
    }
  }
  o.planner_binary =
      planner_binary.value_or((std::filesystem::canonical("/proc/self/exe")
                                   .parent_path() /
                               "../../service/tessera-planner")
                                  .lexically_normal()
                                  .string());
  if (planner_args.has_value()) {
    o.planner_args =
        absl::StrSplit(*planner_args, ' ', absl::SkipWhitespace());
  }
  o.planner_log = planner_log.value_or("");
  o.planner_log_level = planner_log_level.value_or(o.planner_log_level);
  o.planner_cpu = static_cast<int>(planner_cpu.value_or(o.planner_cpu));
  o.agents_cpu = static_cast<int>(agents_cpu.value_or(o.agents_cpu));
  o.studies = studies.value_or(o.studies);
  o.gang_studies = gang_studies.value_or(o.gang_studies);
  o.first_rung = first_rung.value_or(o.first_rung);
  o.max_trials = max_trials.value_or(o.max_trials);
  o.trial_ms = trial_ms.value_or(o.trial_ms);
  o.trial_spread = trial_spread.value_or(o.trial_spread);
  o.duration_s = duration.value_or(o.duration_s);
  o.agents_per_channel = per_channel.value_or(o.agents_per_channel);
  o.start_spread_s = spread.value_or(o.start_spread_s);
  o.restart_after_s = restart_after.value_or(-1);
  o.restart_clean = restart_clean;
  o.backlog = backlog;
  if (o.studies < 1 || o.gang_studies < 0 || o.gang_studies > o.studies ||
      o.first_rung < 1 || o.max_trials < o.first_rung || o.trial_ms < 0 ||
      !(o.duration_s > 0) || o.agents_per_channel < 1 ||
      o.start_spread_s < 0 || !(o.trial_spread >= 0 && o.trial_spread < 1)) {
    std::cerr << "planner_fleet_bench: --studies, --first-rung and"
                 " --duration-s must be positive, --gang-studies at most"
                 " --studies, --max-trials at least --first-rung,"
                 " --trial-ms and --start-spread-s not negative,"
                 " --trial-spread in [0, 1)\n";
    return 2;
  }
  return tessera::bench::Run(o);
}
