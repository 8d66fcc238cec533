// The agent's hardware probes: `tessera-trial --probe` (GEMM rate, copy and
// collective bus bandwidth for the group sizes this host can form) run as a
// child process with a time limit, its JSON read into tessera.v1.Probe
// messages for ReportProbes.
//
//   ProbeOptions options{.trial_binary = "tessera-trial", .backend = "cpu",
//                        .ranks = 8, .work_dir = dir};
//   TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Probe> probes,
//                            RunProbes(options, should_stop));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agents/process.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct ProbeOptions {
  std::string trial_binary = "tessera-trial";
  std::string backend = "cpu";
  int64_t ranks = 1;
  std::string work_dir;  // where the JSON and the logs go (exists)
  absl::Duration time_limit = absl::Minutes(5);
};

// Reads {"probes": [{kind, group_size, bytes, value, unit}, ...]} or
// {"error": "..."}. An error with no probes is UNAVAILABLE with the error's
// text; malformed JSON is INVALID_ARGUMENT naming the field
// ("probes[2].value: ...").
absl::StatusOr<std::vector<v1::Probe>> ParseProbesJson(absl::string_view text);

// Runs `trial_binary --probe --backend B --ranks N --json F`. Errors:
// UNAVAILABLE when it cannot start, exits without JSON (with the stderr
// tail) or reports an error; DEADLINE_EXCEEDED past the time limit;
// CANCELLED when `should_stop` (may be empty) says so.
absl::StatusOr<std::vector<v1::Probe>> RunProbes(
    const ProbeOptions& options, const std::function<bool()>& should_stop,
    ProcessGroupRegistry* registry = nullptr);

}  // namespace tessera::agents
