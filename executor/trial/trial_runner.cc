#include "executor/trial/trial_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model_flops.h"
#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/rank_engine.h"
#include "executor/engine/token_data.h"
#include "executor/trial/cpu_peak.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

// What one rank measured.
struct RankRecord {
  std::vector<StepResult> steps;
  int64_t peak_bytes = 0;
};

TrialResult Failed(TrialResult r, TrialStatus status, absl::string_view why) {
  r.status = status;
  r.reason = std::string(why);
  return r;
}

// The status a failed rank's error stands for.
TrialStatus StatusFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kResourceExhausted:
      return TrialStatus::kOom;
    case absl::StatusCode::kDataLoss:
      return TrialStatus::kNan;
    case absl::StatusCode::kDeadlineExceeded:
      return TrialStatus::kTimeout;
    case absl::StatusCode::kInvalidArgument:
      return TrialStatus::kInvalid;
    default:
      return TrialStatus::kCrash;
  }
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

absl::Status CheckCounts(const TrialConfig& c) {
  const std::pair<const char*, int64_t> positive[] = {
      {"ranks", c.ranks},
      {"global_batch", c.global_batch},
      {"seq_len", c.seq_len},
      {"steps", c.steps}};
  for (const auto& [field, value] : positive) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("trial.", field, ": must be positive, got ", value));
    }
  }
  if (c.warmup_steps < 0 || c.memory_limit_bytes < 0 || c.time_limit_s < 0) {
    return absl::InvalidArgumentError(
        "trial: warmup, memory limit and time limit must not be negative");
  }
  return absl::OkStatus();
}

// Fills the measured fields of `r` from every rank's records.
void Summarise(const TrialConfig& c, const std::vector<RankRecord>& ranks,
               double peak_tflops_per_rank, TrialResult& r) {
  size_t done = ranks[0].steps.size();
  for (const RankRecord& rr : ranks) done = std::min(done, rr.steps.size());
  std::vector<double> measured_s, compute_s, comm_s;
  for (size_t i = 0; i < done; ++i) {
    double step_s = 0, comm = 0;
    for (const RankRecord& rr : ranks) {
      step_s = std::max(step_s, rr.steps[i].step_time_s);
      comm += rr.steps[i].comm_s / static_cast<double>(ranks.size());
    }
    r.loss.push_back(ranks[0].steps[i].loss);
    r.step_times_s.push_back(step_s);
    if (static_cast<int64_t>(i) >= c.warmup_steps) {
      measured_s.push_back(step_s);
      comm_s.push_back(comm);
      compute_s.push_back(step_s - comm);
    }
  }
  for (const RankRecord& rr : ranks) r.peak_memory_bytes.push_back(rr.peak_bytes);
  r.steps = static_cast<int64_t>(measured_s.size());
  if (measured_s.empty()) return;
  r.step_time_s = {Percentile(measured_s, 0.5), Percentile(measured_s, 0.1),
                   Percentile(measured_s, 0.9)};
  const double tokens = static_cast<double>(c.global_batch * c.seq_len);
  r.tokens_per_s = tokens / r.step_time_s.median;
  r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(c.ranks);
  r.tflops_per_gpu = ModelFlopsPerStep(c.model, c.global_batch, c.seq_len) /
                     r.step_time_s.median / static_cast<double>(c.ranks) /
                     1e12;
  r.mfu = peak_tflops_per_rank > 0 ? r.tflops_per_gpu / peak_tflops_per_rank
                                   : 0;
  r.compute_s = Percentile(compute_s, 0.5);
  r.comm_s = Percentile(comm_s, 0.5);
  // In-process collectives are synchronous: all communication is exposed.
  r.exposed_comm_s = r.comm_s;
}

