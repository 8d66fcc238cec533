// A stand-in for libcuda.so.1 with the driver API entry points
// VisibleGpuPciBusIds loads (agents/cuda_devices.h), so that the agent's
// mapping from a trial's local ranks to PCI bus ids runs on machines
// without a GPU. Driven by environment variables read at each call:
//   FAKE_CUDA_BUS_IDS     the visible devices' PCI bus ids in CUDA order,
//                         comma-separated ("0000:AF:00.0,0000:3B:00.0")
//   FAKE_CUDA_INIT_ERROR  cuInit returns this CUresult (default 0)
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<std::string> BusIds() {
  std::vector<std::string> ids;
  const char* env = std::getenv("FAKE_CUDA_BUS_IDS");
  std::string list = env != nullptr ? env : "";
  size_t start = 0;
  while (start < list.size()) {
    const size_t comma = list.find(',', start);
    const size_t end = comma == std::string::npos ? list.size() : comma;
    ids.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return ids;
}

}  // namespace

extern "C" {

int cuInit(unsigned int) {
  const char* e = std::getenv("FAKE_CUDA_INIT_ERROR");
  return e != nullptr ? std::atoi(e) : 0;
}

int cuDeviceGetCount(int* count) {
  *count = static_cast<int>(BusIds().size());
  return 0;
}

int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= static_cast<int>(BusIds().size())) {
    return 101;  // CUDA_ERROR_INVALID_DEVICE
  }
  *device = ordinal;
  return 0;
}

int cuDeviceGetPCIBusId(char* bus_id, int len, int device) {
  const std::vector<std::string> ids = BusIds();
  if (device < 0 || device >= static_cast<int>(ids.size())) return 101;
  if (len <= static_cast<int>(ids[device].size())) return 1;  // INVALID_VALUE
  std::strcpy(bus_id, ids[device].c_str());
  return 0;
}

}  // extern "C"
