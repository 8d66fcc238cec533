// Power of one GPU over the measured steps of a trial, from NVML's total-
// energy counter (nvmlDeviceGetTotalEnergyConsumption: millijoules since the
// driver loaded, Volta and newer): read at the start and at the end of the
// window, the difference over the elapsed time is the average power. NVML is
// loaded at run time with dlopen ("libnvidia-ml.so.1", the driver's), so the
// build needs no NVML headers or library; a machine without it, or a device
// without the counter, gives "power not measured", never a made-up number.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<NvmlPowerMeter> meter,
//                            NvmlPowerMeter::Open("0000:3B:00.0"));
//   TESSERA_ASSIGN_OR_RETURN(uint64_t start, meter->EnergyMillijoules());
//   ... measured steps, `seconds` long ...
//   TESSERA_ASSIGN_OR_RETURN(uint64_t end, meter->EnergyMillijoules());
//   TESSERA_ASSIGN_OR_RETURN(double watts, AverageWatts(start, end, seconds));
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::executor {

// A device's cumulative energy counter.
class PowerMeter {
 public:
  virtual ~PowerMeter() = default;
  // Millijoules the device has used since some fixed point in the past.
  virtual absl::StatusOr<uint64_t> EnergyMillijoules() = 0;
  // What is measured ("NVML total energy of GPU 0000:3B:00.0").
  virtual std::string description() const = 0;
};

// Above this, an average is not a GPU's power but a counter that was reset
// between the readings (a driver reload reads as a wrap of the counter).
inline constexpr double kMaxPlausibleWatts = 10000.0;

// The average watts between readings start_mj and end_mj of a 64-bit
// millijoule counter taken `seconds` apart. The counter is unsigned and wraps
// modulo 2^64, so end < start counts as a wrap. INVALID_ARGUMENT unless
// seconds is positive and finite; FAILED_PRECONDITION ("counter reset?")
// above kMaxPlausibleWatts.
absl::StatusOr<double> AverageWatts(uint64_t start_mj, uint64_t end_mj,
                                    double seconds);

class NvmlPowerMeter final : public PowerMeter {
 public:
  // Loads `library` (dlopen), starts NVML, finds the device with
  // `pci_bus_id` (as cudaDeviceGetPCIBusId writes it, "0000:3B:00.0") and
  // reads the counter once. Errors start with "power not measured: ":
  // UNAVAILABLE when the library or one of its functions is missing or NVML
  // does not start; NOT_FOUND when no device has the bus id; UNIMPLEMENTED
  // when the device has no energy counter.
  static absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> Open(
      absl::string_view pci_bus_id,
      absl::string_view library = "libnvidia-ml.so.1");
  ~NvmlPowerMeter() override;  // shuts NVML down and unloads the library
  NvmlPowerMeter(const NvmlPowerMeter&) = delete;
  NvmlPowerMeter& operator=(const NvmlPowerMeter&) = delete;

  absl::StatusOr<uint64_t> EnergyMillijoules() override;
  std::string description() const override;

 private:
  struct Api;
  NvmlPowerMeter(void* library, std::unique_ptr<Api> api, void* device,
                 std::string pci_bus_id);

  void* library_;  // dlopen handle
  std::unique_ptr<Api> api_;
  void* device_;  // nvmlDevice_t
  std::string pci_bus_id_;
};

}  // namespace tessera::executor
