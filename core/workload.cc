#include "core/workload.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/units.h"

namespace tessera {

absl::string_view PrecisionName(Precision precision) {
  return precision == Precision::kFp8 ? "fp8" : "bf16";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view text) {
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp8") return Precision::kFp8;
  return absl::InvalidArgumentError(
      absl::StrCat("training.precision: '", text, "' is not bf16 or fp8"));
}

ClusterConfig MakeCluster(const GpuSpec& gpu, int64_t nodes,
                          int64_t gpus_per_node) {
  ClusterConfig c;
  c.gpu = gpu;
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_node_gbs = gpu.nvlink_gbs;
  c.inter_node_gbs = gpu.inter_node_gbs;
  c.intra_node_latency_us = 1.0;
  c.inter_node_latency_us = 5.0;
  return c;
}

absl::Status ValidateCluster(const ClusterConfig& c) {
  TESSERA_RETURN_IF_ERROR(ValidateGpu(c.gpu));
  if (c.nodes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.nodes: must be a positive integer, got ", c.nodes));
  }
  if (c.gpus_per_node <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.gpus_per_node: must be a positive integer, got ",
                     c.gpus_per_node));
  }
  const std::pair<const char*, double> links[] = {
      {"intra_node_gbs", c.intra_node_gbs},
      {"inter_node_gbs", c.inter_node_gbs}};
  for (const auto& [field, value] : links) {
    if (!(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.", field, ": must be positive, got ", value));
    }
  }
  const std::pair<const char*, double> latencies[] = {
      {"intra_node_latency_us", c.intra_node_latency_us},
      {"inter_node_latency_us", c.inter_node_latency_us}};
  for (const auto& [field, value] : latencies) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster.", field, ": must be zero or positive, got ", value));
    }
  }
  if (c.memory_headroom_bytes.has_value() &&
      c.memory_headroom_fraction.has_value()) {
    return absl::InvalidArgumentError(
        "cluster.memory_headroom_gib: give it or memory_headroom_fraction, "
        "not both");
  }
  const double memory = static_cast<double>(c.gpu.memory_bytes);
  if (c.memory_headroom_bytes.has_value() &&
      !(*c.memory_headroom_bytes >= 0 && *c.memory_headroom_bytes < memory)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.memory_headroom_gib: must be at least 0 and less than the "
        "GPU's ",
        memory / kGiB, " GiB, got ", *c.memory_headroom_bytes / kGiB));
  }
  if (c.memory_headroom_fraction.has_value() &&
      !(*c.memory_headroom_fraction >= 0 && *c.memory_headroom_fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.memory_headroom_fraction: must be in [0, 1), got ",
        *c.memory_headroom_fraction));
  }
  return absl::OkStatus();
}

double MemoryHeadroomBytes(const ClusterConfig& c) {
  if (c.memory_headroom_bytes.has_value()) return *c.memory_headroom_bytes;
  return c.memory_headroom_fraction.value_or(kDefaultMemoryHeadroomFraction) *
         static_cast<double>(c.gpu.memory_bytes);
}

std::string DescribeMemoryHeadroom(const ClusterConfig& c) {
  const double memory_gib = static_cast<double>(c.gpu.memory_bytes) / kGiB;
  const double headroom_gib = MemoryHeadroomBytes(c) / kGiB;
  const double percent =
      memory_gib > 0 ? 100 * headroom_gib / memory_gib : 0;
  return absl::StrFormat(
      "%.1f GiB of %.1f GiB per GPU kept free (%.0f%%%s)", headroom_gib,
      memory_gib, percent,
      c.memory_headroom_bytes.has_value() || c.memory_headroom_fraction.has_value()
          ? ""
          : ", the default; --headroom to change");
}

absl::Status ValidateTraining(const TrainingConfig& t) {
  if (t.global_batch <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.global_batch: must be a positive number of sequences, got ",
        t.global_batch));
  }
  if (t.seq_len <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.seq_len: must be a positive integer, got ", t.seq_len));
  }
  if (!(t.total_tokens >= 0) || !std::isfinite(t.total_tokens)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.total_tokens: must be zero (none) or positive, got ",
        t.total_tokens));
  }
  if (t.stack.empty()) {
    return absl::InvalidArgumentError(
        "training.stack: must name a training stack");
  }
  return absl::OkStatus();
}

absl::Status ValidateTrainingOnGpu(const TrainingConfig& t,
                                   const GpuSpec& gpu) {
  if (t.precision == Precision::kFp8 && !(gpu.peak_fp8_tflops > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.precision: fp8 needs fp8 tensor cores, and gpu '", gpu.name,
        "' has none (gpu.peak_fp8_tflops is 0)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateWorkload(const Workload& w) {
  TESSERA_RETURN_IF_ERROR(ValidateModel(w.model));
  TESSERA_RETURN_IF_ERROR(ValidateCluster(w.cluster));
  TESSERA_RETURN_IF_ERROR(ValidateTraining(w.training));
  return ValidateTrainingOnGpu(w.training, w.cluster.gpu);
}

}  // namespace tessera
