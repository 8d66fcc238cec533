#include "executor/cuda/nvml_power.h"

#include <dlfcn.h>

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::executor {
namespace {

// The few NVML declarations used (nvml.h, not needed at build time):
// nvmlReturn_t is an enum passed as int; 0 is NVML_SUCCESS, 3
// NVML_ERROR_NOT_SUPPORTED, 6 NVML_ERROR_NOT_FOUND; nvmlDevice_t is an opaque
// pointer.
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotSupported = 3;
constexpr NvmlReturn kNvmlNotFound = 6;
using NvmlDevice = void*;

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ErrorStringFn = const char* (*)(NvmlReturn);
using HandleByPciBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using TotalEnergyFn = NvmlReturn (*)(NvmlDevice, unsigned long long*);

constexpr absl::string_view kNotMeasured = "power not measured: ";

}  // namespace

struct NvmlPowerMeter::Api {
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  HandleByPciBusIdFn handle_by_pci_bus_id = nullptr;
  TotalEnergyFn total_energy = nullptr;

  std::string Describe(NvmlReturn r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return absl::StrCat(text != nullptr ? text : "NVML error", " (", r, ")");
  }
};

absl::StatusOr<double> AverageWatts(uint64_t start_mj, uint64_t end_mj,
                                    double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "power: the window must last a positive time, got ", seconds, " s"));
  }
  // Unsigned subtraction is the difference modulo 2^64: a wrapped counter
  // still gives the energy used.
  const uint64_t used_mj = end_mj - start_mj;
  const double watts = static_cast<double>(used_mj) / 1000.0 / seconds;
  if (watts > kMaxPlausibleWatts) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "power: the energy counter went from %d to %d mJ in %.3f s, %.3g W: "
        "not a GPU's power (counter reset?)",
        start_mj, end_mj, seconds, watts));
  }
  return watts;
}

absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> NvmlPowerMeter::Open(
    absl::string_view pci_bus_id, absl::string_view library) {
  const std::string path(library);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat(
        kNotMeasured, "cannot load ", path, ": ", why != nullptr ? why : "?"));
  }
  auto api = std::make_unique<Api>();
  struct Symbol {
    const char* name;
    void** slot;
  };
  const Symbol symbols[] = {
      {"nvmlInit_v2", reinterpret_cast<void**>(&api->init)},
      {"nvmlShutdown", reinterpret_cast<void**>(&api->shutdown)},
      {"nvmlErrorString", reinterpret_cast<void**>(&api->error_string)},
      {"nvmlDeviceGetHandleByPciBusId_v2",
       reinterpret_cast<void**>(&api->handle_by_pci_bus_id)},
      {"nvmlDeviceGetTotalEnergyConsumption",
       reinterpret_cast<void**>(&api->total_energy)},
  };
  for (const Symbol& s : symbols) {
    *s.slot = dlsym(handle, s.name);
    if (*s.slot == nullptr) {
      dlclose(handle);
      return absl::UnavailableError(
          absl::StrCat(kNotMeasured, path, " has no ", s.name));
    }
  }
  if (NvmlReturn r = api->init(); r != kNvmlSuccess) {
    const std::string why = api->Describe(r);
    dlclose(handle);
    return absl::UnavailableError(
        absl::StrCat(kNotMeasured, "nvmlInit_v2: ", why));
  }
  const std::string bus_id(pci_bus_id);
  NvmlDevice device = nullptr;
  if (NvmlReturn r = api->handle_by_pci_bus_id(bus_id.c_str(), &device);
      r != kNvmlSuccess) {
    const std::string why = api->Describe(r);
    api->shutdown();
    dlclose(handle);
    const std::string message = absl::StrCat(
        kNotMeasured, "no NVML device has PCI bus id ", bus_id, ": ", why);
    return r == kNvmlNotFound ? absl::NotFoundError(message)
                              : absl::UnavailableError(message);
  }
  std::unique_ptr<NvmlPowerMeter> meter(
      new NvmlPowerMeter(handle, std::move(api), device, bus_id));
  // A device without the counter says so on the first read.
  if (absl::StatusOr<uint64_t> first = meter->EnergyMillijoules();
      !first.ok()) {
    return first.status();
  }
  return meter;
}

NvmlPowerMeter::NvmlPowerMeter(void* library, std::unique_ptr<Api> api,
                               void* device, std::string pci_bus_id)
    : library_(library),
      api_(std::move(api)),
      device_(device),
      pci_bus_id_(std::move(pci_bus_id)) {}

NvmlPowerMeter::~NvmlPowerMeter() {
  api_->shutdown();
  dlclose(library_);
}

absl::StatusOr<uint64_t> NvmlPowerMeter::EnergyMillijoules() {
  unsigned long long mj = 0;
  const NvmlReturn r = api_->total_energy(device_, &mj);
  if (r == kNvmlSuccess) return static_cast<uint64_t>(mj);
  const std::string message =
      absl::StrCat(kNotMeasured, "nvmlDeviceGetTotalEnergyConsumption on ",
                   pci_bus_id_, ": ", api_->Describe(r));
  return r == kNvmlNotSupported ? absl::UnimplementedError(message)
                                : absl::UnavailableError(message);
}

std::string NvmlPowerMeter::description() const {
  return absl::StrCat("NVML total energy of GPU ", pci_bus_id_);
}

}  // namespace tessera::executor
