// What the kernel counts for a process: its CPU time (user + system, from
// /proc/<pid>/stat) and its resident memory (/proc/<pid>/statm). The fleet
// bench reads the planner's before and after a window to report the cores
// it used and its CPU time per RPC, and its own to show when the simulated
// agents, not the planner, were the limit.
//
//   absl::StatusOr<ProcessCpu> before = ReadProcessCpu(pid);
//   ... the window ...
//   absl::StatusOr<ProcessCpu> after = ReadProcessCpu(pid);
//   double cores = (after->total_s() - before->total_s()) / window_s;
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::bench {

struct ProcessCpu {
  double user_s = 0;
  double system_s = 0;
  double total_s() const { return user_s + system_s; }
};

// Parses one /proc/<pid>/stat line: utime and stime (fields 14 and 15,
// counted after the command's closing parenthesis, which may contain
// spaces) in clock ticks of `ticks_per_s`. InvalidArgument naming what is
// missing for a line that is not one.
absl::StatusOr<ProcessCpu> ParseProcStat(absl::string_view line,
                                         int64_t ticks_per_s);

// The CPU time of process `pid` so far (its threads, not its children);
// NotFound when it is not running.
absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid);

// Its resident set in bytes; NotFound when it is not running.
absl::StatusOr<int64_t> ReadResidentBytes(pid_t pid);

}  // namespace tessera::bench
