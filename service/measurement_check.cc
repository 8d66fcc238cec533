#include "service/measurement_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/model_flops.h"
#include "core/trial_backend.h"

namespace tessera::service {
namespace {

absl::Status Implausible(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("implausible report: ", what));
}

// A number every report may carry: finite and not negative.
absl::Status CheckAmount(absl::string_view field, double value) {
  if (!std::isfinite(value) || value < 0) {
    return Implausible(absl::StrCat(field, " ", value,
                                    " (not a finite, non-negative number)"));
  }
  return absl::OkStatus();
}

absl::Status CheckText(absl::string_view field, const std::string& text) {
  if (text.size() > kMaxReportTextBytes) {
    return Implausible(absl::StrCat(field, " of ", text.size(),
                                    " bytes (at most ", kMaxReportTextBytes,
                                    ")"));
  }
  return absl::OkStatus();
}

// `layout` resolved for the world and global batch of `lease`, so that a
// layout written with its derived fields (dp, grad_accum) and one without
// compare equal.
std::optional<Layout> ResolvedFor(const Layout& layout, const Layout& lease) {
  absl::StatusOr<Layout> resolved =
      ResolveLayout(layout, lease.world_size(),
                    lease.micro_batch * lease.dp * lease.grad_accum);
  if (!resolved.ok()) return std::nullopt;
  return *resolved;
}

// What holds for every status: the lease's layout, sizes and signs.
absl::Status CheckShape(const TrialResult& r, const MeasurementBounds& b) {
  if (b.layout.has_value()) {
    const std::optional<Layout> reported = ResolvedFor(r.layout, *b.layout);
    if (!reported.has_value() || reported != ResolvedFor(*b.layout, *b.layout)) {
      return Implausible(absl::StrCat("layout ", FormatLayout(r.layout),
                                      " for a trial leased as ",
                                      FormatLayout(*b.layout)));
    }
  }
  for (const auto& [field, text] :
       {std::pair<const char*, const std::string*>{"reason", &r.reason},
        {"output_tail", &r.output_tail},
        {"backend", &r.backend},
        {"model", &r.model},
        {"device", &r.device},
        {"peak_tflops_source", &r.peak_tflops_source}}) {
    if (absl::Status s = CheckText(field, *text); !s.ok()) return s;
  }
  const int64_t rows = b.max_steps_recorded;
  if (static_cast<int64_t>(r.loss.size()) > rows ||
      static_cast<int64_t>(r.step_times_s.size()) > rows) {
    return Implausible(absl::StrCat(
        r.loss.size(), " losses and ", r.step_times_s.size(),
        " step times for a trial of ", rows, " steps (warm-up included)"));
  }
  if (r.steps < 0 || r.warmup_steps < 0 ||
      r.steps + r.warmup_steps > b.max_steps_recorded) {
    return Implausible(absl::StrCat("steps ", r.steps, " + warmup_steps ",
                                    r.warmup_steps, " for a trial of ", rows,
                                    " steps"));
  }
  if (static_cast<int64_t>(r.peak_memory_bytes.size()) > b.world_size) {
    return Implausible(absl::StrCat(r.peak_memory_bytes.size(),
                                    " peak memory entries for ", b.world_size,
                                    " ranks"));
  }
  for (int64_t bytes : r.peak_memory_bytes) {
    if (bytes < 0) {
      return Implausible(absl::StrCat("peak_memory_bytes ", bytes));
    }
  }
  for (const auto& [field, value] :
       {std::pair<const char*, double>{"step_time_s.median",
                                       r.step_time_s.median},
        {"step_time_s.p10", r.step_time_s.p10},
        {"step_time_s.p90", r.step_time_s.p90},
        {"tokens_per_s", r.tokens_per_s},
        {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
        {"tflops_per_gpu", r.tflops_per_gpu},
        {"mfu", r.mfu},
        {"peak_tflops", r.peak_tflops},
        {"compute_s", r.compute_s},
        {"comm_s", r.comm_s},
        {"exposed_comm_s", r.exposed_comm_s},
        {"watts_per_gpu", r.watts_per_gpu.value_or(0)},
        {"tokens_per_joule", r.tokens_per_joule.value_or(0)}}) {
    if (absl::Status s = CheckAmount(field, value); !s.ok()) return s;
  }
  for (double t : r.step_times_s) {
    // NaN: a step not recorded.
    if (!std::isnan(t) && (std::isinf(t) || t < 0)) {
      return Implausible(absl::StrCat("step time ", t, " s"));
    }
  }
  return absl::OkStatus();
}

// What a measurement (status ok) must also satisfy.
absl::Status CheckMeasured(const TrialResult& r, const MeasurementBounds& b) {
  const StepTimeStats& t = r.step_time_s;
  if (!(t.median > 0) || !(t.p10 > 0) || t.p10 > t.median || t.median > t.p90) {
    return Implausible(absl::StrFormat(
        "step times p10 %g, median %g, p90 %g s (positive and ordered)", t.p10,
        t.median, t.p90));
  }
  if (r.steps < 1) return Implausible("an ok trial with no measured step");
  if (b.world_size > 0 && r.ranks != b.world_size) {
    return Implausible(absl::StrCat("ranks ", r.ranks, " for a layout of ",
                                    b.world_size, " ranks"));
  }
  if (b.global_batch > 0 &&
      (r.global_batch != b.global_batch || r.seq_len != b.seq_len)) {
    return Implausible(
        absl::StrCat("global_batch ", r.global_batch, " x seq_len ", r.seq_len,
                     " for a trial of ", b.global_batch, " x ", b.seq_len));
  }
  const double tokens_per_step =
      static_cast<double>(r.global_batch) * static_cast<double>(r.seq_len);
  const double implied = tokens_per_step / t.median;
  if (!(r.tokens_per_s > 0) || r.tokens_per_s > 1.1 * implied ||
      r.tokens_per_s < implied / 1.1) {
    return Implausible(absl::StrFormat(
        "tokens_per_s %g where %g tokens per step over the median step of %g "
        "s give %g",
        r.tokens_per_s, tokens_per_step, t.median, implied));
  }
  if (b.model_flops_per_token && b.peak_flops_per_gpu && b.world_size > 0) {
    const double flops_per_gpu =
        r.tokens_per_s * *b.model_flops_per_token / b.world_size;
    if (flops_per_gpu > b.peak_slack * *b.peak_flops_per_gpu) {
      return Implausible(absl::StrFormat(
          "tokens_per_s %g means %.4g TFLOP/s of model FLOPs per GPU, above "
          "%.2f x the GPU's peak %.4g TFLOP/s",
          r.tokens_per_s, flops_per_gpu / 1e12, b.peak_slack,
          *b.peak_flops_per_gpu / 1e12));
    }
  }
  // The trial's own MFU, against the peak it used (a CPU trial measures
  // its host's).
  const double mfu_slack = BackendRanksOn(r.backend, RankDevice::kCpuCore)
                               ? std::max(b.peak_slack, kCpuPeakSlack)
                               : b.peak_slack;
  if (r.mfu > mfu_slack) {
    return Implausible(
        absl::StrCat("mfu ", r.mfu, " (above ", mfu_slack, " of the peak)"));
  }
  if (b.memory_bytes_per_rank) {
    for (int64_t bytes : r.peak_memory_bytes) {
      if (bytes > *b.memory_bytes_per_rank) {
        return Implausible(absl::StrCat("peak_memory_bytes ", bytes,
                                        " on a rank that has ",
                                        *b.memory_bytes_per_rank));
      }
    }
  }
  if (b.max_watts_per_gpu && r.watts_per_gpu &&
      *r.watts_per_gpu > *b.max_watts_per_gpu) {
    return Implausible(absl::StrFormat("watts_per_gpu %g (at most %g)",
                                       *r.watts_per_gpu, *b.max_watts_per_gpu));
  }
  if (r.watts_per_gpu && r.tokens_per_joule && *r.watts_per_gpu > 0 &&
      b.world_size > 0) {
    const double implied_tpj =
        r.tokens_per_s / (*r.watts_per_gpu * b.world_size);
    if (*r.tokens_per_joule > 1.1 * implied_tpj ||
        *r.tokens_per_joule < implied_tpj / 1.1) {
      return Implausible(absl::StrFormat(
          "tokens_per_joule %g where tokens_per_s over the power of %d GPUs "
          "gives %g",
          *r.tokens_per_joule, b.world_size, implied_tpj));
    }
  }
  return absl::OkStatus();
}

}  // namespace

MeasurementBounds BoundsOf(const db::Trial& trial,
                           const std::optional<Workload>& workload) {
  MeasurementBounds b;
  b.layout = trial.layout;
  b.world_size = trial.layout.world_size();
  b.max_steps_recorded = trial.warmup_steps + trial.steps;
  if (!workload) return b;
  const ModelConfig& model = workload->model;
  const GpuSpec& gpu = workload->cluster.gpu;
  b.global_batch = workload->training.global_batch;
  b.seq_len = workload->training.seq_len;
  b.model_flops_per_token =
      ModelFlopsPerStep(model, b.global_batch, b.seq_len) /
      (static_cast<double>(b.global_batch) * static_cast<double>(b.seq_len));
  b.peak_flops_per_gpu =
      std::max(gpu.peak_dense_tflops, gpu.peak_fp8_tflops) * 1e12;
  if (gpu.architecture == "cpu") {
    b.peak_slack = kCpuPeakSlack;
    // An agent's CPU ranks share its host: one may hold more than its share.
    b.memory_bytes_per_rank =
        gpu.memory_bytes * workload->cluster.gpus_per_node;
  } else {
    b.memory_bytes_per_rank = gpu.memory_bytes;
    if (gpu.tdp_w > 0) b.max_watts_per_gpu = 1.5 * gpu.tdp_w;
  }
  return b;
}

absl::Status CheckMeasurement(const TrialResult& result,
                              const MeasurementBounds& bounds) {
  if (absl::Status s = CheckShape(result, bounds); !s.ok()) return s;
  if (result.status != TrialStatus::kOk) return absl::OkStatus();
  return CheckMeasured(result, bounds);
}

}  // namespace tessera::service
