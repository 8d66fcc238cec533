#include "bench/service/fleet/process_cpu.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tessera::bench {
namespace {

absl::StatusOr<std::string> ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  }
  return line;
}

}  // namespace

absl::StatusOr<ProcessCpu> ParseProcStat(absl::string_view line,
                                         int64_t ticks_per_s) {
  const size_t close = line.rfind(')');
  if (close == absl::string_view::npos || ticks_per_s <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc stat line: no '(command)' in '", line, "'"));
  }
  // Fields from the state (field 3) on: utime is field 14, stime 15.
  const std::vector<absl::string_view> fields = absl::StrSplit(
      line.substr(close + 1), ' ', absl::SkipWhitespace());
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "/proc stat line: no utime and stime (fields 14, 15) in '", line,
        "'"));
  }
  const double tick_s = 1.0 / static_cast<double>(ticks_per_s);
  return ProcessCpu{.user_s = static_cast<double>(utime) * tick_s,
                    .system_s = static_cast<double>(stime) * tick_s};
}

absl::StatusOr<ProcessCpu> ReadProcessCpu(pid_t pid) {
  absl::StatusOr<std::string> line =
      ReadFirstLine(absl::StrCat("/proc/", pid, "/stat"));
  if (!line.ok()) return line.status();
  return ParseProcStat(*line, sysconf(_SC_CLK_TCK));
}

absl::StatusOr<int64_t> ReadResidentBytes(pid_t pid) {
  absl::StatusOr<std::string> line =
      ReadFirstLine(absl::StrCat("/proc/", pid, "/statm"));
  if (!line.ok()) return line.status();
  std::istringstream in(*line);
  int64_t size_pages = 0, resident_pages = 0;
  if (!(in >> size_pages >> resident_pages)) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc statm line: '", *line, "'"));
  }
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace tessera::bench
