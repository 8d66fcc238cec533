#include "agents/cuda_devices.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "agents/dynamic_library.h"

namespace tessera::agents {
namespace {

// The few driver API entry points, with their C signatures (cuda.h: CUresult
// is an int enum, 0 = CUDA_SUCCESS; CUdevice is an int).
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);

// NVML (nvml.h): nvmlReturn_t 0 = NVML_SUCCESS, nvmlEnableState_t 1 =
// NVML_FEATURE_ENABLED, up to NVML_NVLINK_MAX_LINKS (18) links per device.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDeviceGetHandleByIndex = int (*)(unsigned int, void**);
using NvmlDeviceGetNvLinkState = int (*)(void*, unsigned int, int*);
constexpr unsigned int kNvmlMaxLinks = 18;

// "nvlink" when NVML sees an active NVLink on device 0; "pcie" otherwise
// (no NVML, no links).
std::string Interconnect() {
  DynamicLibrary nvml("libnvidia-ml.so.1");
  if (!nvml.loaded()) return "pcie";
  auto init = nvml.Get<NvmlInit>("nvmlInit_v2");
  auto shutdown = nvml.Get<NvmlShutdown>("nvmlShutdown");
  auto handle_by_index =
      nvml.Get<NvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
  auto link_state =
      nvml.Get<NvmlDeviceGetNvLinkState>("nvmlDeviceGetNvLinkState");
  if (!init || !shutdown || !handle_by_index || !link_state || init() != 0) {
    return "pcie";
  }
  std::string kind = "pcie";
  void* device = nullptr;
  if (handle_by_index(0, &device) == 0) {
    for (unsigned int link = 0; link < kNvmlMaxLinks; ++link) {
      int active = 0;
      if (link_state(device, link, &active) == 0 && active == 1) {
        kind = "nvlink";
        break;
      }
    }
  }
  shutdown();
  return kind;
}

}  // namespace

absl::StatusOr<CudaDevices> DetectCudaDevices() {
  DynamicLibrary cuda("libcuda.so.1");
  if (!cuda.loaded()) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA driver (libcuda.so.1: ", dlerror(), ")"));
  }
  auto init = cuda.Get<CuInit>("cuInit");
  auto driver_version = cuda.Get<CuDriverGetVersion>("cuDriverGetVersion");
  auto device_count = cuda.Get<CuDeviceGetCount>("cuDeviceGetCount");
  auto device_get = cuda.Get<CuDeviceGet>("cuDeviceGet");
  auto device_name = cuda.Get<CuDeviceGetName>("cuDeviceGetName");
  auto total_mem = cuda.Get<CuDeviceTotalMem>("cuDeviceTotalMem_v2");
  if (!total_mem) total_mem = cuda.Get<CuDeviceTotalMem>("cuDeviceTotalMem");
  if (!init || !driver_version || !device_count || !device_get ||
      !device_name || !total_mem) {
    return absl::UnavailableError(
        "libcuda.so.1 lacks the driver API entry points the agent uses");
  }
  if (int rc = init(0); rc != 0) {
    // 100 = CUDA_ERROR_NO_DEVICE: a driver without GPUs is "no GPU".
    if (rc == 100) return absl::NotFoundError("CUDA driver: no CUDA device");
    return absl::UnavailableError(
        absl::StrCat("CUDA driver: cuInit failed with CUresult ", rc));
  }
  CudaDevices gpus;
  int count = 0;
  if (device_count(&count) != 0 || count <= 0) {
    return absl::NotFoundError("CUDA driver: no CUDA device");
  }
  gpus.count = count;
  int version = 0;
  if (driver_version(&version) == 0) {
    // cuda.h: version = 1000 * major + 10 * minor.
    gpus.driver = absl::StrCat(version / 1000, ".", (version % 1000) / 10);
  }
  for (int i = 0; i < count; ++i) {
    int device = 0;
    size_t bytes = 0;
    if (device_get(&device, i) != 0 || total_mem(&bytes, device) != 0) {
      return absl::UnavailableError(
          absl::StrCat("CUDA driver: cannot query device ", i));
    }
    const int64_t memory = static_cast<int64_t>(bytes);
    gpus.memory_bytes = i == 0 ? memory : std::min(gpus.memory_bytes, memory);
    if (i == 0) {
      char name[256] = {};
      if (device_name(name, sizeof(name) - 1, device) == 0) gpus.name = name;
    }
  }
  gpus.interconnect = Interconnect();
  return gpus;
}

}  // namespace tessera::agents
