#include "executor/cuda/cuda_trial.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/trial_time_budget.h"
#include "executor/comm/run_ranks.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/device_memory_ops.h"
#include "executor/cuda/device_sync_communicator.h"
#include "executor/cuda/gpu_peak.h"
#include "executor/cuda/nvml_power.h"
#include "executor/engine/rank_engine.h"
#include "executor/trial/step_loop.h"
#include "executor/trial/trial_records.h"
#include "executor/trial/trial_setup.h"
#ifdef TESSERA_HAVE_NCCL
#include "executor/cuda/nccl_communicator.h"
#endif

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

struct DeviceInfo {
  std::string name;
  std::string pci_bus_id;
};

absl::StatusOr<DeviceInfo> Describe(int device) {
  cudaDeviceProp prop;
  TESSERA_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  char bus_id[32] = {0};
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device));
  return DeviceInfo{prop.name, bus_id};
}

// TFLOP/s of the best of 3 bf16 GEMMs n x n x n through the backend
// (cuBLASLt), timed with events after a warm-up: what the device achieves,
// not its datasheet peak. 0 when the buffers do not fit.
double MeasureBf16GemmTflops(CudaBackend& backend, int64_t n = 8192) {
  auto a = backend.Allocate(n * n, DType::kBF16, "peak probe a");
  auto b = backend.Allocate(n * n, DType::kBF16, "peak probe b");
  auto c = backend.Allocate(n * n, DType::kBF16, "peak probe c");
  if (!a.ok() || !b.ok() || !c.ok()) return 0;
  backend.Fill(a->view(), n * n, 0.01f);  // not zeros: they run faster
  backend.Fill(b->view(), n * n, -0.02f);
  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess ||
      cudaEventCreate(&stop) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  float best_ms = 1e30f;
  for (int r = 0; r < 4; ++r) {  // the first run warms up
    cudaEventRecord(start, backend.stream());
    backend.Gemm(false, true, n, n, n, 1.0f, a->view(), b->view(), 0.0f,
                 c->view());
    cudaEventRecord(stop, backend.stream());
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r > 0) best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(n) * n * n / (best_ms / 1e3) / 1e12;
}

// The device's dense bf16 peak from the table, else a GEMM rate measured on
// `device` (with `backend` when given, else a backend of its own).
absl::StatusOr<GpuPeak> PeakFor(const std::string& device_name, int device,
                                CudaBackend* backend) {
  absl::StatusOr<GpuPeak> known = DenseBf16PeakForDevice(device_name);
  if (known.ok()) return *known;
  std::unique_ptr<CudaBackend> own;
  if (backend == nullptr) {
    TESSERA_ASSIGN_OR_RETURN(own, CudaBackend::Create({.device = device}));
    backend = own.get();
  }
  return GpuPeak{MeasureBf16GemmTflops(*backend),
                 absl::StrCat(known.status().message(),
                              "; measured instead: best of 3 bf16 GEMMs "
                              "8192^3 through cuBLASLt (achieved, not a "
                              "datasheet peak)")};
}

// A GPU's energy over the measured steps; inert without a meter.
class EnergyWindow {
 public:
  explicit EnergyWindow(PowerMeter* meter) : meter_(meter) {}
  void Start() {
    if (meter_ == nullptr) return;
    absl::StatusOr<uint64_t> mj = meter_->EnergyMillijoules();
    if (!mj.ok()) return;
    start_mj_ = *mj;
    start_ = Clock::now();
  }
  std::optional<EnergyRecord> Stop() {
    if (meter_ == nullptr || !start_mj_.has_value()) return std::nullopt;
    absl::StatusOr<uint64_t> mj = meter_->EnergyMillijoules();
    if (!mj.ok()) return std::nullopt;
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start_).count();
    absl::StatusOr<double> watts = AverageWatts(*start_mj_, *mj, seconds);
    if (!watts.ok()) return std::nullopt;
    return EnergyRecord{*watts * seconds, seconds};
  }

 private:
  PowerMeter* meter_;
  std::optional<uint64_t> start_mj_;
  Clock::time_point start_;
};

// Opens the meter of the device with `pci_bus_id`; *note says how power is
// measured or why it is not.
std::unique_ptr<NvmlPowerMeter> OpenMeter(const std::string& pci_bus_id,
                                          std::string* note) {
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open(pci_bus_id);
  if (!meter.ok()) {
    *note = std::string(meter.status().message());
    return nullptr;
  }
  *note = absl::StrCat("power: ", (*meter)->description());
  return std::move(*meter);
}

// A rank's (communication, exposed communication) of the step just run.
using StepTimings =
    std::function<absl::StatusOr<std::pair<double, double>>(const StepResult&)>;

