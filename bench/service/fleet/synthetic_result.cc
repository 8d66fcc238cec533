#include "bench/service/fleet/synthetic_result.h"

#include <functional>

#include "core/trial_result.h"
#include "proto/convert.h"

namespace tessera::bench {

std::string SyntheticResultJson(const v1::TrialAssignment& a) {
  TrialResult r;
  r.status = TrialStatus::kOk;
  r.layout = *LayoutFromProto(a.layout());
  r.backend = a.backend();
  r.model = "tiny";
  r.device = "simulated";
  r.ranks = a.world_size();
  r.global_batch = a.global_batch();
  r.seq_len = a.seq_len();
  r.warmup_steps = a.warmup_steps();
  r.steps = a.steps();
  const double step_s =
      0.05 +
      0.001 * static_cast<double>(
                  std::hash<std::string>{}(FormatLayout(r.layout)) % 100);
  r.step_time_s = {.median = step_s, .p10 = step_s, .p90 = step_s};
  r.tokens_per_s = static_cast<double>(a.global_batch() * a.seq_len()) / step_s;
  r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(r.ranks);
  r.peak_memory_bytes.assign(static_cast<size_t>(r.ranks), int64_t{1} << 24);
  r.compute_s = 0.9 * step_s;
  r.comm_s = r.exposed_comm_s = 0.1 * step_s;
  r.loss.assign(static_cast<size_t>(a.warmup_steps() + a.steps()), 5.0);
  r.step_times_s.assign(r.loss.size(), step_s);
  return TrialResultToJson(r).dump();
}

}  // namespace tessera::bench
