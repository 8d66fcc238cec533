#include "agents/hardware.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/cuda_devices.h"
#include "agents/files.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "core/usable_cpus.h"

namespace tessera::agents {
namespace {

// The value of the first "key : value" line whose key is `key`.
std::optional<std::string> FieldValue(absl::string_view text,
                                      absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(kv.first) == key) {
      return std::string(absl::StripAsciiWhitespace(kv.second));
    }
  }
  return std::nullopt;
}

absl::StatusOr<Hardware> CpuHardware(const HardwareOptions& options) {
  const int64_t ranks = options.cpu_ranks.value_or(DefaultCpuRanks());
  if (ranks < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cpu-ranks: must be at least 1, got ", ranks));
  }
  Hardware hw;
  hw.backend = "cpu";
  hw.ranks = ranks;
  hw.interconnect = "shared-memory";
  absl::StatusOr<std::string> cpuinfo = ReadFile("/proc/cpuinfo");
  hw.device_name = CpuModelFromCpuinfo(cpuinfo.ok() ? *cpuinfo : "");
  TESSERA_ASSIGN_OR_RETURN(std::string meminfo, ReadFile("/proc/meminfo"));
  TESSERA_ASSIGN_OR_RETURN(int64_t total, MemTotalBytesFromMeminfo(meminfo));
  hw.memory_bytes = total / ranks;
  return hw;
}

}  // namespace

int64_t DefaultCpuRanks() { return std::max<int64_t>(2, UsableCpuCount()); }

std::string CpuModelFromCpuinfo(absl::string_view cpuinfo) {
  for (absl::string_view key : {"model name", "Hardware", "Processor"}) {
    std::optional<std::string> value = FieldValue(cpuinfo, key);
    if (value.has_value() && !value->empty()) return *value;
  }
  return "cpu";
}

absl::StatusOr<int64_t> MemTotalBytesFromMeminfo(absl::string_view meminfo) {
  std::optional<std::string> value = FieldValue(meminfo, "MemTotal");
  int64_t kib = 0;
  if (value.has_value()) {
    std::vector<absl::string_view> parts =
        absl::StrSplit(*value, ' ', absl::SkipEmpty());
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &kib) && kib > 0 &&
        (parts.size() < 2 || parts[1] == "kB")) {
      return kib * 1024;
    }
  }
  return absl::InvalidArgumentError("/proc/meminfo: no MemTotal in kB");
}

namespace {

// The executor backend `name` asks for (core/trial_backend.h): nullptr for
// "auto"; INVALID_ARGUMENT for a name that is no executor backend.
absl::StatusOr<const TrialBackend*> AskedBackend(const std::string& name) {
  if (name == "auto") return nullptr;
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend(name);
  if (!b.ok() || (*b)->launcher != TrialLauncher::kTesseraTrial) {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend: '", name, "' is not auto, cuda or cpu"));
  }
  return *b;
}

}  // namespace

absl::StatusOr<Hardware> DetectHardware(const HardwareOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const TrialBackend* asked,
                           AskedBackend(options.backend));
  if (asked != nullptr && asked->ranks_on == RankDevice::kCpuCore) {
    return CpuHardware(options);
  }
  absl::StatusOr<CudaDevices> gpus = DetectCudaDevices();
  if (!gpus.ok()) {
    if (asked != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--backend: ", asked->name, ", but ", gpus.status().message()));
    }
    TESSERA_ASSIGN_OR_RETURN(Hardware hw, CpuHardware(options));
    hw.note = absl::StrCat(gpus.status().message(), "; using the cpu backend");
    return hw;
  }
  Hardware hw;
  hw.backend = "cuda";
  hw.device_name = gpus->name;
  hw.ranks = gpus->count;
  hw.memory_bytes = gpus->memory_bytes;
  hw.driver = gpus->driver;
  hw.interconnect = gpus->interconnect;
  return hw;
}

}  // namespace tessera::agents