// Runs the warm-up and measured steps on one rank, filling *record; the
// measured window opens after a barrier past the warm-up and closes after a
// barrier past the last step. `window` is null on ranks that do not report
// their GPU's energy.
absl::Status RunSteps(const TrialConfig& c, RankEngine& engine,
                      Communicator& world, Clock::time_point deadline,
                      const StepTimings& timings, EnergyWindow* window,
                      RankRecord* record) {
  // The measured steps start and end together on every rank, inside the
  // rank-0 energy window.
  StepLoopHooks hooks;
  hooks.timings = timings;
  hooks.on_measured_start = [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(world.Barrier());
    if (window != nullptr) window->Start();
    return absl::OkStatus();
  };
  hooks.on_measured_end = [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(world.Barrier());
    if (window != nullptr) record->energy = window->Stop();
    return absl::OkStatus();
  };
  return RunStepLoop(c, engine, deadline, hooks, record);
}

TrialShape ShapeOf(const TrialConfig& c, int64_t gpus) {
  return TrialShape{c.model,        c.ranks,   gpus,
                    c.global_batch, c.seq_len, c.warmup_steps};
}

// Every rank a thread on GPU 0, over the in-process world on device memory.
TrialResult RunThreadRanks(const TrialConfig& c, const EngineConfig& ec,
                           Clock::time_point deadline, TrialResult r) {
  absl::StatusOr<DeviceInfo> dev = Describe(0);
  if (!dev.ok()) {
    return FailedResult(r, TrialStatus::kCrash, dev.status().message());
  }
  absl::StatusOr<std::shared_ptr<DeviceMemoryOps>> ops =
      DeviceMemoryOps::Create(0);
  if (!ops.ok()) return FailedResult(r, ops.status());
  absl::StatusOr<GpuPeak> peak = PeakFor(dev->name, 0, nullptr);
  if (!peak.ok()) return FailedResult(r, peak.status());
  std::string power_note;
  std::unique_ptr<NvmlPowerMeter> meter =
      OpenMeter(dev->pci_bus_id, &power_note);
  EnergyWindow window(meter.get());
  const double peak_per_rank = peak->tflops / static_cast<double>(c.ranks);
  r.peak_tflops = peak_per_rank;
  r.peak_tflops_source =
      absl::StrCat(peak->source, ", / ", c.ranks, " ranks sharing the GPU");
  r.device = absl::StrCat(dev->name, " (", c.ranks,
                          " ranks as threads on one GPU; ", power_note, ")");

  InProcessOptions options;
  options.memory_ops = *ops;
  options.timeout = TrialCommTimeout(c.time_limit_s, options.timeout);
  std::vector<RankRecord> records(c.ranks);
  std::string attention;  // rank 0's backend's attention kernels
  const std::vector<absl::Status> statuses = RunRanks(
      static_cast<int>(c.ranks),
      [&](int rank, Communicator& world) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(
            std::unique_ptr<CudaBackend> backend,
            CudaBackend::Create(
                {.device = 0, .memory_limit_bytes = c.memory_limit_bytes}));
        if (rank == 0) attention = backend->attention_kernels();
        DeviceSyncCommunicator synced(&world, backend.get());
        // The engine's host time in collectives, less the waits for this
        // rank's own kernels; all of it exposed (host-synchronous).
        double synced_before = 0;
        const StepTimings timings = [&](const StepResult& step)
            -> absl::StatusOr<std::pair<double, double>> {
          const double waited = synced.sync_seconds() - synced_before;
          synced_before = synced.sync_seconds();
          const double comm = std::max(0.0, step.comm_s - waited);
          return std::make_pair(comm, comm);
        };
        absl::Status s = [&]() -> absl::Status {
          TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<RankEngine> engine,
                                   RankEngine::Create(ec, *backend, synced));
          synced_before = synced.sync_seconds();
          // Barriers on the bare world: the engine's steps end synchronized,
          // and a wait counted by `synced` would be taken off a step.
          return RunSteps(c, *engine, world, deadline, timings,
                          rank == 0 ? &window : nullptr, &records[rank]);
        }();
        records[rank].peak_bytes = backend->peak_bytes();
        return s;
      },
      options);
  if (!attention.empty()) absl::StrAppend(&r.device, "; attention: ", attention);
  const absl::Status failure = FirstFailure(statuses);
  const TrialShape shape = ShapeOf(c, /*gpus=*/1);
  SummariseSteps(shape, records, peak_per_rank, r);
  if (!failure.ok()) return FailedResult(r, failure);
  SummarisePower(shape, records, r.steps, r);
  r.status = TrialStatus::kOk;
  return r;
}

