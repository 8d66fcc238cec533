// tessera-agent: the daemon that runs trials for a planner on this host.
// It registers with the planner, heartbeats, reports probes of this host,
// leases trials and runs each with tessera-trial (one process with thread
// ranks on CPU, one per GPU rank on CUDA or across agents), and reports one
// typed result per lease (agents/agent.h).
//
//   tessera-agent --planner 127.0.0.1:50051 --backend cpu --cpu-ranks 4
//   tessera-agent --planner planner:50051 --tls-ca ca.pem
//                 --auth-token-file token     # a planner serving TLS
//
// SIGTERM or SIGINT: no more leases; a running trial gets --drain-timeout-s
// to finish and be reported, else it is killed and handed back; exit 0. A
// second signal kills the trial at once and exits 128 + the signal. A
// finished result whose report has not got through by then stays in
// --spool-dir and is reported at the next start (agents/result_spool.h).
// Exit status 2: a bad command line; 1: the agent could not start (no work
// folder, --backend cuda without a GPU).
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "agents/command_policy.h"
#include "agents/event_log.h"
#include "agents/files.h"
#include "agents/hardware.h"
#include "agents/planner_client.h"
#include "agents/run_as_check.h"
#include "core/flags.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "core/usable_cpus.h"
#include "core/version.h"
#include "proto/transport_security.h"

#ifndef TESSERA_TRIAL_BUILD_PATH
#define TESSERA_TRIAL_BUILD_PATH ""
#endif

namespace tessera::agents {
namespace {

struct AgentFlags {
  std::optional<std::string> planner, id, backend, address, work_dir, spool_dir,
      trial_binary, log, tls_ca, token_file, tls_cert, tls_key, command_policy;
  std::optional<int64_t> cpu_ranks;
  std::optional<double> drain_timeout_s;

  void Register(FlagSet& f) {
    f.AddString("planner", "HOST:PORT", "the planner's address (required)",
                &planner);
    f.AddString("id", "ID",
                "this agent's stable id (default: <hostname>-<backend>)", &id);
    f.AddString("backend", "NAME",
                "auto (default: cuda when a GPU is found, else cpu), cuda, "
                "cpu, or command (run studies' own training commands on "
                "this host's GPUs, else its CPU)",
                &backend);
    f.AddInt("cpu-ranks", "N",
             "thread ranks offered by the cpu backend (default: the CPUs "
             "this agent may run on, its taskset/cgroup affinity, at least "
             "2)",
             &cpu_ranks);
    f.AddString("address", "HOST",
                "what other agents' trial processes dial for rendezvous "
                "(default 127.0.0.1)",
                &address);
    f.AddString("work-dir", "DIR",
                "where trials run; failed trials' folders are kept (default: a "
                "new folder under $TMPDIR, removed at exit)",
                &work_dir);
    f.AddString("spool-dir", "DIR",
                "where finished results wait until the planner has them "
                "(mode 0700); what is left there is reported at the next "
                "start, so keep it across restarts (default: <work-dir>/spool; "
                "without --work-dir, $TMPDIR/tessera-agent-<id>-spool)",
                &spool_dir);
    f.AddString("trial-binary", "PATH",
                "tessera-trial to run (default: next to this program, then "
                "the build tree's, then PATH)",
                &trial_binary);
    f.AddDouble("drain-timeout-s", "S",
                "on SIGTERM, how long a running trial may finish (default "
                "30)",
                &drain_timeout_s);
    f.AddString("log", "FILE", "append the log here (default: stderr)", &log);
    f.AddString("command-policy", "FILE",
                "backend command: the commands this agent runs and the "
                "unprivileged user they run as (rules run-as, template, "
                "program; see docs/security.md); without it every "
                "command is refused",
                &command_policy);
    f.AddSection("Security (as the planner serves; default plaintext)");
    f.AddString("tls-ca", "FILE",
                "dial the planner over TLS, its certificate checked against "
                "these PEM CA certificates",
                &tls_ca);
    f.AddString("auth-token-file", "FILE",
                "send this file's token on every call (needs --tls-ca)",
                &token_file);
    f.AddString("tls-cert", "FILE",
                "present this client certificate (its common name must be "
                "the agent id) to a planner serving --tls-client-ca; needs "
                "--tls-ca",
                &tls_cert);
    f.AddString("tls-key", "FILE",
                "the client certificate's PEM private key (0600)", &tls_key);
  }
};

bool Executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// tessera-trial next to this executable, then the one this build made,
// then the bare name (posix_spawnp searches PATH).
std::string DefaultTrialBinary() {
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    if (Executable(dir + "/tessera-trial")) return dir + "/tessera-trial";
  }
  if (Executable(TESSERA_TRIAL_BUILD_PATH)) return TESSERA_TRIAL_BUILD_PATH;
  return "tessera-trial";
}

std::string Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

// Waits for SIGTERM/SIGINT (blocked in every thread): the first stops the
// agent gracefully, the second kills its children and leaves at once.
class SignalWatcher {
 public:
  explicit SignalWatcher(Agent* agent)
      : thread_([this, agent] { Watch(agent); }) {}
  ~SignalWatcher() {
    done_ = true;
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  void Watch(Agent* agent) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int received = 0;
    const timespec tick = {0, 100 * 1000 * 1000};
    while (!done_) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig <= 0) continue;
      if (++received == 1) {
        agent->Stop();
      } else {
        agent->KillChildren();
        _exit(128 + sig);
      }
    }
  }

  std::atomic<bool> done_{false};
  std::thread thread_;
};

