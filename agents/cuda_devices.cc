#include "agents/cuda_devices.h"

#include <algorithm>
#include <cstddef>
#include <memory>

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
using CuDeviceGetPciBusId = int (*)(char*, int, int);

// NVML (nvml.h): nvmlReturn_t 0 = NVML_SUCCESS, nvmlEnableState_t 1 =
// NVML_FEATURE_ENABLED, up to NVML_NVLINK_MAX_LINKS (18) links per device.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDeviceGetHandleByPciBusId = int (*)(const char*, void**);
using NvmlDeviceGetNvLinkState = int (*)(void*, unsigned int, int*);
constexpr unsigned int kNvmlMaxLinks = 18;

// The CUDA driver loaded and initialised, with the entry points both
// callers use; `count` the devices this process sees.
struct Driver {
  explicit Driver(const char* name) : library(name) {}
  DynamicLibrary library;
  CuDeviceGet device_get = nullptr;
  CuDeviceGetPciBusId pci_bus_id = nullptr;
  int count = 0;
};

// NOT_FOUND without a driver or a device, UNAVAILABLE when cuInit fails or
// an entry point is missing.
absl::StatusOr<std::unique_ptr<Driver>> LoadDriver(const char* library) {
  auto d = std::make_unique<Driver>(library);
  if (!d->library.loaded()) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA driver (", library, ": ", dlerror(), ")"));
  }
  auto init = d->library.Get<CuInit>("cuInit");
  auto device_count = d->library.Get<CuDeviceGetCount>("cuDeviceGetCount");
  d->device_get = d->library.Get<CuDeviceGet>("cuDeviceGet");
  d->pci_bus_id = d->library.Get<CuDeviceGetPciBusId>("cuDeviceGetPCIBusId");
  if (!init || !device_count || !d->device_get || !d->pci_bus_id) {
    return absl::UnavailableError(absl::StrCat(
        library, " lacks the driver API entry points the agent uses"));
  }
  if (int rc = init(0); rc != 0) {
    // 100 = CUDA_ERROR_NO_DEVICE: a driver without GPUs is "no GPU".
    if (rc == 100) return absl::NotFoundError("CUDA driver: no CUDA device");
    return absl::UnavailableError(
        absl::StrCat("CUDA driver: cuInit failed with CUresult ", rc));
  }
  if (device_count(&d->count) != 0 || d->count <= 0) {
    return absl::NotFoundError("CUDA driver: no CUDA device");
  }
  return d;
}

// The PCI bus id of CUDA device `ordinal`, "" when the driver cannot say.
std::string PciBusId(const Driver& d, int ordinal) {
  int device = 0;
  char id[64] = {};
  if (d.device_get(&device, ordinal) != 0 ||
      d.pci_bus_id(id, static_cast<int>(sizeof(id)), device) != 0) {
    return "";
  }
  return id;
}

// "nvlink" when NVML sees an active NVLink on the device with `bus_id`;
// "pcie" otherwise (no NVML, no such device, no links).
std::string Interconnect(const std::string& bus_id) {
  DynamicLibrary nvml("libnvidia-ml.so.1");
  if (!nvml.loaded() || bus_id.empty()) return "pcie";
  auto init = nvml.Get<NvmlInit>("nvmlInit_v2");
  auto shutdown = nvml.Get<NvmlShutdown>("nvmlShutdown");
  auto handle_by_bus_id = nvml.Get<NvmlDeviceGetHandleByPciBusId>(
      "nvmlDeviceGetHandleByPciBusId_v2");
  auto link_state =
      nvml.Get<NvmlDeviceGetNvLinkState>("nvmlDeviceGetNvLinkState");
  if (!init || !shutdown || !handle_by_bus_id || !link_state || init() != 0) {
    return "pcie";
  }
  std::string kind = "pcie";
  void* device = nullptr;
  if (handle_by_bus_id(bus_id.c_str(), &device) == 0) {
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
  absl::StatusOr<std::unique_ptr<Driver>> loaded = LoadDriver("libcuda.so.1");
  if (!loaded.ok()) return loaded.status();
  const Driver& d = **loaded;
  auto driver_version = d.library.Get<CuDriverGetVersion>("cuDriverGetVersion");
  auto device_name = d.library.Get<CuDeviceGetName>("cuDeviceGetName");
  auto total_mem = d.library.Get<CuDeviceTotalMem>("cuDeviceTotalMem_v2");
  if (!total_mem) {
    total_mem = d.library.Get<CuDeviceTotalMem>("cuDeviceTotalMem");
  }
  if (!driver_version || !device_name || !total_mem) {
    return absl::UnavailableError(
        "libcuda.so.1 lacks the driver API entry points the agent uses");
  }
  CudaDevices gpus;
  gpus.count = d.count;
  int version = 0;
  if (driver_version(&version) == 0) {
    // cuda.h: version = 1000 * major + 10 * minor.
    gpus.driver = absl::StrCat(version / 1000, ".", (version % 1000) / 10);
  }
  for (int i = 0; i < d.count; ++i) {
    int device = 0;
    size_t bytes = 0;
    if (d.device_get(&device, i) != 0 || total_mem(&bytes, device) != 0) {
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
  gpus.interconnect = Interconnect(PciBusId(d, 0));
  return gpus;
}

absl::StatusOr<std::vector<std::string>> VisibleGpuPciBusIds(
    int64_t count, const char* cuda_library) {
  absl::StatusOr<std::unique_ptr<Driver>> loaded = LoadDriver(cuda_library);
  if (!loaded.ok()) return loaded.status();
  const Driver& d = **loaded;
  if (count > d.count) {
    return absl::NotFoundError(absl::StrCat(
        "CUDA driver: ", d.count, " devices visible, ", count, " wanted"));
  }
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    std::string id = PciBusId(d, i);
    if (id.empty()) {
      return absl::UnavailableError(
          absl::StrCat("CUDA driver: no PCI bus id for device ", i));
    }
    ids.push_back(std::move(id));
  }
  return ids;
}

}  // namespace tessera::agents
