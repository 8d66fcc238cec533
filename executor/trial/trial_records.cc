#include "executor/trial/trial_records.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "core/model_flops.h"
#include "core/status_macros.h"

namespace tessera::executor {
namespace {

constexpr int64_t kHeaderDoubles = 5;  // extra, peak, joules, seconds, has
constexpr int64_t kStepDoubles = 4;

}  // namespace

TrialStatus TrialStatusFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kResourceExhausted:
      return TrialStatus::kOom;
    case absl::StatusCode::kDataLoss:
      return TrialStatus::kNan;
    case absl::StatusCode::kDeadlineExceeded:
      return TrialStatus::kTimeout;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return TrialStatus::kInvalid;
    default:
      return TrialStatus::kCrash;
  }
}

TrialResult FailedResult(TrialResult r, TrialStatus status,
                         absl::string_view reason) {
  r.status = status;
  r.reason = std::string(reason);
  return r;
}

TrialResult FailedResult(TrialResult r, const absl::Status& error) {
  return FailedResult(std::move(r), TrialStatusFor(error), error.message());
}

void SummariseSteps(const TrialShape& trial,
                    const std::vector<RankRecord>& ranks,
                    double peak_tflops_per_rank, TrialResult& r) {
  if (ranks.empty()) return;
  size_t done = ranks[0].steps.size();
  for (const RankRecord& rr : ranks) done = std::min(done, rr.steps.size());
  std::vector<double> measured_s, compute_s, comm_s, exposed_s;
  const double n = static_cast<double>(ranks.size());
  for (size_t i = 0; i < done; ++i) {
    double step_s = 0, comm = 0, exposed = 0;
    for (const RankRecord& rr : ranks) {
      step_s = std::max(step_s, rr.steps[i].step_time_s);
      comm += rr.steps[i].comm_s / n;
      exposed += rr.steps[i].exposed_comm_s / n;
    }
    r.loss.push_back(ranks[0].steps[i].loss);
    r.step_times_s.push_back(step_s);
    if (static_cast<int64_t>(i) >= trial.warmup_steps) {
      measured_s.push_back(step_s);
      comm_s.push_back(comm);
      exposed_s.push_back(exposed);
      compute_s.push_back(step_s - exposed);
    }
  }
  for (const RankRecord& rr : ranks)
    r.peak_memory_bytes.push_back(rr.peak_bytes);
  r.steps = static_cast<int64_t>(measured_s.size());
  if (measured_s.empty()) return;
  r.step_time_s = StepTimeStatsOf(measured_s);
  const double tokens = static_cast<double>(trial.global_batch) *
                        static_cast<double>(trial.seq_len);
  r.tokens_per_s = tokens / r.step_time_s.median;
  r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(trial.ranks);
  // Model FLOPs over the step time (core/model_flops.h; MFU's definition).
  r.tflops_per_gpu =
      ModelFlopsPerStep(trial.model, trial.global_batch, trial.seq_len) /
      r.step_time_s.median / static_cast<double>(trial.ranks) / 1e12;
  r.mfu =
      peak_tflops_per_rank > 0 ? r.tflops_per_gpu / peak_tflops_per_rank : 0;
  r.compute_s = Percentile(compute_s, 0.5);
  r.comm_s = Percentile(comm_s, 0.5);
  r.exposed_comm_s = Percentile(exposed_s, 0.5);
}

void SummarisePower(const TrialShape& trial,
                    const std::vector<RankRecord>& ranks,
                    int64_t measured_steps, TrialResult& r) {
  std::vector<EnergyRecord> gpus;
  for (const RankRecord& rr : ranks) {
    if (rr.energy.has_value()) gpus.push_back(*rr.energy);
  }
  if (gpus.empty() || static_cast<int64_t>(gpus.size()) != trial.gpus ||
      measured_steps <= 0) {
    return;  // power not measured (on some GPU): no figure at all
  }
  double watts = 0, joules = 0;
  for (const EnergyRecord& g : gpus) {
    if (!(g.seconds > 0) || !(g.joules >= 0)) return;
    watts += g.joules / g.seconds / static_cast<double>(gpus.size());
    joules += g.joules;
  }
  if (!(joules > 0)) return;
  const double tokens = static_cast<double>(trial.global_batch) *
                        static_cast<double>(trial.seq_len) *
                        static_cast<double>(measured_steps);
  r.watts_per_gpu = watts;
  r.tokens_per_joule = tokens / joules;
}

int64_t PackedRecordWords(int64_t steps) {
  return 2 * (kHeaderDoubles + kStepDoubles * steps);
}

std::vector<int32_t> PackRecord(const RankRecord& record, int64_t steps,
                                double extra) {
  std::vector<double> v = {
      extra, static_cast<double>(record.peak_bytes),
      record.energy.has_value() ? record.energy->joules : 0.0,
      record.energy.has_value() ? record.energy->seconds : 0.0,
      record.energy.has_value() ? 1.0 : 0.0};
  for (int64_t i = 0; i < steps; ++i) {
    const StepRecord& s = record.steps[i];
    v.insert(v.end(), {s.loss, s.step_time_s, s.comm_s, s.exposed_comm_s});
  }
  std::vector<int32_t> words(PackedRecordWords(steps));
  std::memcpy(words.data(), v.data(), v.size() * sizeof(double));
  return words;
}

RankRecord UnpackRecord(const int32_t* words, int64_t steps, double* extra) {
  std::vector<double> v(kHeaderDoubles + kStepDoubles * steps);
  std::memcpy(v.data(), words, v.size() * sizeof(double));
  RankRecord r;
  *extra = v[0];
  r.peak_bytes = static_cast<int64_t>(v[1]);
  if (v[4] != 0) r.energy = EnergyRecord{v[2], v[3]};
  for (int64_t i = 0; i < steps; ++i) {
    const double* s = v.data() + kHeaderDoubles + kStepDoubles * i;
    r.steps.push_back(StepRecord{s[0], s[1], s[2], s[3]});
  }
  return r;
}

absl::StatusOr<std::vector<RankRecord>> GatherRecords(
    Communicator& world, Backend& backend, const RankRecord& mine,
    int64_t steps, double extra, double* rank0_extra) {
  if (static_cast<int64_t>(mine.steps.size()) < steps) {
    return absl::InvalidArgumentError(
        "gather records: this rank ran fewer steps than asked for");
  }
  const std::vector<int32_t> send = PackRecord(mine, steps, extra);
  const int64_t words = static_cast<int64_t>(send.size());
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer send_buf,
      backend.Allocate(words, DType::kI32, "trial record"));
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer all_buf,
      backend.Allocate(words * world.size(), DType::kI32, "trial records"));
  backend.CopyFromHost(send.data(), send_buf.view());
  TESSERA_RETURN_IF_ERROR(world.AllGather(send_buf.view(), all_buf.view()));
  std::vector<int32_t> all(words * world.size());
  backend.CopyToHost(all_buf.view(), all.data());
  std::vector<RankRecord> records;
  for (int r = 0; r < world.size(); ++r) {
    double value = 0;
    records.push_back(UnpackRecord(all.data() + r * words, steps, &value));
    if (r == 0) *rank0_extra = value;
  }
  return records;
}

}  // namespace tessera::executor