// --command-policy read, and refused when it allows commands without a
// run-as user while the agent runs as root or holds credentials.
absl::StatusOr<CommandPolicy> CheckedCommandPolicy(const AgentFlags& f) {
  CommandPolicy policy;
  if (f.command_policy.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(policy, ReadCommandPolicyFile(*f.command_policy));
  }
  const bool allows_commands =
      !policy.templates.empty() || !policy.programs.empty();
  const bool holds_secrets = f.token_file.has_value() || f.tls_key.has_value();
  if (allows_commands && !policy.run_as.has_value() &&
      (holds_secrets || ::geteuid() == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--command-policy ", policy.source,
        ": allows commands but names no run-as user; they would run ",
        ::geteuid() == 0 ? "as root" : "as this agent's user",
        holds_secrets ? " and could read its credentials" : "",
        " (add 'run-as USER': an unprivileged account)"));
  }
  return policy;
}

// The agent's options from its flags and the hardware it detects: what it
// tells the planner (AgentInfo), its trial backend (a backend that runs on
// any device, the command backend, takes what "auto" finds), the
// tessera-trial binary and the drain time. INVALID_ARGUMENT for a bad
// backend or device.
absl::StatusOr<AgentOptions> AgentOptionsOf(const AgentFlags& f,
                                            CommandPolicy policy,
                                            Hardware* hardware) {
  std::string trial_backend = f.backend.value_or("auto");
  HardwareOptions hw_options;
  hw_options.backend = trial_backend;
  if (absl::StatusOr<const TrialBackend*> kind =
          FindTrialBackend(trial_backend);
      kind.ok() && (*kind)->any_device) {
    hw_options.backend = "auto";
  } else {
    trial_backend.clear();  // the hardware's
  }
  hw_options.cpu_ranks = f.cpu_ranks;
  TESSERA_ASSIGN_OR_RETURN(*hardware, DetectHardware(hw_options));
  const Hardware& hw = *hardware;
  const std::string hostname = Hostname();
  AgentOptions options;
  options.command_policy = std::move(policy);
  v1::AgentInfo& info = options.info;
  if (trial_backend.empty()) trial_backend = hw.backend;
  info.set_agent_id(f.id.value_or(absl::StrCat(hostname, "-", trial_backend)));
  info.set_hostname(hostname);
  info.set_backend(trial_backend);
  options.device_backend = hw.backend;
  info.set_gpu_name(hw.device_name);
  info.set_gpu_count(hw.ranks);
  info.set_memory_bytes(hw.memory_bytes);
  info.set_driver(hw.driver);
  info.set_interconnect(hw.interconnect);
  info.set_address(f.address.value_or("127.0.0.1"));
  // Children run in their trial's folder: relative paths would not resolve
  // there.
  options.trial_binary = f.trial_binary.value_or(DefaultTrialBinary());
  if (options.trial_binary.find('/') != std::string::npos) {
    options.trial_binary = std::filesystem::absolute(options.trial_binary);
  }
  if (f.drain_timeout_s.has_value()) {
    options.drain_timeout = absl::Seconds(*f.drain_timeout_s);
  }
  return options;
}

// The work folder (--work-dir, or a new one under $TMPDIR) and the spool
// (--spool-dir, or beside a temporary work folder, never in it: that one
// goes at exit; `*temp_spool_dir` is then set). With a run-as user, the
// proof before anything runs that it reaches none of the agent's secrets
// nor its spool.
absl::Status PrepareFolders(const AgentFlags& f, AgentOptions& options,
                            std::string* temp_spool_dir) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string tmp_root = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  const std::string& id = options.info.agent_id();
  if (f.work_dir.has_value()) {
    options.work_dir = std::filesystem::absolute(*f.work_dir);
  } else {
    absl::StatusOr<std::string> dir = MakeUniqueDirectory(
        tmp_root, absl::StrCat("tessera-agent-", id, "-"));
    if (!dir.ok()) {
      return absl::Status(dir.status().code(),
                          absl::StrCat("--work-dir: ", dir.status().message()));
    }
    options.work_dir = *dir;
  }
  if (f.spool_dir.has_value()) {
    options.spool_dir = std::filesystem::absolute(*f.spool_dir);
  } else if (!f.work_dir.has_value()) {
    *temp_spool_dir = absl::StrCat(tmp_root, "/tessera-agent-", id, "-spool");
    options.spool_dir = *temp_spool_dir;
  }
  const CommandPolicy& policy = options.command_policy;
  if (policy.run_as.has_value()) {
    const std::string spool = options.spool_dir.empty()
                                  ? options.work_dir + "/spool"
                                  : options.spool_dir;
    if (absl::Status s = MakeDirectories(spool); s.ok()) {
      (void)::chmod(spool.c_str(), 0700);
    }
    if (absl::Status s = CheckRunAsIsolation(
            *policy.run_as,
            {f.token_file.value_or(""), f.tls_key.value_or(""), spool});
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("--command-policy ",
                                                 policy.source, ": ",
                                                 s.message()));
    }
  }
  return absl::OkStatus();
}

