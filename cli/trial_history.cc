#include "cli/trial_history.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/service_json.h"
#include "cli/service_names.h"
#include "cli/text_table.h"
#include "cli/time_text.h"

namespace tessera::cli {
namespace {

using Key = std::tuple<std::string, std::string, int64_t, std::string>;

bool IsFailure(v1::TrialState s) {
  return s == v1::TRIAL_OOM || s == v1::TRIAL_NAN || s == v1::TRIAL_TIMEOUT ||
         s == v1::TRIAL_CRASH || s == v1::TRIAL_INVALID;
}

int64_t Gpus(const v1::Layout& l) {
  return std::max<int64_t>(1, l.tp()) * std::max<int64_t>(1, l.pp()) *
         std::max<int64_t>(1, l.cp()) * l.dp();
}

std::optional<double> Max(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return *std::max_element(values.begin(), values.end());
}

// What the group's ok trials measured.
struct Measurements {
  std::vector<double> tokens_per_s, mfu, watts, tokens_per_joule;
};

void Summarize(const Measurements& m, LayoutHistory* g) {
  g->best_tokens_per_s = Max(m.tokens_per_s);
  g->median_tokens_per_s = Median(m.tokens_per_s);
  g->best_mfu = Max(m.mfu);
  g->median_watts_per_gpu = Median(m.watts);
  g->best_tokens_per_joule = Max(m.tokens_per_joule);
}

nlohmann::json Optional(const std::optional<double>& v) {
  return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<LayoutHistory> GroupByLayout(const Trials& trials) {
  std::map<Key, LayoutHistory> groups;
  std::map<Key, Measurements> measured;
  for (const v1::Trial& t : trials) {
    const Key key{t.model(), t.gpu(), Gpus(t.layout()),
                  CompactLayout(t.layout())};
    LayoutHistory& g = groups[key];
    if (g.trial_ids.empty()) {
      g.model = t.model();
      g.gpu = t.gpu();
      g.gpus = Gpus(t.layout());
      g.layout = t.layout();
    }
    g.trial_ids.push_back(t.id());
    g.study_ids.push_back(t.study_id());
    g.last_unix_ms = std::max(g.last_unix_ms, t.finished_unix_ms() > 0
                                                  ? t.finished_unix_ms()
                                                  : t.created_unix_ms());
    if (IsFailure(t.state())) ++g.failed;
    if (t.state() != v1::TRIAL_OK || !t.has_measured()) continue;
    ++g.ok;
    const v1::TrialMetrics& m = t.measured();
    Measurements& ms = measured[key];
    if (ms.tokens_per_s.empty() || m.tokens_per_s() > *Max(ms.tokens_per_s)) {
      g.best_trial_id = t.id();
    }
    ms.tokens_per_s.push_back(m.tokens_per_s());
    ms.mfu.push_back(m.mfu());
    if (m.has_watts_per_gpu()) ms.watts.push_back(m.watts_per_gpu());
    if (m.has_tokens_per_joule()) {
      ms.tokens_per_joule.push_back(m.tokens_per_joule());
    }
  }
  std::vector<LayoutHistory> result;
  for (auto& [key, g] : groups) {
    Summarize(measured[key], &g);
    std::sort(g.trial_ids.begin(), g.trial_ids.end());
    std::sort(g.study_ids.begin(), g.study_ids.end());
    g.study_ids.erase(std::unique(g.study_ids.begin(), g.study_ids.end()),
                      g.study_ids.end());
    result.push_back(std::move(g));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const LayoutHistory& a, const LayoutHistory& b) {
                     const double ta = a.best_tokens_per_s.value_or(-1);
                     const double tb = b.best_tokens_per_s.value_or(-1);
                     if (ta != tb) return ta > tb;
                     return a.trial_ids.size() > b.trial_ids.size();
                   });
  return result;
}

void PrintHistoryTable(const std::vector<LayoutHistory>& groups,
                       std::ostream& out, size_t max_width) {
  // Too wide for max_width: the layout is wrapped and the studies cut first,
  // then the
  // last time, the ok and failed counts, studies, median W/GPU, median
  // tokens/s, best tokens/J and best MFU go, in that order.
  TextTable table(
      {TableColumn("layout").Wrap(28), TableColumn("model"), TableColumn("gpu"),
       TableColumn("GPUs", kRight), TableColumn("trials", kRight),
       TableColumn("ok", kRight).Drop(2), TableColumn("failed", kRight).Drop(2),
       TableColumn("best tokens/s", kRight),
       TableColumn("median tokens/s", kRight).Drop(5).Short("median"),
       TableColumn("best MFU", kRight).Drop(7).Short("MFU"),
       TableColumn("median W/GPU", kRight).Drop(4).Short("W/GPU"),
       TableColumn("best tokens/J", kRight).Drop(6).Short("tokens/J"),
       TableColumn("studies").Drop(3).Cut(8), TableColumn("last").Drop(1)});
  for (const LayoutHistory& g : groups) {
    table.AddRow({
        CompactLayout(g.layout),
        g.model,
        g.gpu,
        g.gpus > 0 ? absl::StrCat(g.gpus) : "?",
        absl::StrCat(g.trial_ids.size()),
        absl::StrCat(g.ok),
        absl::StrCat(g.failed),
        g.best_tokens_per_s.has_value()
            ? absl::StrFormat("%.0f (trial %d)", *g.best_tokens_per_s,
                              g.best_trial_id)
            : kNotMeasured,
        g.median_tokens_per_s.has_value()
            ? absl::StrFormat("%.0f", *g.median_tokens_per_s)
            : kNotMeasured,
        g.best_mfu.has_value() ? absl::StrFormat("%.1f%%", 100 * *g.best_mfu)
                               : kNotMeasured,
        g.median_watts_per_gpu.has_value()
            ? absl::StrFormat("%.0f", *g.median_watts_per_gpu)
            : kNotMeasured,
        g.best_tokens_per_joule.has_value() ? Readable(*g.best_tokens_per_joule)
                                            : kNotMeasured,
        absl::StrJoin(g.study_ids, ","),
        FormatUnixMs(g.last_unix_ms),
    });
  }
  table.Print(out, max_width);
}

void PrintHistoryCsv(const std::vector<LayoutHistory>& groups,
                     std::ostream& out) {
  out << CsvLine({"layout", "model", "gpu", "gpus", "trials", "ok", "failed",
                  "best_tokens_per_s", "best_trial_id", "median_tokens_per_s",
                  "best_mfu", "median_watts_per_gpu", "best_tokens_per_joule",
                  "studies", "trial_ids", "last"});
  for (const LayoutHistory& g : groups) {
    out << CsvLine({
        CompactLayout(g.layout),
        g.model,
        g.gpu,
        absl::StrCat(g.gpus),
        absl::StrCat(g.trial_ids.size()),
        absl::StrCat(g.ok),
        absl::StrCat(g.failed),
        CsvNumber(g.best_tokens_per_s),
        g.best_trial_id > 0 ? absl::StrCat(g.best_trial_id) : "",
        CsvNumber(g.median_tokens_per_s),
        CsvNumber(g.best_mfu),
        CsvNumber(g.median_watts_per_gpu),
        CsvNumber(g.best_tokens_per_joule),
        absl::StrJoin(g.study_ids, " "),
        absl::StrJoin(g.trial_ids, " "),
        FormatUnixMs(g.last_unix_ms),
    });
  }
}

nlohmann::json HistoryJson(const std::vector<LayoutHistory>& groups) {
  nlohmann::json all = nlohmann::json::array();
  for (const LayoutHistory& g : groups) {
    all.push_back(nlohmann::json{
        {"layout", LayoutProtoJson(g.layout)},
        {"model", g.model},
        {"gpu", g.gpu},
        {"gpus", g.gpus},
        {"trials", g.trial_ids},
        {"studies", g.study_ids},
        {"ok", g.ok},
        {"failed", g.failed},
        {"best_tokens_per_s", Optional(g.best_tokens_per_s)},
        {"best_trial_id", g.best_trial_id > 0 ? nlohmann::json(g.best_trial_id)
                                              : nlohmann::json(nullptr)},
        {"median_tokens_per_s", Optional(g.median_tokens_per_s)},
        {"best_mfu", Optional(g.best_mfu)},
        {"median_watts_per_gpu", Optional(g.median_watts_per_gpu)},
        {"best_tokens_per_joule", Optional(g.best_tokens_per_joule)},
        {"last", FormatUnixMs(g.last_unix_ms)},
    });
  }
  return all;
}

}  // namespace tessera::cli
