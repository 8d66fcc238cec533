// What this host offers the planner: CUDA GPUs when a driver and a device
// are present (cuda_devices.h), else the CPU backend with a number of thread
// ranks, the CPU model from /proc/cpuinfo and each rank's share of
// /proc/meminfo's MemTotal.
//
//   HardwareOptions options;      // backend "auto"
//   TESSERA_ASSIGN_OR_RETURN(Hardware hw, DetectHardware(options));
//   // hw.backend == "cpu", hw.ranks == 8, hw.note == "no CUDA driver (...)"
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::agents {

struct HardwareOptions {
  std::string backend = "auto";      // "auto", "cuda" or "cpu"
  std::optional<int64_t> cpu_ranks;  // default: DefaultCpuRanks()
};

struct Hardware {
  std::string backend;       // "cuda" or "cpu"
  std::string device_name;   // the GPU model, or the CPU model
  int64_t ranks = 0;         // GPUs, or CPU thread ranks
  int64_t memory_bytes = 0;  // per GPU, or per CPU rank
  std::string driver;        // CUDA driver version; "" on cpu
  std::string interconnect;  // "nvlink", "pcie" or "shared-memory"
  std::string note;          // why "auto" chose cpu ("" otherwise)
};

// "auto": cuda when DetectCudaDevices finds a device, else cpu with the
// reason in `note` (absent CUDA is not an error). "cuda": an error
// (FAILED_PRECONDITION, with the driver's reason) when there is none.
// "cpu": cpu, whatever GPUs there are. INVALID_ARGUMENT for another backend
// ("--backend: ...") or fewer than one CPU rank ("--cpu-ranks: ...").
absl::StatusOr<Hardware> DetectHardware(const HardwareOptions& options);

// The CPUs this agent may run on (its affinity mask, core/usable_cpus.h),
// at least 2 (so that collectives between thread ranks are probed and
// trialed even on one core).
int64_t DefaultCpuRanks();

// The first "model name" of /proc/cpuinfo's text (x86), else its first
// "Hardware" or "Processor" line (some ARM kernels), else "cpu".
std::string CpuModelFromCpuinfo(absl::string_view cpuinfo);

// MemTotal of /proc/meminfo's text, in bytes (the file says kB, meaning
// KiB). INVALID_ARGUMENT when there is none.
absl::StatusOr<int64_t> MemTotalBytesFromMeminfo(absl::string_view meminfo);

}  // namespace tessera::agents
