#include "agents/gpu_energy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/dynamic_library.h"
#include "core/file_io.h"

namespace tessera::agents {
namespace {

// nvml.h: nvmlReturn_t 0 = NVML_SUCCESS.
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlDeviceGetHandleByIndex = int (*)(unsigned int, void**);
using NvmlDeviceGetTotalEnergyConsumption =
    int (*)(void*, unsigned long long*);  // NOLINT(runtime/int)

int64_t Lines(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return 0;
  return std::count(text->begin(), text->end(), '\n');
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> GpuEnergyCounters::Open(
    int64_t gpus) {
  std::unique_ptr<GpuEnergyCounters> c(new GpuEnergyCounters());
  c->nvml_ = std::make_unique<DynamicLibrary>("libnvidia-ml.so.1");
  auto init = c->nvml_->Get<NvmlInit>("nvmlInit_v2");
  auto handle = c->nvml_->Get<NvmlDeviceGetHandleByIndex>(
      "nvmlDeviceGetHandleByIndex_v2");
  c->energy_ = c->nvml_->Get<NvmlDeviceGetTotalEnergyConsumption>(
      "nvmlDeviceGetTotalEnergyConsumption");
  auto shutdown = c->nvml_->Get<NvmlShutdown>("nvmlShutdown");
  if (!init || !handle || !c->energy_ || !shutdown) {
    return absl::NotFoundError("no NVML (libnvidia-ml.so.1)");
  }
  if (init() != 0) return absl::NotFoundError("nvmlInit failed");
  c->shutdown_ = shutdown;
  for (int64_t i = 0; i < gpus; ++i) {
    void* device = nullptr;
    unsigned long long mj = 0;  // NOLINT(runtime/int)
    if (handle(static_cast<unsigned int>(i), &device) != 0 ||
        c->energy_(device, &mj) != 0) {
      return absl::NotFoundError(
          absl::StrCat("GPU ", i, " has no NVML energy counter"));
    }
    c->devices_.push_back(device);
  }
  return c;
}

GpuEnergyCounters::~GpuEnergyCounters() {
  if (shutdown_ != nullptr) shutdown_();
}

absl::StatusOr<double> GpuEnergyCounters::TotalJoules() const {
  double joules = 0;
  for (void* device : devices_) {
    unsigned long long mj = 0;  // NOLINT(runtime/int)
    if (energy_(device, &mj) != 0) {
      return absl::UnavailableError("nvmlDeviceGetTotalEnergyConsumption");
    }
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
