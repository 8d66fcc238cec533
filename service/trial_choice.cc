#include "service/trial_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/units.h"
#include "service/measured_layouts.h"
#include "service/trial_geometry.h"

namespace tessera::service {
namespace {

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }


double PredictedMemory(const PoolEntry& e) {
  return e.trial_prediction.memory.total_bytes;
}

}  // namespace

double ExpectedGain(double predicted, double log_sd, double best) {
  if (!(predicted > 0)) return 0;
  const double ratio = predicted / best;
  if (!(log_sd > 1e-12)) return std::max(0.0, ratio - 1);
  const double d = std::log(ratio) / log_sd;
  return ratio * std::exp(log_sd * log_sd / 2) * Phi(d + log_sd) - Phi(d);
}

ForecastError EstimateForecastError(const std::vector<db::Trial>& trials,
                                    double prior_log_sd) {
  // The first ok result: trials queued after it were forecast by a
  // calibration fitted to measurements.
  std::optional<absl::Time> first_result;
  for (const db::Trial& t : trials) {
    if (MeasuredTokensPerSPerGpu(t) > 0 && t.finished_at &&
        (!first_result || *t.finished_at < *first_result)) {
      first_result = t.finished_at;
    }
  }
  ForecastError e;
  double sum_sq = 0;
  if (first_result) {
    for (const db::Trial& t : trials) {
      const double measured = MeasuredTokensPerSPerGpu(t);
      if (t.rung != 0 || !(measured > 0) || !t.predicted ||
          !(t.predicted->tokens_per_s > 0) || t.created_at < *first_result) {
        continue;
      }
      const double predicted = t.predicted->tokens_per_s /
                               static_cast<double>(t.layout.world_size());
      const double r = std::log(measured / predicted);
      sum_sq += r * r;
      ++e.forecasts;
    }
  }
  e.log_sd = std::sqrt((kPriorForecasts * prior_log_sd * prior_log_sd + sum_sq) /
                       (kPriorForecasts + static_cast<double>(e.forecasts)));
  e.source =
      e.forecasts == 0
          ? absl::StrFormat("the model's prior error %.1f%%", 100 * prior_log_sd)
          : absl::StrFormat(
                "%d forecast%s of the refitted model and its prior error "
                "%.1f%%",
                e.forecasts, e.forecasts == 1 ? "" : "s", 100 * prior_log_sd);
  return e;
}

std::string ShapeKey(const Layout& l) {
  return absl::StrFormat("tp=%d,pp=%d,vpp=%d,cp=%d", l.tp, l.pp, l.vpp, l.cp);
}

std::string FailureBounds::RuledOut(const PoolEntry& e) const {
  if (memory_bytes && PredictedMemory(e) >= *memory_bytes) {
    return absl::StrFormat(
        "predicted to need %.1f GiB per GPU, at least the %.1f GiB of a "
        "layout that ran out of memory (trial %d)",
        PredictedMemory(e) / kGiB, *memory_bytes / kGiB, memory_trial_id);
  }
  return "";
}

bool FailureBounds::FailedShape(const PoolEntry& e) const {
  return e.plan && failed_shapes.count(ShapeKey(e.plan->layout)) > 0;
}

FailureBounds FailureBoundsOf(const std::vector<db::Trial>& trials,
                              const std::vector<PoolEntry>& pool) {
  std::map<std::string, const PoolEntry*> by_key;
  for (const PoolEntry& e : pool) {
    if (e.plan) by_key.emplace(e.key, &e);
  }
  FailureBounds f;
  for (const db::Trial& t : trials) {
    if (t.status == db::TrialState::kOom) {
      // The current calibration's prediction, comparable with the
      // candidates'; the stored one when the layout left the pool.
      double bytes = 0;
      auto it = by_key.find(LayoutKey(t.layout));
      if (it != by_key.end()) {
        bytes = PredictedMemory(*it->second);
      } else if (t.predicted) {
        bytes = static_cast<double>(t.predicted->peak_memory_bytes);
      }
      if (bytes > 0 && (!f.memory_bytes || bytes < *f.memory_bytes)) {
        f.memory_bytes = bytes;
        f.memory_trial_id = t.id;
      }
    } else if (t.status == db::TrialState::kCrash ||
               t.status == db::TrialState::kTimeout ||
               t.status == db::TrialState::kNan) {
      f.failed_shapes.emplace(ShapeKey(t.layout), t.id);
    }
  }
  return f;
}

std::vector<TrialChoice> ChooseTrials(const ChoiceInput& in, int64_t count) {
  std::vector<const PoolEntry*> open;
  for (const PoolEntry& e : *in.pool) {
    if (!e.plan || in.trialed->count(e.key) > 0) continue;
    if (!in.failures->RuledOut(e).empty()) continue;
    open.push_back(&e);
  }
  std::vector<TrialChoice> out;
  double best = in.best_measured;
  // Shapes that failed are chosen only when nothing else is worth a trial.
  for (const bool allow_failed_shapes : {false, true}) {
    while (static_cast<int64_t>(out.size()) < count) {
      TrialChoice pick;
      double pick_gain = -1;
      for (const PoolEntry* e : open) {
        if (!allow_failed_shapes && in.failures->FailedShape(*e)) continue;
        const double s = std::sqrt(e->coefficient_log_sd * e->coefficient_log_sd +
                                   in.model_log_sd * in.model_log_sd);
        // Nothing measured: the best predicted first (the pool's order).
        const double gain =
            best > 0 ? ExpectedGain(e->trial_tokens_per_s_per_gpu(), s, best)
                     : std::numeric_limits<double>::infinity();
        if (gain > pick_gain) {
          pick = TrialChoice{e, s, gain};
          pick_gain = gain;
        }
      }
      if (pick.entry == nullptr || (best > 0 && pick_gain < in.min_gain)) {
        break;
      }
      out.push_back(pick);
      open.erase(std::find(open.begin(), open.end(), pick.entry));
      // The believer: the next choices assume this one measures as
      // predicted.
      best = std::max(best, pick.entry->trial_tokens_per_s_per_gpu());
    }
    if (static_cast<int64_t>(out.size()) >= count) break;
  }
  return out;
}

}  // namespace tessera::service