// What the agent will run, said once at start-up.
void LogStartup(const AgentOptions& options, const Hardware& hw,
                EventLog& log) {
  const CommandPolicy& policy = options.command_policy;
  const std::string& trial_backend = options.info.backend();
  if (RunsCommand(trial_backend)) {
    log.Log(policy.source.empty()
                ? std::string("commands: no --command-policy, every study "
                              "command is refused")
                : absl::StrCat("commands: ", policy.templates.size(),
                               " template(s) and ", policy.programs.size(),
                               " program(s) allowed by ", policy.source,
                               policy.run_as.has_value()
                                   ? absl::StrCat(", run as ",
                                                  policy.run_as->name)
                                   : std::string(", run as this agent's user")));
  }
  // The CPUs this agent's trials may use (its affinity mask): two agents
  // on one host should show disjoint ones (docs/deployment.md).
  log.Log(absl::StrCat(
      "trials: ", trial_backend, "; hardware: ", hw.backend, ", ", hw.ranks,
      " x ", hw.device_name, ", ", hw.memory_bytes, " bytes each",
      hw.note.empty() ? "" : " (", hw.note, hw.note.empty() ? "" : ")",
      "; usable CPUs: ", UsableCpuCount()));
}

int Main(const std::vector<std::string>& args) {
  FlagSet flags("tessera-agent");
  AgentFlags f;
  f.Register(flags);
  if (FlagSet::WantsVersion(args)) {
    std::cout << tessera::VersionLine("tessera-agent") << "\n";
    return 0;
  }
  if (FlagSet::WantsHelp(args)) {
    std::cout << "tessera-agent: run trials for a tessera planner\n\n"
              << flags.Help();
    return 0;
  }
  // A missing --planner is reported with any bad flag, one line each.
  flags.AddRequirement([](const auto& given) {
    return given("planner")
               ? std::vector<std::string>{}
               : std::vector<std::string>{"--planner: required (HOST:PORT)"};
  });
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (f.drain_timeout_s.has_value() && *f.drain_timeout_s < 0) {
    std::cerr << "--drain-timeout-s: must not be negative\n";
    return 2;
  }
  // What a command agent runs, and as whom: the operator's decision.
  absl::StatusOr<CommandPolicy> policy = CheckedCommandPolicy(f);
  if (!policy.ok()) {
    std::cerr << policy.status().message() << "\n";
    return 2;
  }

  // Signals go to the watcher thread only: block them before any thread
  // (gRPC's included) starts. Children get an empty mask (process.h).
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // After the mask: making credentials starts gRPC's threads.
  PlannerClientOptions client_options;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsFromFiles({.ca_file = f.tls_ca.value_or(""),
                                   .token_file = f.token_file.value_or(""),
                                   .cert_file = f.tls_cert.value_or(""),
                                   .key_file = f.tls_key.value_or("")});
  if (!credentials.ok()) {
    std::cerr << credentials.status().message() << "\n";
    return 2;
  }
  client_options.credentials = *std::move(credentials);

  Hardware hw;
  absl::StatusOr<AgentOptions> options =
      AgentOptionsOf(f, *std::move(policy), &hw);
  if (!options.ok()) {
    std::cerr << options.status().message() << "\n";
    return absl::IsInvalidArgument(options.status()) ? 2 : 1;
  }
  std::FILE* log_file = stderr;
  if (f.log.has_value()) {
    log_file = std::fopen(f.log->c_str(), "a");
    if (log_file == nullptr) {
      std::cerr << "--log: cannot open '" << *f.log << "'\n";
      return 1;
    }
  }
  EventLog log(log_file, options->info.agent_id());
  std::string temp_spool_dir;
  if (absl::Status s = PrepareFolders(f, *options, &temp_spool_dir); !s.ok()) {
    log.Log(std::string(s.message()));
    return 1;
  }
  LogStartup(*options, hw, log);

  std::unique_ptr<PlannerClient> planner =
      PlannerClient::Connect(*f.planner, client_options);
  Agent agent(*options, planner.get(), &log);
  absl::Status result;
  {
    SignalWatcher watcher(&agent);
    result = agent.Run();
  }
  if (!f.work_dir.has_value()) (void)RemoveTree(options->work_dir);
  // Only when empty: what is spooled there waits for the next start.
  if (!temp_spool_dir.empty()) (void)::rmdir(temp_spool_dir.c_str());
  if (!result.ok()) {
    log.Log(absl::StrCat("error: ", result.message()));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessera::agents

int main(int argc, char** argv) {
  return tessera::agents::Main(std::vector<std::string>(argv + 1, argv + argc));
}
