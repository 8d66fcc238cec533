// One trial result out of what the agent's tessera-trial processes left
// behind (docs/architecture.md "A trial": one typed result per lease):
//
// - every process wrote status ok: the lowest local rank's JSON, as written;
// - else the most telling failure, in this order, the lowest local rank
//   first within each: a JSON with a typed failure (oom, nan, timeout,
//   invalid); a process that died on its own without JSON (crash, built by
//   the agent); one the agent killed for time without JSON (timeout); a JSON
//   with status crash (often the echo of a peer's death); any other process
//   without JSON (crash).
//
// A result the agent builds has the trial's identity (layout, backend,
// model, ranks, batch) from `base`, names the process and how it ended, and
// ends with the last `stderr_tail_bytes` of its stderr.
//
//   std::string json = AssembleTrialResult(runs, base, {});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agents/process_runner.h"
#include "core/trial_result.h"

namespace tessera::agents {

// What one process left: how it ended and where its files are.
struct RankRun {
  int64_t local_rank = 0;
  int64_t global_rank = -1;  // -1: the process ran every rank as threads
  ProcessOutcome outcome;
  std::string json_path;
  std::string stderr_path;
};

struct AssemblyOptions {
  int64_t stderr_tail_bytes = 4096;
  double time_limit_s = 0;  // the limit the agent enforced, for the reason
};

// The JSON text to report (valid UTF-8 whatever the stderr held).
// `runs` may come in any order; `base` gives what a built result says about
// the trial (its status and reason are replaced).
std::string AssembleTrialResult(const std::vector<RankRun>& runs,
                                const TrialResult& base,
                                const AssemblyOptions& options);

// The first process (by local rank) killed by a signal neither it nor the
// agent sent — SIGKILL, SIGTERM, SIGINT or SIGHUP while the agent's kill
// reason is none: the kernel's OOM killer, an operator, a node shutting
// down — described ("tessera-trial rank 1 (local rank 1) killed by signal 9
// (Killed)"); nullopt when none was. A process that brought itself down
// (SIGSEGV, SIGABRT, SIGBUS, ...) is the trial's own crash, not this.
std::optional<std::string> OutsideKill(const std::vector<RankRun>& runs);
// The same for one process, described as `who` ("the command killed by
// signal 9 (Killed), a signal neither it nor the agent sent").
std::optional<std::string> KilledFromOutside(const ProcessOutcome& outcome,
                                             absl::string_view who);

}  // namespace tessera::agents
