// tessera-planner: the planner service (PlannerService and AgentService on
// one gRPC server) over a SQLite history file.
//
//   tessera-planner --listen 127.0.0.1:0 --db /tmp/t.db
//   # stdout, first line: "listening on 127.0.0.1:43127"
//   tessera-planner --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0
//   # then a second line: "metrics on 127.0.0.1:43128" (GET /metrics)
//   tessera-planner --listen 127.0.0.1:0 --http 127.0.0.1:8080
//   # then "dashboard on http://127.0.0.1:8080/" (dashboard/)
//
// The gRPC port also serves grpc.health.v1.Health (service/health.h).
//
// With --tls-cert and --tls-key it serves TLS; with --auth-token-file too,
// only calls that carry the token (proto/transport_security.h).
//
// SIGTERM or SIGINT shut the server down cleanly (every write is already
// durable in the store). Exit codes: 0 after a signal, 2 for bad flags, 1
// when the store or the address cannot be opened.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/flags.h"
#include "core/status_macros.h"
#include "core/version.h"
#include "dashboard/dashboard_server.h"
#include "db/sqlite_trial_store.h"
#include "db/store_backup.h"
#include "service/log.h"
#include "service/server.h"
#include "service/trial_invalidation.h"
#include "proto/transport_security.h"