#ifdef TESSERA_HAVE_NCCL
// This process runs one rank on its own GPU; NCCL between processes.
TrialResult RunProcessRank(const TrialConfig& c, const EngineConfig& ec,
                           Clock::time_point deadline, TrialResult r) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    return FailedResult(
        r, TrialStatus::kInvalid,
        absl::StrCat("no CUDA device was found (",
                     cuda::CudaCallStatus(e, "cudaGetDeviceCount").message(),
                     ")"));
  }
  const int64_t local =
      c.ranks_per_host > 0 ? c.process_rank % c.ranks_per_host : c.process_rank;
  const int device = static_cast<int>(local % count);
  absl::StatusOr<DeviceInfo> dev = Describe(device);
  if (!dev.ok()) {
    return FailedResult(r, TrialStatus::kCrash, dev.status().message());
  }
  absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Create(
      {.device = device, .memory_limit_bytes = c.memory_limit_bytes});
  if (!backend.ok()) return FailedResult(r, backend.status());
  NcclWorldOptions options;
  options.rendezvous_file = c.rendezvous_file;
  options.timeout = TrialCommTimeout(c.time_limit_s, options.timeout);
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> world = ConnectNcclWorld(
      static_cast<int>(c.process_rank), static_cast<int>(c.ranks), device,
      (*backend)->stream(), options);
  if (!world.ok()) return FailedResult(r, world.status());
  NcclCommunicator& nccl = **world;
  std::string power_note;
  std::unique_ptr<NvmlPowerMeter> meter =
      OpenMeter(dev->pci_bus_id, &power_note);
  EnergyWindow window(meter.get());
  absl::StatusOr<GpuPeak> peak = PeakFor(dev->name, device, backend->get());
  if (!peak.ok()) return FailedResult(r, peak.status());

  RankRecord mine;
  const StepTimings timings =
      [&](const StepResult&) -> absl::StatusOr<std::pair<double, double>> {
    TESSERA_ASSIGN_OR_RETURN(CommTimings t, nccl.TakeTimings());
    return std::make_pair(t.comm_s, t.exposed_s);
  };
  std::unique_ptr<RankEngine> engine;
  absl::Status failure = [&]() -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(engine, RankEngine::Create(ec, **backend, nccl));
    TESSERA_RETURN_IF_ERROR(
        nccl.TakeTimings().status());  // setup is not a step
    return RunSteps(c, *engine, nccl, deadline, timings, &window, &mine);
  }();
  mine.peak_bytes = (*backend)->peak_bytes();
  if (!failure.ok()) nccl.AbortOnDestruction();  // peers may be stuck
  engine.reset();
  std::vector<RankRecord> records;
  double peak_rank0 = peak->tflops;
  if (failure.ok()) {
    absl::StatusOr<std::vector<RankRecord>> all =
        GatherRecords(nccl, **backend, mine, c.warmup_steps + c.steps,
                      peak->tflops, &peak_rank0);
    if (all.ok()) {
      records = std::move(*all);
    } else {
      failure = all.status();
    }
  }
  if (!failure.ok()) records = {std::move(mine)};
  r.peak_tflops = peak_rank0;
  r.peak_tflops_source = peak->source;
  r.device = absl::StrCat(dev->name, " (", c.ranks,
                          " processes, one GPU each, NCCL; ", power_note,
                          "); attention: ", (*backend)->attention_kernels());
  const TrialShape shape = ShapeOf(c, /*gpus=*/c.ranks);
  SummariseSteps(shape, records, peak_rank0, r);
  if (!failure.ok()) return FailedResult(r, failure);
  SummarisePower(shape, records, r.steps, r);
  r.status = TrialStatus::kOk;
  return r;
}
#endif  // TESSERA_HAVE_NCCL

}  // namespace

TrialResult RunCudaTrial(const TrialConfig& c) {
  TrialResult r = NewTrialResult(c);
  r.backend = "cuda";
  std::string why;
  if (!CudaDeviceAvailable(&why)) {
    return FailedResult(r, TrialStatus::kInvalid,
                        absl::StrCat("no CUDA device was found (", why, ")"));
  }
  if (absl::Status s = ValidateTrialConfig(c); !s.ok()) {
    return FailedResult(r, TrialStatus::kInvalid, s.message());
  }
  absl::StatusOr<TrialSetup> setup = SetUpTrial(c, r);
  if (!setup.ok()) {
    return FailedResult(r, TrialStatus::kInvalid, setup.status().message());
  }
  const Clock::time_point deadline = TrialDeadline(c);
  if (c.process_rank < 0) {
    return RunThreadRanks(c, setup->engine, deadline, r);
  }
#ifdef TESSERA_HAVE_NCCL
  return RunProcessRank(c, setup->engine, deadline, r);
#else
  return FailedResult(r, TrialStatus::kInvalid,
                      "backend cuda: one process per rank needs NCCL, which "
                      "this build did not find (TESSERA_NCCL_ROOT)");
#endif
}

}  // namespace tessera::executor
