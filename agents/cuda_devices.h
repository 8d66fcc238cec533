// The machine's CUDA GPUs, found at run time through the driver API
// (libcuda.so.1, loaded with dlopen: no CUDA headers or libraries are needed
// to build the agent), and whether they are linked by NVLink (NVML,
// libnvidia-ml.so.1, also loaded at run time when present).
//
//   absl::StatusOr<CudaDevices> gpus = DetectCudaDevices();
//   if (gpus.ok()) ...  // gpus->count, gpus->name, gpus->memory_bytes
//   else ...            // gpus.status().message(): why there is none
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::agents {

struct CudaDevices {
  int64_t count = 0;
  std::string name;          // device 0's ("NVIDIA H100 80GB HBM3")
  int64_t memory_bytes = 0;  // per GPU: the smallest device's total memory
  std::string driver;        // the CUDA driver API version, "12.4"
  std::string interconnect;  // "nvlink" when CUDA device 0 has an active
                             // NVLink, else "pcie"
};

// NOT_FOUND when there is no driver (libcuda.so.1 cannot be loaded) or no
// device; UNAVAILABLE when the driver fails (cuInit's error code). The
// message says which, for the agent's log.
absl::StatusOr<CudaDevices> DetectCudaDevices();

// The PCI bus ids ("0000:3B:00.0", as NVML takes them) of the first `count`
// CUDA devices this process sees, in CUDA's order (CUDA_VISIBLE_DEVICES
// applied): a trial's local rank i runs on device i. NOT_FOUND without a
// driver or with fewer than `count` devices; UNAVAILABLE when the driver
// fails. `cuda_library`: the driver to load (tests load a fake).
absl::StatusOr<std::vector<std::string>> VisibleGpuPciBusIds(
    int64_t count, const char* cuda_library = "libcuda.so.1");

}  // namespace tessera::agents
