// A stand-in for libnvidia-ml.so.1 with the five functions NvmlPowerMeter
// loads, so that its dlopen/dlsym path and energy arithmetic run on machines
// without a GPU. Driven by environment variables read at each call:
//   FAKE_NVML_INIT_ERROR   nvmlInit_v2 returns this code (default 0)
//   FAKE_NVML_BUS_ID       the one PCI bus id that has a device
//   FAKE_NVML_START_MJ     the energy counter after nvmlInit_v2 (default 0)
//   FAKE_NVML_STEP_MJ      added after each read (default 1000)
//   FAKE_NVML_UNSUPPORTED  when set, the counter is NOT_SUPPORTED
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

uint64_t g_counter_mj = 0;
int g_device = 0;  // its address is the device handle

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  g_counter_mj = EnvU64("FAKE_NVML_START_MJ", 0);
  return static_cast<int>(EnvU64("FAKE_NVML_INIT_ERROR", 0));
}

int nvmlShutdown() { return 0; }

const char* nvmlErrorString(int result) {
  switch (result) {
    case 0:
      return "Success";
    case 3:
      return "Not Supported";
    case 6:
      return "Not Found";
    default:
      return "Unknown Error";
  }
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  const char* want = std::getenv("FAKE_NVML_BUS_ID");
  if (want == nullptr || std::strcmp(bus_id, want) != 0) return 6;
  *device = &g_device;
  return 0;
}

int nvmlDeviceGetTotalEnergyConsumption(void* device,
                                        unsigned long long* energy_mj) {
  if (device != &g_device) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  if (std::getenv("FAKE_NVML_UNSUPPORTED") != nullptr) return 3;
  *energy_mj = g_counter_mj;
  g_counter_mj += EnvU64("FAKE_NVML_STEP_MJ", 1000);
  return 0;
}

}  // extern "C"
