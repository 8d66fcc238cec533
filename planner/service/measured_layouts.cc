#include "planner/service/measured_layouts.h"

#include "planner/service/trial_geometry.h"

namespace tessera::service {

double MeasuredTokensPerSPerGpu(const db::Trial& trial) {
  if (trial.status != db::TrialState::kOk || !trial.measured) return 0;
  if (trial.measured->tokens_per_s_per_gpu > 0) {
    return trial.measured->tokens_per_s_per_gpu;
  }
  const int64_t world = trial.layout.world_size();
  return world > 0 ? trial.measured->tokens_per_s / static_cast<double>(world)
                   : 0;
}

std::map<std::string, MeasuredLayout> MeasuredLayouts(
    const std::vector<db::Trial>& trials) {
  std::map<std::string, MeasuredLayout> out;
  for (const db::Trial& t : trials) {
    const double value = MeasuredTokensPerSPerGpu(t);
    if (!(value > 0)) continue;
    const std::string key = LayoutKey(t.layout);
    auto it = out.find(key);
    if (it == out.end()) {
      out.emplace(key, MeasuredLayout{t, value});
      continue;
    }
    MeasuredLayout& m = it->second;
    if (t.rung > m.trial.rung ||
        (t.rung == m.trial.rung && value > m.tokens_per_s_per_gpu)) {
      m = MeasuredLayout{t, value};
    }
  }
  return out;
}

const MeasuredLayout* BestMeasured(
    const std::map<std::string, MeasuredLayout>& measured) {
  const MeasuredLayout* best = nullptr;
  for (const auto& [key, m] : measured) {
    if (best == nullptr ||
        m.tokens_per_s_per_gpu > best->tokens_per_s_per_gpu ||
        (m.tokens_per_s_per_gpu == best->tokens_per_s_per_gpu &&
         m.trial.id < best->trial.id)) {
      best = &m;
    }
  }
  return best;
}

}  // namespace tessera::service