TrialResult RunCpuTrial(const TrialConfig& c, TrialResult r) {
  absl::StatusOr<Layout> layout =
      ResolveLayout(c.layout, c.ranks, c.global_batch);
  if (!layout.ok()) {
    return Failed(r, TrialStatus::kInvalid, layout.status().message());
  }
  r.layout = *layout;
  std::unique_ptr<TokenSource> data;
  if (c.data_path.empty()) {
    data = std::make_unique<SyntheticTokens>(c.seed, c.model.vocab);
  } else {
    absl::StatusOr<std::unique_ptr<FileTokens>> file = FileTokens::Open(
        c.data_path, c.data_token_bytes, c.model.vocab, c.seq_len + 1);
    if (!file.ok()) {
      return Failed(r, TrialStatus::kInvalid, file.status().message());
    }
    data = std::move(*file);
  }
  EngineConfig engine_config{c.model,        *layout, c.seq_len,
                             c.global_batch, c.seed,  c.adamw,
                             data.get()};
  if (absl::Status s = CheckEngineConfig(engine_config, c.ranks); !s.ok()) {
    return Failed(r, TrialStatus::kInvalid, s.message());
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double peak_per_rank =
      MeasureCpuPeakTflops() / static_cast<double>(c.ranks);
  r.peak_tflops = peak_per_rank;
  r.peak_tflops_source = absl::StrFormat(
      "measured: best of 3 sgemm 1024^3 on %u hardware threads, / %d ranks",
      threads, c.ranks);
  r.device = absl::StrFormat("cpu (%d ranks on %u hardware threads)", c.ranks,
                             threads);

  const Clock::time_point deadline =
      c.time_limit_s > 0
          ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(c.time_limit_s))
          : Clock::time_point::max();
  std::vector<RankRecord> records(c.ranks);
  const std::vector<absl::Status> statuses = RunRanks(
      static_cast<int>(c.ranks), [&](int rank, Communicator& world) {
        CpuBackend backend({.memory_limit_bytes = c.memory_limit_bytes});
        RankRecord& record = records[rank];
        absl::Status s = [&]() -> absl::Status {
          TESSERA_ASSIGN_OR_RETURN(
              std::unique_ptr<RankEngine> engine,
              RankEngine::Create(engine_config, backend, world));
          for (int64_t i = 0; i < c.warmup_steps + c.steps; ++i) {
            if (Clock::now() > deadline) {
              return absl::DeadlineExceededError(absl::StrFormat(
                  "time limit of %.1f s passed after %d steps",
                  c.time_limit_s, i));
            }
            TESSERA_ASSIGN_OR_RETURN(StepResult step, engine->Step());
            record.steps.push_back(step);
            if (!std::isfinite(step.loss)) {
              return absl::DataLossError(
                  absl::StrCat("loss is ", step.loss, " at step ", i));
            }
          }
          return absl::OkStatus();
        }();
        record.peak_bytes = backend.peak_bytes();
        return s;
      });
  Summarise(c, records, peak_per_rank, r);
  const absl::Status failure = FirstFailure(statuses);
  if (!failure.ok()) {
    return Failed(r, StatusFor(failure), failure.message());
  }
  r.status = TrialStatus::kOk;
  return r;
}

}  // namespace

TrialResult RunTrial(const TrialConfig& c) {
  TrialResult r;
  r.layout = c.layout;
  r.backend = c.backend;
  r.model = c.model.name.empty() ? "custom" : c.model.name;
  r.ranks = c.ranks;
  r.global_batch = c.global_batch;
  r.seq_len = c.seq_len;
  r.warmup_steps = c.warmup_steps;
  if (absl::Status s = CheckCounts(c); !s.ok()) {
    return Failed(r, TrialStatus::kInvalid, s.message());
  }
  if (absl::Status s = ValidateModel(c.model); !s.ok()) {
    return Failed(r, TrialStatus::kInvalid, s.message());
  }
  if (c.backend == "cpu") return RunCpuTrial(c, r);
  if (c.backend == "cuda") {
    return Failed(r, TrialStatus::kInvalid,
                  "backend: the CUDA backend is not part of this build");
  }
  return Failed(r, TrialStatus::kInvalid,
                absl::StrCat("backend: '", c.backend, "' is not cpu or cuda"));
}

}  // namespace tessera::executor
