#include "executor/tessera_trial/cpu_trial.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model_flops.h"
#include "core/status_macros.h"
#include "core/trial_time_budget.h"
#include "core/usable_cpus.h"
#include "executor/comm/run_ranks.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/rank_engine.h"
#include "executor/tessera_trial/cpu_peak.h"
#include "executor/trial/step_loop.h"
#include "executor/trial/trial_records.h"
#include "executor/trial/trial_setup.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

// A process's way into the TCP world of one process per rank; the time
// limit (0: the communicator's default) bounds the rendezvous and waits.
TcpWorldOptions WorldOptions(const std::string& rendezvous_file,
                             const std::string& bind_host,
                             const std::string& advertise_host,
                             double time_limit_s) {
  TcpWorldOptions options;
  options.rendezvous_file = rendezvous_file;
  options.bind_host = bind_host;
  options.advertise_host = advertise_host;
  options.timeout = TrialCommTimeout(time_limit_s, options.timeout);
  return options;
}

// Runs every step of one rank; fills *record as it goes.
absl::Status RunRank(const TrialConfig& c, const EngineConfig& engine_config,
                     Clock::time_point deadline, int blas_threads,
                     Communicator& world, RankRecord* record) {
  CpuBackend backend({.memory_limit_bytes = c.memory_limit_bytes,
                      .blas_threads = blas_threads});
  absl::Status s = [&]() -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<RankEngine> engine,
                             RankEngine::Create(engine_config, backend, world));
    // In-process and TCP collectives are synchronous: all communication is
    // on the critical path (the loop's default timings).
    return RunStepLoop(c, *engine, deadline, StepLoopHooks{}, record);
  }();
  record->peak_bytes = backend.peak_bytes();
  return s;
}

}  // namespace

TrialResult RunCpuTrial(const TrialConfig& c) {
  TrialResult r = NewTrialResult(c);
  absl::StatusOr<TrialSetup> setup = SetUpTrial(c, r);
  if (!setup.ok()) {
    return FailedResult(r, TrialStatus::kInvalid, setup.status().message());
  }
  const EngineConfig& engine_config = setup->engine;
  const int threads = UsableCpuCount();
  const int64_t host_ranks = c.ranks_per_host > 0 ? c.ranks_per_host : c.ranks;
  const int blas_threads = std::max(
      1, threads / static_cast<int>(std::min<int64_t>(host_ranks, threads)));
  const bool one_process = c.process_rank < 0;
  // The per-rank peak: this host's measured GEMM rate shared by its ranks.
  // With a process per rank only rank 0 measures (the others are waiting at
  // the rendezvous) and the value travels with the gathered records.
  double peak_per_rank = 0;
  if (one_process || c.process_rank == 0) {
    peak_per_rank = MeasureCpuPeakTflops() / static_cast<double>(host_ranks);
  }
  r.peak_tflops_source = absl::StrFormat(
      "measured: best of 3 sgemm 1024^3 on %d usable CPUs, / %d ranks "
      "per host",
      threads, host_ranks);
  r.device = absl::StrFormat("cpu (%d ranks%s on %d usable CPUs)", c.ranks,
                             one_process ? "" : ", a process each", threads);
  const Clock::time_point deadline = TrialDeadline(c);

  std::vector<RankRecord> records;
  absl::Status failure;
  if (one_process) {
    records.resize(c.ranks);
    const std::vector<absl::Status> statuses =
        RunRanks(static_cast<int>(c.ranks), [&](int rank, Communicator& world) {
          return RunRank(c, engine_config, deadline, blas_threads, world,
                         &records[rank]);
        });
    failure = FirstFailure(statuses);
  } else {
    absl::StatusOr<std::unique_ptr<TcpCommunicator>> world = ConnectTcpWorld(
        static_cast<int>(c.process_rank), static_cast<int>(c.ranks),
        WorldOptions(c.rendezvous_file, c.bind_host, c.advertise_host,
                     c.time_limit_s));
    if (!world.ok()) return FailedResult(r, world.status());
    RankRecord mine;
    failure = RunRank(c, engine_config, deadline, blas_threads, **world, &mine);
    if (!failure.ok()) {
      // Tell the other processes now, with the cause, rather than letting
      // them find out when they next need this rank.
      (*world)->Abort(failure);
    }
    if (failure.ok()) {
      CpuBackend staging;
      absl::StatusOr<std::vector<RankRecord>> all =
          GatherRecords(**world, staging, mine, c.warmup_steps + c.steps,
                        peak_per_rank, &peak_per_rank);
      if (all.ok()) {
        records = std::move(*all);
      } else {
        failure = all.status();
      }
    }
    if (!failure.ok()) records = {std::move(mine)};
  }
  r.peak_tflops = peak_per_rank;
  const TrialShape shape{c.model,        c.ranks,   c.ranks,
                         c.global_batch, c.seq_len, c.warmup_steps};
  SummariseSteps(shape, records, peak_per_rank, r);
  if (!failure.ok()) return FailedResult(r, failure);
  r.status = TrialStatus::kOk;
  return r;
}

absl::StatusOr<std::vector<SweptCollective>> RunCpuCollectiveSweep(
    const CollectiveProbeConfig& c) {
  absl::StatusOr<std::unique_ptr<TcpCommunicator>> world = ConnectTcpWorld(
      static_cast<int>(c.rank), static_cast<int>(c.ranks),
      WorldOptions(c.rendezvous_file, c.bind_host, c.advertise_host,
                   c.time_limit_s));
  if (!world.ok()) {
    return absl::Status(world.status().code(),
                        absl::StrCat("rendezvous: ", world.status().message()));
  }
  CpuBackend host;
  absl::StatusOr<std::vector<SweptCollective>> swept =
      SweepCollectives(**world, host, c.ranks_per_node, c.sweep);
  if (!swept.ok()) {
    // Tell the peers now rather than at their next wait.
    (*world)->Abort(swept.status());
  }
  return swept;
}

}  // namespace tessera::executor
