#include "service/spec_bounds.h"

#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"

namespace tessera::service {
namespace {

// One number of the spec: its field, its value (nullopt: not set) and the
// largest it may be (and the smallest: negative numbers are every field's
// own check's business, except where a bound says so here).
struct Bounded {
  const char* field;
  std::optional<double> value;
  double max;
  const char* unit;  // what the bound counts, for the message
};

template <typename T>
std::optional<double> If(bool has, T value) {
  if (!has) return std::nullopt;
  return static_cast<double>(value);
}

absl::Status Check(const Bounded& b) {
  if (!b.value.has_value()) return absl::OkStatus();
  const double v = *b.value;
  if (!std::isfinite(v) || v > b.max) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "study.%s: %sat most %.17g (%s), got %g", b.field,
        std::isfinite(v) ? "" : "must be finite; ", b.max, b.unit, v));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSpecBounds(const v1::StudySpec& s) {
  const v1::ModelSpec& m = s.model();
  const v1::ClusterSpec& c = s.cluster();
  const v1::GpuSpec& g = c.gpu();
  const v1::TrainingSpec& t = s.training();
  const v1::TrialOptions& o = s.trials();
  constexpr double kWeekS = 7 * 24 * 3600;
  constexpr double kYearS = 365 * 24 * 3600;
  constexpr double kPiB = 1125899906842624.0;  // 2^50 bytes
  const Bounded bounds[] = {
      {"model.layers", If(m.has_layers(), m.layers()), 100000, "layers"},
      {"model.hidden", If(m.has_hidden(), m.hidden()), 1 << 20, "width"},
      {"model.heads", If(m.has_heads(), m.heads()), 1 << 16, "heads"},
      {"model.kv_heads", If(m.has_kv_heads(), m.kv_heads()), 1 << 16,
       "heads"},
      {"model.ffn_hidden", If(m.has_ffn_hidden(), m.ffn_hidden()), 1 << 24,
       "width"},
      {"model.vocab", If(m.has_vocab(), m.vocab()), 1 << 24, "tokens"},
      {"model.rope_theta", If(m.has_rope_theta(), m.rope_theta()), 1e12,
       "base"},
      {"model.norm_eps", If(m.has_norm_eps(), m.norm_eps()), 1, "epsilon"},
      {"cluster.nodes", If(true, c.nodes()), 1e6, "nodes"},
      {"cluster.gpus_per_node", If(true, c.gpus_per_node()), 1024, "GPUs"},
      {"cluster.intra_node_gbs", If(c.has_intra_node_gbs(), c.intra_node_gbs()),
       1e6, "GB/s"},
      {"cluster.inter_node_gbs", If(c.has_inter_node_gbs(), c.inter_node_gbs()),
       1e6, "GB/s"},
      {"cluster.intra_node_latency_us",
       If(c.has_intra_node_latency_us(), c.intra_node_latency_us()), 1e6,
       "microseconds"},
      {"cluster.inter_node_latency_us",
       If(c.has_inter_node_latency_us(), c.inter_node_latency_us()), 1e6,
       "microseconds"},
      {"cluster.memory_headroom_gib",
       If(c.has_memory_headroom_gib(), c.memory_headroom_gib()), 1e6, "GiB"},
      {"cluster.memory_headroom_fraction",
       If(c.has_memory_headroom_fraction(), c.memory_headroom_fraction()), 1,
       "of the memory"},
      {"cluster.gpu.peak_dense_tflops",
       If(g.has_peak_dense_tflops(), g.peak_dense_tflops()), 1e5, "TFLOP/s"},
      {"cluster.gpu.peak_fp8_tflops",
       If(g.has_peak_fp8_tflops(), g.peak_fp8_tflops()), 1e5, "TFLOP/s"},
      {"cluster.gpu.memory_bytes", If(g.has_memory_bytes(), g.memory_bytes()),
       kPiB, "bytes, 1 PiB"},
      {"cluster.gpu.hbm_gbs", If(g.has_hbm_gbs(), g.hbm_gbs()), 1e6, "GB/s"},
      {"cluster.gpu.nvlink_gbs", If(g.has_nvlink_gbs(), g.nvlink_gbs()), 1e6,
       "GB/s"},
      {"cluster.gpu.inter_node_gbs",
       If(g.has_inter_node_gbs(), g.inter_node_gbs()), 1e6, "GB/s"},
      {"cluster.gpu.tdp_w", If(g.has_tdp_w(), g.tdp_w()), 1e5, "watts"},
      {"cluster.gpu.idle_w", If(g.has_idle_w(), g.idle_w()), 1e5, "watts"},
      {"training.global_batch", If(true, t.global_batch()), 1 << 24,
       "sequences"},
      {"training.seq_len", If(true, t.seq_len()), 1 << 24, "tokens"},
      {"training.total_tokens", If(true, t.total_tokens()), 1e15, "tokens"},
      {"search.top", If(s.search().has_top(), s.search().top()), 1e9,
       "layouts"},
      {"trials.max_trials", If(o.has_max_trials(), o.max_trials()), 10000,
       "trials"},
      {"trials.time_budget_s", If(true, o.time_budget_s()), kYearS,
       "seconds, a year"},
      {"trials.first_rung", If(o.has_first_rung(), o.first_rung()), 10000,
       "trials"},
      {"trials.eta", If(o.has_eta(), o.eta()), 100, "factor"},
      {"trials.warmup_steps", If(o.has_warmup_steps(), o.warmup_steps()),
       10000, "steps"},
      {"trials.steps", If(o.has_steps(), o.steps()), 100000, "steps"},
      {"trials.layers", If(true, o.layers()), 100000, "layers"},
      {"trials.trial_time_limit_s",
       If(o.has_trial_time_limit_s(), o.trial_time_limit_s()), kWeekS,
       "seconds, a week"},
      {"trials.memory_limit_bytes", If(true, o.memory_limit_bytes()), kPiB,
       "bytes, 1 PiB"},
      {"trials.stop_margin", If(o.has_stop_margin(), o.stop_margin()), 100,
       "fraction"},
  };
  for (const Bounded& b : bounds) {
    if (absl::Status st = Check(b); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace tessera::service
