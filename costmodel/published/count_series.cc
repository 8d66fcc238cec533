#include "costmodel/published/count_series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tessera::costmodel {
namespace {

// What a series' rows share: the source, model, GPU, sequence, precision,
// stack options and the layout but for dp and gradient accumulation (a
// shard group equal to dp is "full").
std::string SeriesKey(const PublishedRun& r) {
  const Layout& l = r.layout;
  const TrainingConfig& t = r.workload.training;
  const std::string shard =
      l.zero == 0 || l.shard_group == l.dp ? "full"
                                           : absl::StrCat(l.shard_group);
  return absl::StrCat(
      r.source, " ", r.model, " on ", r.workload.cluster.gpu.name, ", seq ",
      t.seq_len, ", ", PrecisionName(t.precision),
      t.stack_options.empty()
          ? ""
          : absl::StrCat(" +", absl::StrJoin(t.stack_options, ",")),
      ", tp", l.tp, l.sp ? "+sp" : "", " pp", l.pp, l.vpp > 1 ? "x" : "",
      l.vpp > 1 ? absl::StrCat(l.vpp) : "", l.cp > 1 ? " cp" : "",
      l.cp > 1 ? absl::StrCat(l.cp) : "", " zero", l.zero, "/", shard, " mb",
      l.micro_batch, " ", RecomputeName(l.recompute));
}

int64_t Gpus(const ValidatedRun* v) {
  return v->run->workload.cluster.world_size();
}

double PerGpu(const ValidatedRun* v) {
  return v->evaluation.prediction.tokens_per_s_per_gpu;
}

// The series' smallest-count row (the first at that count).
const ValidatedRun* Base(const CountSeries& s) { return s.rows.front(); }

// Predicted over measured scaling against the series' smallest count.
double ScalingError(const CountSeries& s, const ValidatedRun* v) {
  const ValidatedRun* base = Base(s);
  const double measured = v->run->measured_tokens_per_s_per_gpu /
                          base->run->measured_tokens_per_s_per_gpu;
  const double predicted = PerGpu(v) / PerGpu(base);
  return predicted / measured - 1;
}

}  // namespace

std::vector<CountSeries> SeriesByGpuCount(const ValidationReport& report) {
  std::map<std::string, std::vector<const ValidatedRun*>> by_key;
  for (const ValidatedRun& v : report.rows) {
    if (!v.evaluation.feasible) continue;
    by_key[SeriesKey(*v.run)].push_back(&v);
  }
  std::vector<CountSeries> series;
  for (auto& [key, rows] : by_key) {
    std::set<int64_t> counts;
    for (const ValidatedRun* v : rows) counts.insert(Gpus(v));
    if (counts.size() < 2) continue;
    std::stable_sort(rows.begin(), rows.end(),
                     [](const ValidatedRun* a, const ValidatedRun* b) {
                       return Gpus(a) < Gpus(b);
                     });
    series.push_back(CountSeries{key, rows});
  }
  return series;
}

CountSeriesSummary SummarizeCountSeries(const std::vector<CountSeries>& all) {
  CountSeriesSummary s;
  double abs_sum = 0, scaling_sum = 0;
  for (const CountSeries& series : all) {
    ++s.series;
    for (const ValidatedRun* v : series.rows) {
      ++s.rows;
      abs_sum += std::abs(v->error);
      if (std::abs(v->error) <= 0.1) ++s.within_10pct;
      if (Gpus(v) == Gpus(Base(series))) continue;
      const double e = ScalingError(series, v);
      ++s.scaling_rows;
      scaling_sum += std::abs(e);
      if (std::abs(e) <= 0.1) ++s.scaling_within_10pct;
    }
  }
  if (s.rows > 0) s.mape = abs_sum / static_cast<double>(s.rows);
  if (s.scaling_rows > 0) {
    s.scaling_mape = scaling_sum / static_cast<double>(s.scaling_rows);
  }
  return s;
}

void PrintCountSeries(const std::vector<CountSeries>& all, std::ostream& out) {
  for (const CountSeries& s : all) {
    out << s.key << "\n";
    out << absl::StrFormat("  %6s %6s %-28s %10s %10s %7s %8s %8s %6s %6s\n",
                           "GPUs", "batch", "layout", "meas tok/s",
                           "pred tok/s", "error", "meas x", "pred x", "pred W",
                           "meas W");
    for (const ValidatedRun* v : s.rows) {
      const Layout& l = v->evaluation.layout;
      const bool base = Gpus(v) == Gpus(Base(s));
      const double measured_x = v->run->measured_tokens_per_s_per_gpu /
                                Base(s)->run->measured_tokens_per_s_per_gpu;
      const double predicted_x = PerGpu(v) / PerGpu(Base(s));
      out << absl::StrFormat(
          "  %6d %6d %-28s %10.0f %10.0f %+6.1f%% %8s %8s %6.0f %6s\n",
          Gpus(v), v->run->workload.training.global_batch,
          absl::StrCat("dp", l.dp, " ga", l.grad_accum, " (row ",
                       v->run->index, ")"),
          v->run->measured_tokens_per_s_per_gpu, PerGpu(v), 100 * v->error,
          base ? "1" : absl::StrFormat("%.3f", measured_x),
          base ? "1" : absl::StrFormat("%.3f", predicted_x),
          v->evaluation.prediction.watts_per_gpu, "-");
    }
  }
  const CountSeriesSummary sum = SummarizeCountSeries(all);
  out << absl::StrFormat(
      "\n%d series of one model at several GPU counts, %d rows: tokens/s "
      "per GPU MAPE %.1f%%, %d of %d within 10%%; scaling against each "
      "series' smallest count (x): MAPE %.1f%%, %d of %d within 10%%; "
      "measured watts: none (no source in the file publishes power)\n",
      sum.series, sum.rows, 100 * sum.mape, sum.within_10pct, sum.rows,
      100 * sum.scaling_mape, sum.scaling_within_10pct, sum.scaling_rows);
}

}  // namespace tessera::costmodel
