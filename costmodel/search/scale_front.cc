#include "costmodel/search/scale_front.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/power/power.h"

namespace tessera::costmodel {
namespace {

// Whether a is no worse than b in all three and better in one.
bool Dominates(const ScalePoint& a, const ScalePoint& b) {
  const bool no_worse = a.seconds_per_token <= b.seconds_per_token &&
                        a.joules_per_token <= b.joules_per_token &&
                        a.gpu_seconds_per_token <= b.gpu_seconds_per_token;
  const bool better = a.seconds_per_token < b.seconds_per_token ||
                      a.joules_per_token < b.joules_per_token ||
                      a.gpu_seconds_per_token < b.gpu_seconds_per_token;
  return no_worse && better;
}

bool Equal(const ScalePoint& a, const ScalePoint& b) {
  return a.seconds_per_token == b.seconds_per_token &&
         a.joules_per_token == b.joules_per_token &&
         a.gpu_seconds_per_token == b.gpu_seconds_per_token;
}

// The objective's figure per token.
double Cost(const ScalePoint& p, RunObjective objective) {
  switch (objective) {
    case RunObjective::kTime:
      return p.seconds_per_token;
    case RunObjective::kEnergy:
      return p.joules_per_token;
    case RunObjective::kGpuHours:
      return p.gpu_seconds_per_token;
  }
  return p.seconds_per_token;
}

// "18%", "0.4%" (a decimal below 10%).
std::string Percent(double fraction) {
  const double percent = 100 * std::abs(fraction);
  return percent < 10 ? absl::StrFormat("%.1f%%", percent)
                      : absl::StrFormat("%.0f%%", percent);
}

}  // namespace

std::string GroupedCount(int64_t n) {
  const std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

absl::string_view RunObjectiveName(RunObjective objective) {
  switch (objective) {
    case RunObjective::kTime:
      return "time";
    case RunObjective::kEnergy:
      return "energy";
    case RunObjective::kGpuHours:
      return "gpu-hours";
  }
  return "time";
}

absl::StatusOr<RunObjective> ParseRunObjective(absl::string_view name) {
  for (RunObjective o :
       {RunObjective::kTime, RunObjective::kEnergy, RunObjective::kGpuHours}) {
    if (name == RunObjectiveName(o)) return o;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "search.scale.objective: '", name, "' is not one of time, energy, gpu-hours"));
}

ScalePoint MakeScalePoint(const Workload& at_count, int64_t cluster_gpus,
                          const LayoutEvaluation& evaluation,
                          bool charge_idle_gpus) {
  ScalePoint p;
  p.gpus = at_count.cluster.world_size();
  p.nodes = at_count.cluster.nodes;
  p.evaluation = evaluation;
  const Prediction& pred = evaluation.prediction;
  if (!(pred.tokens_per_s > 0) || !(pred.tokens_per_joule > 0)) {
    const double inf = std::numeric_limits<double>::infinity();
    p.seconds_per_token = p.joules_per_token = p.gpu_seconds_per_token = inf;
    return p;
  }
  const double gpus = static_cast<double>(p.gpus);
  const int64_t unused = std::max<int64_t>(0, cluster_gpus - p.gpus);
  p.seconds_per_token = 1 / pred.tokens_per_s;
  // Idle GPUs draw idle_w for as long as the job runs.
  p.idle_joules_per_token =
      charge_idle_gpus ? static_cast<double>(unused) *
                             at_count.cluster.gpu.idle_w * p.seconds_per_token
                       : 0;
  p.joules_per_token = 1 / pred.tokens_per_joule + p.idle_joules_per_token;
  p.gpu_seconds_per_token = gpus * p.seconds_per_token;
  const double tokens = at_count.training.total_tokens;
  if (tokens > 0) {
    FullRunPrediction run = PredictFullRun(tokens, pred.tokens_per_s,
                                           pred.watts_per_gpu, p.gpus);
    run.energy_mwh = tokens * p.joules_per_token / 3.6e9;  // 1 MWh = 3.6e9 J
    p.full_run = run;
  }
  return p;
}

std::vector<ScalePoint> ScaleFront(const std::vector<ScalePoint>& points) {
  // Few points (a front per count): the quadratic filter is plenty.
  std::vector<ScalePoint> front;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points[i].seconds_per_token)) continue;
    bool kept = true;
    for (size_t j = 0; j < points.size() && kept; ++j) {
      if (j == i) continue;
      if (Dominates(points[j], points[i])) kept = false;
      if (j < i && Equal(points[j], points[i])) kept = false;
    }
    if (kept) front.push_back(points[i]);
  }
  std::stable_sort(front.begin(), front.end(),
                   [](const ScalePoint& a, const ScalePoint& b) {
                     if (a.seconds_per_token != b.seconds_per_token) {
                       return a.seconds_per_token < b.seconds_per_token;
                     }
                     return a.joules_per_token < b.joules_per_token;
                   });
  return front;
}

