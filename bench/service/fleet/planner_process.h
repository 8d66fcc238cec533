// A tessera-planner process for the fleet bench: started from its binary,
// pinned to one CPU with taskset (so that the planner is measured on a core
// of its own), its address read from its first line ("listening on
// HOST:PORT"), its stderr kept in a file, stopped with SIGTERM or killed
// with SIGKILL and started again on the same store and port (a restart).
//
//   PlannerProcessOptions o{.binary = "build/service/tessera-planner",
//                           .db_path = "/tmp/x/tessera.db", .cpu = 0};
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<PlannerProcess> p,
//                            PlannerProcess::Start(o));
//   ReadProcessCpu(p->pid());  // process_cpu.h
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tessera::bench {

struct PlannerProcessOptions {
  std::string binary;   // tessera-planner
  std::string db_path;  // its --db
  std::string log_path;  // its stderr; "": <db_path>.log
  std::string log_level = "warning";  // its --log
  int cpu = -1;  // taskset -c CPU; < 0: not pinned
  std::string listen = "127.0.0.1:0";
  std::vector<std::string> extra_args;  // e.g. --heartbeat-interval-ms 1000
  absl::Duration start_timeout = absl::Seconds(60);
};

class PlannerProcess {
 public:
  // Starts it and waits for its "listening on" line; the error names the
  // log's last lines when it exits or stays silent.
  static absl::StatusOr<std::unique_ptr<PlannerProcess>> Start(
      const PlannerProcessOptions& options);
  // Kills it (SIGKILL) if still running.
  ~PlannerProcess();
  PlannerProcess(const PlannerProcess&) = delete;
  PlannerProcess& operator=(const PlannerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }  // HOST:PORT

  // SIGTERM (a clean shutdown) or SIGKILL (a crash), then waits for it.
  absl::Status Stop();
  absl::Status Kill();
  // After Stop or Kill: the same binary, store and port again.
  absl::Status Restart();
  // The last `lines` lines of its stderr.
  std::string LogTail(int lines) const;

 private:
  explicit PlannerProcess(PlannerProcessOptions options)
      : options_(std::move(options)) {}
  absl::Status Launch(const std::string& listen);
  absl::Status SignalAndWait(int signal);

  PlannerProcessOptions options_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;  // the read end of its stdout
  std::string address_;
};

}  // namespace tessera::bench
