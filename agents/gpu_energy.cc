#include "agents/gpu_energy.h"

#include <algorithm>
#include <utility>

#include "agents/cuda_devices.h"
#include "core/file_io.h"
#include "core/status_macros.h"

namespace tessera::agents {
namespace {

int64_t Lines(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return 0;
  return std::count(text->begin(), text->end(), '\n');
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> GpuEnergyCounters::Open(
    const std::vector<std::string>& pci_bus_ids,
    const std::string& nvml_library) {
  if (pci_bus_ids.empty()) {
    return absl::InvalidArgumentError("power not measured: no GPU named");
  }
  std::unique_ptr<GpuEnergyCounters> c(new GpuEnergyCounters());
  for (const std::string& bus_id : pci_bus_ids) {
    TESSERA_ASSIGN_OR_RETURN(
        std::unique_ptr<executor::NvmlPowerMeter> meter,
        executor::NvmlPowerMeter::Open(bus_id, nvml_library));
    c->meters_.push_back(std::move(meter));
  }
  return c;
}

absl::StatusOr<std::unique_ptr<GpuEnergyCounters>>
GpuEnergyCounters::OpenForLocalRanks(int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<std::string> ids,
                           VisibleGpuPciBusIds(ranks));
  return Open(ids);
}

GpuEnergyCounters::~GpuEnergyCounters() = default;

absl::StatusOr<double> GpuEnergyCounters::TotalJoules() const {
  double joules = 0;
  for (const std::unique_ptr<executor::PowerMeter>& meter : meters_) {
    TESSERA_ASSIGN_OR_RETURN(const uint64_t mj, meter->EnergyMillijoules());
    joules += static_cast<double>(mj) / 1000.0;
  }
  return joules;
}

MeasuredStepsEnergy::MeasuredStepsEnergy(
    std::function<absl::StatusOr<double>()> joules, std::string metrics_path,
    int64_t start_lines, int64_t end_lines, absl::Duration poll)
    : joules_(std::move(joules)),
      path_(std::move(metrics_path)),
      start_lines_(start_lines),
      end_lines_(end_lines),
      poll_(poll),
      thread_([this] { Watch(); }) {}

MeasuredStepsEnergy::~MeasuredStepsEnergy() { (void)Stop(); }

bool MeasuredStepsEnergy::Read(double* joules, absl::Time* at) {
  absl::StatusOr<double> j = joules_();
  if (!j.ok()) {
    failed_ = true;
    return false;
  }
  *joules = *j;
  *at = absl::Now();
  return true;
}

void MeasuredStepsEnergy::Watch() {
  while (!stop_.load()) {
    const int64_t lines = Lines(path_);
    double j = 0;
    absl::Time t;
    if (!start_.has_value() && lines >= start_lines_) {
      if (!Read(&j, &t)) return;
      start_ = std::make_pair(j, t);
    }
    if (start_.has_value() && lines >= end_lines_) {
      if (Read(&j, &t)) end_ = std::make_pair(j, t);
      return;
    }
    absl::SleepFor(poll_);
  }
}

std::optional<EnergyWindow> MeasuredStepsEnergy::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (failed_ || !start_.has_value()) return std::nullopt;
  if (!end_.has_value()) {
    double j = 0;
    absl::Time t;
    if (!Read(&j, &t)) return std::nullopt;
    end_ = std::make_pair(j, t);
  }
  EnergyWindow w;
  w.joules = end_->first - start_->first;
  w.seconds = absl::ToDoubleSeconds(end_->second - start_->second);
  if (!(w.joules > 0) || !(w.seconds > 0)) return std::nullopt;
  return w;
}

}  // namespace tessera::agents
