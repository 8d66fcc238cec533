// The energy of a command trial's GPUs over its measured steps, measured by
// the agent itself (the user's framework reports no power): NVML's
// per-device energy counters (nvmlDeviceGetTotalEnergyConsumption,
// millijoules since the driver loaded; Volta and newer) read through
// libnvidia-ml.so.1 at run time (executor/cuda/nvml_power.h), and a watcher
// that reads them when the command's metrics file shows the warm-up over
// and the measured steps done.
//
// The GPUs are named by PCI bus id, the one name CUDA and NVML share: a
// trial's local rank i runs on CUDA device i, which under
// CUDA_VISIBLE_DEVICES (a Slurm allocation of part of a node, say) is not
// NVML's device i. Counting NVML's first devices would read another job's
// GPUs.
//
//   absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> gpus =
//       GpuEnergyCounters::OpenForLocalRanks(ranks_per_node);  // NOT_FOUND
//                                                              // on CPU hosts
//   MeasuredStepsEnergy watch([&] { return (*gpus)->TotalJoules(); },
//                             metrics_path, warmup_steps, warmup + steps);
//   ... run the command ...
//   std::optional<EnergyWindow> energy = watch.Stop();
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor/cuda/nvml_power.h"

namespace tessera::agents {

// NVML's energy counters of the GPUs with the given PCI bus ids.
class GpuEnergyCounters {
 public:
  // The status of the first device that cannot be read (its message starts
  // "power not measured: "): no NVML in `nvml_library`, no device with the
  // bus id, or one without an energy counter; INVALID_ARGUMENT for no bus
  // ids. The trial's power is then not measured.
  static absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> Open(
      const std::vector<std::string>& pci_bus_ids,
      const std::string& nvml_library = "libnvidia-ml.so.1");
  // The GPUs a trial's local ranks 0..ranks-1 run on: CUDA devices
  // 0..ranks-1 as this process sees them (VisibleGpuPciBusIds,
  // agents/cuda_devices.h), opened by bus id; the driver's status (NOT_FOUND
  // without a GPU) when it cannot name them.
  static absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> OpenForLocalRanks(
      int64_t ranks);
  ~GpuEnergyCounters();
  GpuEnergyCounters(const GpuEnergyCounters&) = delete;
  GpuEnergyCounters& operator=(const GpuEnergyCounters&) = delete;

  // Joules the GPUs drew since the driver loaded, summed.
  absl::StatusOr<double> TotalJoules() const;
  int64_t gpus() const { return static_cast<int64_t>(meters_.size()); }

 private:
  GpuEnergyCounters() = default;
  std::vector<std::unique_ptr<executor::PowerMeter>> meters_;
};

// Joules and seconds between two readings.
struct EnergyWindow {
  double joules = 0;
  double seconds = 0;
};

// Reads `joules` on its own thread when the metrics file at `metrics_path`
// first holds `start_lines` lines (the measured steps begin) and when it
// holds `end_lines` (they are done) or at Stop(), whichever comes first.
class MeasuredStepsEnergy {
 public:
  MeasuredStepsEnergy(std::function<absl::StatusOr<double>()> joules,
                      std::string metrics_path, int64_t start_lines,
                      int64_t end_lines,
                      absl::Duration poll = absl::Milliseconds(100));
  ~MeasuredStepsEnergy();
  MeasuredStepsEnergy(const MeasuredStepsEnergy&) = delete;
  MeasuredStepsEnergy& operator=(const MeasuredStepsEnergy&) = delete;

  // Stops watching. The window, or nullopt when the measured steps never
  // began or a reading failed.
  std::optional<EnergyWindow> Stop();

 private:
  void Watch();
  // One reading: joules now, and when.
  bool Read(double* joules, absl::Time* at);

  std::function<absl::StatusOr<double>()> joules_;
  std::string path_;
  int64_t start_lines_;
  int64_t end_lines_;
  absl::Duration poll_;
  std::atomic<bool> stop_{false};
  std::optional<std::pair<double, absl::Time>> start_, end_;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace tessera::agents