ScaleChoice ChooseOnFront(const std::vector<ScalePoint>& front,
                          RunObjective objective,
                          std::optional<double> deadline_days) {
  ScaleChoice choice;
  bool found = false;
  for (size_t i = 0; i < front.size(); ++i) {
    const ScalePoint& p = front[i];
    if (deadline_days.has_value() &&
        (!p.full_run.has_value() || p.full_run->days > *deadline_days)) {
      continue;
    }
    // Strictly less: of equal cost the faster (earlier) stays.
    if (!found || Cost(p, objective) < Cost(front[choice.index], objective)) {
      choice.index = i;
      found = true;
    }
  }
  if (!found) {
    choice.index = 0;  // the fastest
    choice.meets_deadline = false;
  }
  return choice;
}

std::vector<MarginalCost> MarginalCosts(const std::vector<ScalePoint>& front) {
  // The fastest front point of each count, by GPUs descending.
  std::vector<const ScalePoint*> by_count;
  for (const ScalePoint& p : front) {
    auto same = std::find_if(
        by_count.begin(), by_count.end(),
        [&p](const ScalePoint* q) { return q->gpus == p.gpus; });
    if (same == by_count.end()) {
      by_count.push_back(&p);
    } else if (p.seconds_per_token < (*same)->seconds_per_token) {
      *same = &p;
    }
  }
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const ScalePoint* a, const ScalePoint* b) {
                     return a->gpus > b->gpus;
                   });
  std::vector<MarginalCost> costs;
  for (size_t i = 1; i < by_count.size(); ++i) {
    const ScalePoint& more = *by_count[i - 1];
    const ScalePoint& fewer = *by_count[i];
    MarginalCost c;
    c.more_gpus = more.gpus;
    c.fewer_gpus = fewer.gpus;
    c.time_saved_fraction =
        1 - more.seconds_per_token / fewer.seconds_per_token;
    c.extra_energy_fraction =
        more.joules_per_token / fewer.joules_per_token - 1;
    c.extra_gpu_hours_fraction =
        more.gpu_seconds_per_token / fewer.gpu_seconds_per_token - 1;
    costs.push_back(c);
  }
  return costs;
}

std::string DescribeMarginalCost(const MarginalCost& c) {
  const std::string time =
      c.time_saved_fraction >= 0
          ? absl::StrCat("shorten the run by ", Percent(c.time_saved_fraction))
          : absl::StrCat("lengthen the run by ",
                         Percent(c.time_saved_fraction));
  const std::string energy =
      c.extra_energy_fraction >= 0
          ? absl::StrCat(Percent(c.extra_energy_fraction), " more energy")
          : absl::StrCat(Percent(c.extra_energy_fraction), " less energy");
  return absl::StrCat("the last ", GroupedCount(c.more_gpus - c.fewer_gpus),
                      " GPUs (", GroupedCount(c.more_gpus), " rather than ",
                      GroupedCount(c.fewer_gpus), ") ", time, " for ", energy);
}

}  // namespace tessera::costmodel
