#include "service/measured_layouts.h"

#include <algorithm>
#include <cmath>

#include "service/trial_geometry.h"

namespace tessera::service {
namespace {

// a ranks before b: faster, then the lower trial id.
bool Faster(const MeasuredLayout& a, const MeasuredLayout& b) {
  if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  }
  return a.trial.id < b.trial.id;
}

}  // namespace

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
  std::map<std::string, double> log_sum;  // steps x log(tokens/s per GPU)
  for (const db::Trial& t : trials) {
    const double value = MeasuredTokensPerSPerGpu(t);
    if (!(value > 0)) continue;
    const std::string key = LayoutKey(t.layout);
    const int64_t steps = std::max<int64_t>(
        1, t.measured->steps > 0 ? t.measured->steps : t.steps);
    auto it = out.find(key);
    if (it == out.end()) {
      it = out.emplace(key, MeasuredLayout{t, value, 0, 0}).first;
    } else if (t.rung > it->second.trial.rung ||
               (t.rung == it->second.trial.rung &&
                t.id > it->second.trial.id)) {
      it->second.trial = t;
    }
    it->second.trials += 1;
    it->second.steps += steps;
    log_sum[key] += static_cast<double>(steps) * std::log(value);
  }
  for (auto& [key, m] : out) {
    m.tokens_per_s_per_gpu =
        std::exp(log_sum[key] / static_cast<double>(m.steps));
  }
  return out;
}

const MeasuredLayout* BestMeasured(
    const std::map<std::string, MeasuredLayout>& measured) {
  const MeasuredLayout* best = nullptr;
  for (const auto& [key, m] : measured) {
    if (best == nullptr || Faster(m, *best)) best = &m;
  }
  return best;
}

std::vector<const MeasuredLayout*> RankMeasured(
    const std::map<std::string, MeasuredLayout>& measured) {
  std::vector<const MeasuredLayout*> out;
  for (const auto& [key, m] : measured) out.push_back(&m);
  std::sort(out.begin(), out.end(),
            [](const MeasuredLayout* a, const MeasuredLayout* b) {
              return Faster(*a, *b);
            });
  return out;
}

}  // namespace tessera::service