namespace {

using tessera::FlagSet;
using tessera::service::Log;
using tessera::service::LogLevel;
using tessera::service::PlannerOptions;
using tessera::service::PlannerServer;

// --invalidate-trial: the exit status 2 for bad input, 1 for other errors.
int InvalidateTrial(const std::string& db_path, int64_t trial_id,
                    const std::string& reason) {
  if (reason.empty()) {
    std::cerr << "tessera-planner: --invalidate-trial needs --reason TEXT "
                 "(why the trial's result is wrong)\n";
    return 2;
  }
  if (std::error_code ec; !std::filesystem::exists(db_path, ec)) {
    std::cerr << "tessera-planner: --db " << db_path
              << ": no such store (--invalidate-trial creates none)\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<tessera::db::SqliteTrialStore>> store =
      tessera::db::SqliteTrialStore::Open(db_path, {});
  absl::StatusOr<tessera::service::Invalidation> done =
      store.ok()
          ? tessera::service::InvalidateTrialAndRecalibrate(**store, trial_id,
                                                            reason)
          : absl::StatusOr<tessera::service::Invalidation>(store.status());
  if (!done.ok()) {
    std::cerr << "tessera-planner: " << done.status().message() << "\n";
    const absl::StatusCode code = done.status().code();
    return code == absl::StatusCode::kInvalidArgument ||
                   code == absl::StatusCode::kNotFound ||
                   code == absl::StatusCode::kFailedPrecondition
               ? 2
               : 1;
  }
  std::cout << "trial " << trial_id << " is invalid: " << reason << "\n";
  for (const std::string& line : done->recalibrated) {
    std::cout << "  " << line << "\n";
  }
  if (done->recalibrated.empty()) {
    std::cout << "  no calibration was fitted with it\n";
  }
  return 0;
}

// Every flag of tessera-planner; unset: the default.
struct PlannerFlags {
  std::optional<std::string> listen, db, log_level, tls_cert, tls_key,
      token_file, metrics_listen, backup, invalidation_reason, principals_file,
      client_ca, http_listen;
  std::optional<int64_t> heartbeat_ms, invalidate_trial;
  std::optional<double> lease_timeout_s, agent_timeout_s, heartbeats_per_s,
      polls_per_s;
  std::optional<int64_t> plan_threads, plan_queue;
  bool no_cluster_probes = false;
};

void AddFlags(FlagSet* flags, PlannerFlags* f) {
  flags->AddString("listen", "HOST:PORT",
                  "where to serve (default 127.0.0.1:50051; port 0 picks a "
                  "free one and prints it); the port also serves the gRPC "
                  "health service (grpc.health.v1.Health: \"\", "
                  "tessera.v1.PlannerService, tessera.v1.AgentService)",
                  &f->listen);
  flags->AddString("metrics-listen", "HOST:PORT",
                  "serve Prometheus metrics at http://HOST:PORT/metrics "
                  "(trials, studies and agents by state, the store's size, "
                  "RPC latency by method); port 0 picks a free one and "
                  "prints \"metrics on HOST:PORT\" after the listening line "
                  "(default: not served)",
                  &f->metrics_listen);
  flags->AddString("http", "HOST:PORT",
                  "serve the live dashboard at http://HOST:PORT/ (https with "
                  "--tls-cert): the studies and each study's trials as they "
                  "land, read-only, for the callers the gRPC port lets in "
                  "(their token); port 0 picks a free one and prints "
                  "\"dashboard on URL\" after the listening line (default: not "
                  "served)",
                  &f->http_listen);
  flags->AddString("db", "FILE",
                  "the SQLite history (default ./tessera.db; created when "
                  "absent)",
                  &f->db);
  flags->AddString("backup", "FILE",
                  "copy the --db store, consistently, into the new FILE "
                  "(0600; never overwritten) and exit; works while a planner "
                  "serves that store. Restore by copying FILE back while the "
                  "planner is stopped",
                  &f->backup);
  flags->AddInt("invalidate-trial", "ID",
               "mark the --db store's finished trial ID invalid (its result "
               "was wrong: say why with --reason), fit every calibration it "
               "was part of again without it, print what changed and exit; "
               "works while a planner serves that store",
               &f->invalidate_trial);
  flags->AddString("reason", "TEXT", "why --invalidate-trial's result is wrong",
                  &f->invalidation_reason);
  flags->AddInt("heartbeat-interval-ms", "MS",
               "how often agents heartbeat and poll for trials, at least "
               "(default 1000; longer for a large fleet: --max-heartbeats-per-s)",
               &f->heartbeat_ms);
  flags->AddDouble("lease-timeout-s", "S",
                  "a lease ends this long after its last heartbeat (default "
                  "10)",
                  &f->lease_timeout_s);
  flags->AddDouble("agent-timeout-s", "S",
                  "an agent silent this long is marked gone and its trials "
                  "re-queued (default 30)",
                  &f->agent_timeout_s);
  flags->AddDouble("max-heartbeats-per-s", "N",
                  "the fleet's heartbeats a second the planner plans for: "
                  "past it, agents are told a longer interval, and the lease "
                  "and agent timeouts grow with it (default 2000; 0: the "
                  "intervals stay fixed)",
                  &f->heartbeats_per_s);
  flags->AddDouble("max-lease-polls-per-s", "N",
                  "likewise for idle agents' lease polls (default 2000)",
                  &f->polls_per_s);
  flags->AddInt("plan-threads", "N",
               "Plan and Predict calls searched at once, on their own "
               "lower-priority threads so that agents' heartbeats, leases "
               "and reports go first (default 2)",
               &f->plan_threads);
  flags->AddInt("plan-queue", "N",
               "Plan and Predict calls waiting beyond those; more are "
               "refused with RESOURCE_EXHAUSTED (default 16)",
               &f->plan_queue);
  flags->AddSwitch("no-cluster-probes",
                  "do not have agents measure the collectives between them "
                  "before a study's trials (service/cluster_probe.h); "
                  "plans then use the GPU preset's link figures or an "
                  "imported calibration's",
                  &f->no_cluster_probes);
  flags->AddString("log", "LEVEL",
                  "stderr log level: debug, info (default), warning, error, "
                  "off",
                  &f->log_level);
  flags->AddSection("Security (off by default: plaintext, no token)");
  flags->AddString("tls-cert", "FILE",
                  "serve TLS with this PEM certificate chain (naming the "
                  "host clients dial)",
                  &f->tls_cert);
  flags->AddString("tls-key", "FILE", "the certificate's PEM private key",
                  &f->tls_key);
  flags->AddString("auth-token-file", "FILE",
                  "accept only calls that carry this file's token (needs "
                  "TLS); every holder may do everything",
                  &f->token_file);
  flags->AddString("principals-file", "FILE",
                  "instead of one token: 'ROLE NAME TOKEN' lines (roles "
                  "agent, user, command-user, admin; an agent's name is its "
                  "agent id), so that agents act only as themselves, users "
                  "cancel only their own studies and only command-users and "
                  "admins submit command studies (proto/principals.h; needs TLS; 0600)",
                  &f->principals_file);
  flags->AddString("tls-client-ca", "FILE",
                  "also accept agents by client certificate: PEM "
                  "certificates that sign them; the certificate's common "
                  "name is the agent's id",
                  &f->client_ca);
}

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// The serving options of `f`; INVALID_ARGUMENT naming the flag.
absl::StatusOr<PlannerOptions> OptionsFromFlags(const PlannerFlags& f) {
  PlannerOptions options;
  LogLevel level = LogLevel::kInfo;
  if (f.log_level.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(level,
                             tessera::service::ParseLogLevel(*f.log_level));
  }
  options.db_path = f.db.value_or("tessera.db");
  options.log = Log(level);
  options.cluster_probes = !f.no_cluster_probes;
  options.metrics_listen = f.metrics_listen.value_or("");
  if (f.heartbeat_ms.has_value()) {
    if (*f.heartbeat_ms < 1) {
      return Invalid("--heartbeat-interval-ms: must be positive");
    }
    options.heartbeat_interval = absl::Milliseconds(*f.heartbeat_ms);
    options.lease_poll_interval = options.heartbeat_interval;
  }
  const std::pair<const char*, const std::optional<double>*> durations[] = {
      {"--lease-timeout-s", &f.lease_timeout_s},
      {"--agent-timeout-s", &f.agent_timeout_s}};
  for (const auto& [name, value] : durations) {
    if (value->has_value() && !(**value > 0)) {
      return Invalid(absl::StrCat(name, ": must be positive"));
    }
  }
  if (f.plan_threads.has_value() &&
      (*f.plan_threads < 1 || *f.plan_threads > 256)) {
    return Invalid(absl::StrCat("--plan-threads: must be 1 to 256, got ",
                                *f.plan_threads));
  }
  if (f.plan_queue.has_value() && (*f.plan_queue < 0 || *f.plan_queue > 10000)) {
    return Invalid(absl::StrCat("--plan-queue: must be 0 to 10000, got ",
                                *f.plan_queue));
  }
  if (f.plan_threads) {
    options.search_pool.threads = static_cast<int>(*f.plan_threads);
  }
  if (f.plan_queue) {
    options.search_pool.max_queued = static_cast<int>(*f.plan_queue);
  }
  for (const auto& [name, value] :
       {std::pair{"--max-heartbeats-per-s", f.heartbeats_per_s},
        std::pair{"--max-lease-polls-per-s", f.polls_per_s}}) {
    if (value.has_value() && *value < 0) {
      return Invalid(absl::StrCat(
          name, ": must be 0 (fixed intervals) or positive, got ", *value));
    }
  }
  if (f.heartbeats_per_s) options.max_heartbeats_per_s = *f.heartbeats_per_s;
  if (f.polls_per_s) options.max_lease_polls_per_s = *f.polls_per_s;
  if (f.lease_timeout_s) {
    options.lease_timeout = absl::Seconds(*f.lease_timeout_s);
  }
  if (f.agent_timeout_s) {
    options.agent_timeout = absl::Seconds(*f.agent_timeout_s);
  }
  return options;
}

// Serves until SIGTERM or SIGINT: the gRPC server, and the dashboard with
// --http. 0 after a signal, 2 for bad security files, 1 when the store or an
// address cannot be opened.
int Serve(PlannerOptions options, const PlannerFlags& f) {
  // Each agent holds a connection: a fleet of thousands needs as many
  // descriptors (the soft limit is often 1024; the hard one is the
  // operator's: LimitNOFILE in the systemd unit).
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  // Signals go to the main thread's sigwait, never to a gRPC thread: block
  // them before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // After the mask: making credentials starts gRPC's threads.
  absl::StatusOr<tessera::ServerSecurity> security =
      tessera::ServerSecurityFromFiles(
          {.cert_file = f.tls_cert.value_or(""),
           .key_file = f.tls_key.value_or(""),
           .token_file = f.token_file.value_or(""),
           .principals_file = f.principals_file.value_or(""),
           .client_ca_file = f.client_ca.value_or("")});
  if (!security.ok()) {
    std::cerr << "tessera-planner: " << security.status().message() << "\n";
    return 2;
  }
  options.credentials = security->credentials;
  options.callers = security->callers;

  const Log log = options.log;
  absl::StatusOr<std::unique_ptr<PlannerServer>> server =
      PlannerServer::Start(f.listen.value_or("127.0.0.1:50051"), options);
  if (!server.ok()) {
    std::cerr << "tessera-planner: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << "listening on " << (*server)->address() << std::endl;
  if (!options.metrics_listen.empty()) {
    std::cout << "metrics on " << (*server)->metrics_address() << std::endl;
  }
  // The dashboard reads the store the planner writes (its own read-only
  // connection) and lets in whom the gRPC port lets in.
  std::unique_ptr<tessera::dashboard::DashboardServer> dashboard;
  if (f.http_listen.has_value()) {
    tessera::dashboard::DashboardOptions d{.listen = *f.http_listen,
                                           .db_path = options.db_path,
                                           .callers = options.callers};
    if (f.tls_cert.has_value() && f.tls_key.has_value()) {
      absl::StatusOr<std::string> cert = tessera::ReadFile(*f.tls_cert);
      absl::StatusOr<std::string> key = tessera::ReadFile(*f.tls_key);
      if (!cert.ok() || !key.ok()) {
        std::cerr << "tessera-planner: --http: "
                  << (!cert.ok() ? cert.status() : key.status()).message()
                  << "\n";
        return 1;
      }
      d.tls_cert_pem = *std::move(cert);
      d.tls_key_pem = *std::move(key);
    }
    absl::StatusOr<std::unique_ptr<tessera::dashboard::DashboardServer>>
        started = tessera::dashboard::DashboardServer::Start(std::move(d));
    if (!started.ok()) {
      std::cerr << "tessera-planner: " << started.status().message() << "\n";
      return started.status().code() == absl::StatusCode::kInvalidArgument ? 2
                                                                           : 1;
    }
    dashboard = *std::move(started);
    std::cout << "dashboard on " << dashboard->url() << std::endl;
  }
  log.Info(absl::StrCat("serving on ", (*server)->address(), ", history in ",
                        options.db_path));
  int signal = 0;
  sigwait(&stop_signals, &signal);
  log.Info(absl::StrCat("signal ", signal, ": shutting down"));
  dashboard.reset();
  (*server)->Shutdown();
  server->reset();
  log.Info("stopped");
  return 0;
}

int Run(const std::vector<std::string>& args) {
  PlannerFlags f;
  FlagSet flags("tessera-planner");
  AddFlags(&flags, &f);
  if (FlagSet::WantsVersion(args)) {
    std::cout << tessera::VersionLine("tessera-planner") << "\n";
    return 0;
  }
  if (FlagSet::WantsHelp(args)) {
    std::cout << "usage: tessera-planner [flags]\n\n" << flags.Help();
    return 0;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::cerr << "tessera-planner: " << s.message() << "\n";
    return 2;
  }
  if (f.backup.has_value()) {
    const std::string store = f.db.value_or("tessera.db");
    const absl::Status s = tessera::db::BackupStore(store, *f.backup);
    if (!s.ok()) {
      std::cerr << "tessera-planner: " << s.message() << "\n";
      return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
    }
    std::cout << "backed up " << store << " to " << *f.backup << "\n";
    return 0;
  }
  if (f.invalidate_trial.has_value()) {
    return InvalidateTrial(f.db.value_or("tessera.db"), *f.invalidate_trial,
                           f.invalidation_reason.value_or(""));
  }
  absl::StatusOr<PlannerOptions> options = OptionsFromFlags(f);
  if (!options.ok()) {
    std::cerr << "tessera-planner: " << options.status().message() << "\n";
    return 2;
  }
  return Serve(*std::move(options), f);
}

}  // namespace

int main(int argc, char** argv) {
  return Run(std::vector<std::string>(argv + 1, argv + argc));
}
