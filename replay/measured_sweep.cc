#include "replay/measured_sweep.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/layout_json.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "costmodel/resolved_workload.h"
#include "costmodel/published/published_runs.h"
#include "costmodel/published/sweep_collectives.h"
#include "proto/convert.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera::replay {
namespace {

using Json = nlohmann::json;

// A row while its group is being collected: every launch of one layout.
struct Launch {
  int64_t index = 0;
  Layout layout;
  TrialStatus outcome = TrialStatus::kOk;
  std::string reason;
  double tokens_per_s_per_gpu = 0;
  std::optional<double> peak_memory_bytes;
};

struct GroupBuilder {
  std::string key;
  std::string base_name;
  v1::StudySpec spec;
  Workload workload;
  std::vector<Launch> launches;
};

// Groups keyed by the workload they run, in first-appearance order.
class Grouping {
 public:
  GroupBuilder& Of(const std::string& key, const std::string& base_name,
                   const v1::StudySpec& spec, const Workload& workload) {
    auto it = index_.find(key);
    if (it != index_.end()) return groups_[it->second];
    index_[key] = groups_.size();
    GroupBuilder g;
    g.key = key;
    g.base_name = base_name;
    g.spec = spec;
    g.workload = workload;
    groups_.push_back(std::move(g));
    return groups_.back();
  }
  std::vector<GroupBuilder>& groups() { return groups_; }

 private:
  std::map<std::string, size_t> index_;
  std::vector<GroupBuilder> groups_;
};

std::string WorkloadKey(const v1::StudySpec& spec) {
  v1::StudySpec s = spec;
  s.clear_name();
  return StudySpecToJson(s);
}

// The rows of one layout as one: measured when any launch measured (the
// mean), else the first failure.
SweepRow Merge(const std::vector<const Launch*>& launches) {
  SweepRow row;
  row.index = launches.front()->index;
  row.layout = launches.front()->layout;
  double sum = 0;
  int64_t ok = 0;
  std::vector<double> memory;
  for (const Launch* l : launches) {
    if (l->outcome != TrialStatus::kOk) continue;
    sum += l->tokens_per_s_per_gpu;
    ++ok;
    if (l->peak_memory_bytes) memory.push_back(*l->peak_memory_bytes);
  }
  if (ok > 0) {
    row.outcome = TrialStatus::kOk;
    row.tokens_per_s_per_gpu = sum / static_cast<double>(ok);
    if (!memory.empty()) {
      row.peak_memory_bytes = *std::max_element(memory.begin(), memory.end());
    }
    return row;
  }
  row.outcome = launches.front()->outcome;
  row.failure_reason = launches.front()->reason;
  return row;
}

// Finishes the groups: one row per layout, names made unique, too-small
// groups reported as skipped.
void Finish(Grouping& grouping,
            const std::vector<costmodel::CollectiveMeasurement>& collectives,
            const SweepReadOptions& options, MeasuredSweep* out) {
  std::map<std::string, int64_t> name_uses;
  for (GroupBuilder& g : grouping.groups()) {
    SweepGroup group;
    const int64_t use = ++name_uses[g.base_name];
    group.name =
        use == 1 ? g.base_name : absl::StrCat(g.base_name, " #", use);
    group.spec = g.spec;
    group.spec.set_name(group.name);
    group.workload = g.workload;
    group.collectives = collectives;
    std::map<std::string, std::vector<const Launch*>> by_layout;
    std::vector<std::string> order;
    for (const Launch& l : g.launches) {
      const std::string key = FormatLayout(l.layout);
      if (by_layout[key].empty()) order.push_back(key);
      by_layout[key].push_back(&l);
    }
    for (const std::string& key : order) {
      group.rows.push_back(Merge(by_layout[key]));
    }
    if (group.OkRows() < options.min_ok_rows) {
      out->skipped.push_back(absl::StrFormat(
          "group %s: %d measured layout(s), fewer than %d: nothing to search",
          group.name, group.OkRows(), options.min_ok_rows));
      continue;
    }
    out->groups.push_back(std::move(group));
  }
}

absl::StatusOr<std::string> String(const Json& row, const char* key) {
  if (!row.contains(key) || !row[key].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": required, a string"));
  }
  return row[key].get<std::string>();
}

absl::StatusOr<int64_t> Integer(const Json& row, const char* key,
                                std::optional<int64_t> absent = std::nullopt) {
  if (!row.contains(key) || row[key].is_null()) {
    if (absent) return *absent;
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": required, an integer"));
  }
  if (!row[key].is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": must be an integer, got ", row[key].dump()));
  }
  return row[key].get<int64_t>();
}

std::string TextOr(const Json& row, const char* key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>()
                                                   : "";
}

// "zero0".."zero3" (usp_sweep.json's zero_or_fsdp).
absl::StatusOr<int64_t> ZeroStage(const Json& row) {
  if (!row.contains("zero_or_fsdp") || row["zero_or_fsdp"].is_null()) return 0;
  const std::string text = TextOr(row, "zero_or_fsdp");
  static const std::regex kZero("^zero([0-3])$");
  std::smatch m;
  if (!std::regex_match(text, m, kZero)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero_or_fsdp: \"", text, "\" is not zero0, zero1, zero2 or zero3"));
  }
  return std::stoll(m[1].str());
}

// The peak memory of a row: "measured_peak_memory_gib", or the notes'
// "peak GPU memory 50.2 GB" (GiB, as PyTorch's tools print it).
std::optional<double> PeakMemoryBytes(const Json& row) {
  if (row.contains("measured_peak_memory_gib") &&
      row["measured_peak_memory_gib"].is_number()) {
    return row["measured_peak_memory_gib"].get<double>() * kGiB;
  }
  static const std::regex kPeak("peak GPU memory ([0-9]+(\\.[0-9]+)?) GB");
  const std::string notes = TextOr(row, "notes");
  std::smatch m;
  if (std::regex_search(notes, m, kPeak)) return std::stod(m[1].str()) * kGiB;
  return std::nullopt;
}

// Tied input and output embeddings: the row's "tie_embeddings", else what
// its notes say ("tied embeddings" / "untied embeddings"), else untied.
bool TiedEmbeddings(const Json& row) {
  if (row.contains("tie_embeddings") && row["tie_embeddings"].is_boolean()) {
    return row["tie_embeddings"].get<bool>();
  }
  const std::string notes = absl::AsciiStrToLower(TextOr(row, "notes"));
  if (absl::StrContains(notes, "untied embeddings")) return false;
  return absl::StrContains(notes, "tied embeddings");
}

absl::StatusOr<TrialStatus> OutcomeOf(const Json& row,
                                      const SweepReadOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const std::string status, String(row, "status"));
  if (status == "failed") return options.failed_as;
  absl::StatusOr<TrialStatus> s = ParseTrialStatus(status);
  if (!s.ok() || *s == TrialStatus::kInvalid) {
    return absl::InvalidArgumentError(
        absl::StrCat("status: \"", status,
                     "\" is not ok, failed, oom, crash, timeout or nan"));
  }
  return *s;
}

// The spec of a sweep row's workload.
absl::StatusOr<v1::StudySpec> RowSpec(const Json& row, const Json& file,
                                      const SweepReadOptions& options) {
  v1::StudySpec spec;
  v1::ModelSpec* m = spec.mutable_model();
  TESSERA_ASSIGN_OR_RETURN(const int64_t layers, Integer(row, "layers"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t hidden, Integer(row, "hidden"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t heads, Integer(row, "heads"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t kv_heads,
                           Integer(row, "kv_heads", heads));
  TESSERA_ASSIGN_OR_RETURN(const int64_t ffn, Integer(row, "ffn"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t vocab, Integer(row, "vocab"));
  m->set_layers(layers);
  m->set_hidden(hidden);
  m->set_heads(heads);
  m->set_kv_heads(kv_heads);
  m->set_ffn_hidden(ffn);
  m->set_vocab(vocab);
  m->set_tie_embeddings(TiedEmbeddings(row));
  if (!TextOr(row, "mlp").empty()) m->set_mlp(TextOr(row, "mlp"));

  TESSERA_ASSIGN_OR_RETURN(const std::string gpu, String(row, "gpu"));
  const std::optional<std::string> preset = costmodel::GpuPresetOfName(gpu);
  if (!preset) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu: \"", gpu, "\" is not a known GPU (H100, H200, A100)"));
  }
  TESSERA_ASSIGN_OR_RETURN(const int64_t gpus, Integer(row, "gpus"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t gpn, Integer(row, "gpus_per_node"));
  if (gpn < 1 || gpus < gpn || gpus % gpn != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpus: ", gpus, " is not whole nodes of gpus_per_node ", gpn));
  }
  v1::ClusterSpec* c = spec.mutable_cluster();
  c->mutable_gpu()->set_preset(*preset);
  c->set_nodes(gpus / gpn);
  c->set_gpus_per_node(gpn);

  v1::TrainingSpec* t = spec.mutable_training();
  TESSERA_ASSIGN_OR_RETURN(const int64_t gb, Integer(row, "global_batch_seqs"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t seq, Integer(row, "seq_len"));
  t->set_global_batch(gb);
  t->set_seq_len(seq);
  const std::string precision = TextOr(row, "precision");
  t->set_precision(precision.empty() ? "bf16" : precision);
  std::string stack = TextOr(row, "stack");
  if (stack.empty()) stack = TextOr(file, "stack");
  if (stack.empty()) stack = options.stack;
  if (stack.empty()) stack = costmodel::StackOfSource(TextOr(row, "source"));
  if (stack.empty()) {
    return absl::InvalidArgumentError(
        "stack: the row names no training stack and its source names none "
        "Tessera knows: give --stack");
  }
  t->set_stack(stack);
  return spec;
}

// The row's layout as written (errors: a malformed field).
absl::StatusOr<Layout> RowLayout(const Json& row) {
  Layout l;
  TESSERA_ASSIGN_OR_RETURN(l.tp, Integer(row, "tp", 1));
  TESSERA_ASSIGN_OR_RETURN(l.pp, Integer(row, "pp", 1));
  TESSERA_ASSIGN_OR_RETURN(l.vpp, Integer(row, "vpp", 1));
  TESSERA_ASSIGN_OR_RETURN(l.cp, Integer(row, "cp", 1));
  TESSERA_ASSIGN_OR_RETURN(l.dp, Integer(row, "dp", 0));
  TESSERA_ASSIGN_OR_RETURN(l.micro_batch, Integer(row, "micro_batch", 1));
  TESSERA_ASSIGN_OR_RETURN(l.zero, ZeroStage(row));
  // Sequence parallelism: the row's, else on with tensor parallelism (the
  // sweeps' frameworks run TP in reduce-scatter mode).
  l.sp = row.contains("sp") && row["sp"].is_boolean() ? row["sp"].get<bool>()
                                                      : l.tp > 1;
  const std::string recompute = TextOr(row, "recompute");
  if (!recompute.empty()) {
    TESSERA_ASSIGN_OR_RETURN(l.recompute, ParseRecompute(recompute));
  }
  return l;
}

// `l` resolved for the workload and checked against the rules and the
// stack (errors: a layout that cannot run there).
absl::StatusOr<Layout> RunnableLayout(const Layout& l, const Workload& w) {
  TESSERA_ASSIGN_OR_RETURN(const costmodel::ResolvedWorkload resolved,
                           costmodel::ResolveWorkload(w));
  return costmodel::RunnableLayout(resolved, l);
}

absl::StatusOr<MeasuredSweep> ParseSweepRows(const Json& file,
                                             absl::string_view source,
                                             const SweepReadOptions& options) {
  MeasuredSweep out;
  out.source = std::string(source);
  out.format = "sweep";
  Grouping grouping;
  int64_t gpus_per_node = 0;
  const Json& rows = file["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    const Json& row = rows[i];
    auto at = [&](const absl::Status& s) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": row ", i, ": ", s.message()));
    };
    if (!row.is_object()) return at(absl::InvalidArgumentError("not an object"));
    absl::StatusOr<v1::StudySpec> spec = RowSpec(row, file, options);
    if (!spec.ok()) return at(spec.status());
    absl::StatusOr<Workload> workload = CheckedWorkloadFromSpec(*spec);
    if (!workload.ok()) return at(workload.status());
    absl::StatusOr<TrialStatus> outcome = OutcomeOf(row, options);
    if (!outcome.ok()) return at(outcome.status());
    absl::StatusOr<Layout> written = RowLayout(row);
    if (!written.ok()) return at(written.status());
    absl::StatusOr<Layout> layout = RunnableLayout(*written, *workload);
    if (!layout.ok()) {
      out.skipped.push_back(
          absl::StrCat("row ", i, ": ", layout.status().message()));
      continue;
    }
    Launch launch;
    launch.index = static_cast<int64_t>(i);
    launch.layout = *layout;
    launch.outcome = *outcome;
    if (*outcome == TrialStatus::kOk) {
      const Json& v = row.value("measured_tokens_per_s_per_gpu", Json());
      if (!v.is_number() || !(v.get<double>() > 0)) {
        return at(absl::InvalidArgumentError(
            "measured_tokens_per_s_per_gpu: an ok row needs a positive "
            "number"));
      }
      launch.tokens_per_s_per_gpu = v.get<double>();
      launch.peak_memory_bytes = PeakMemoryBytes(row);
    } else {
      launch.reason = TextOr(row, "notes");
    }
    gpus_per_node = spec->cluster().gpus_per_node();
    const std::string model = TextOr(row, "model");
    const std::string name = absl::StrFormat(
        "%s %dx%d", model.empty() ? "model" : model, spec->cluster().nodes(),
        spec->cluster().gpus_per_node());
    grouping.Of(WorkloadKey(*spec), name, *spec, *workload)
        .launches.push_back(std::move(launch));
  }
  absl::StatusOr<std::vector<costmodel::CollectiveMeasurement>> collectives =
      costmodel::SweepCollectives(file, gpus_per_node);
  if (!collectives.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", collectives.status().message()));
  }
  if (options.without_collectives) collectives->clear();
  Finish(grouping, *collectives, options, &out);
  return out;
}

absl::StatusOr<MeasuredSweep> ParsePublished(absl::string_view text,
                                             absl::string_view source,
                                             const SweepReadOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const costmodel::PublishedRuns runs,
                           costmodel::ParsePublishedRuns(text, source));
  MeasuredSweep out;
  out.source = std::string(source);
  out.format = "published";
  for (const costmodel::UnmappedRun& u : runs.unmapped) {
    out.skipped.push_back(absl::StrCat("row ", u.index, ": ", u.reason));
  }
  Grouping grouping;
  for (const costmodel::PublishedRun& r : runs.runs) {
    v1::StudySpec spec = SpecFromWorkload(r.workload);
    absl::StatusOr<Layout> layout = RunnableLayout(r.layout, r.workload);
    if (!layout.ok()) {
      out.skipped.push_back(
          absl::StrCat("row ", r.index, ": ", layout.status().message()));
      continue;
    }
    Launch launch;
    launch.index = r.index;
    launch.layout = *layout;
    launch.tokens_per_s_per_gpu = r.measured_tokens_per_s_per_gpu;
    if (r.measured_peak_memory_gib) {
      launch.peak_memory_bytes = *r.measured_peak_memory_gib * kGiB;
    }
    grouping
        .Of(WorkloadKey(spec), absl::StrFormat("%s %s", r.source, r.group),
            spec, r.workload)
        .launches.push_back(std::move(launch));
  }
  Finish(grouping, {}, options, &out);
  return out;
}

absl::StatusOr<MeasuredSweep> ParseTrials(const Json& trials,
                                          absl::string_view source,
                                          const SweepReadOptions& options) {
  MeasuredSweep out;
  out.source = std::string(source);
  out.format = "trials";
  // The ran spec of each study and trial world, from its ok trials.
  std::map<std::pair<int64_t, int64_t>, v1::StudySpec> specs;
  struct Pending {
    int64_t index;
    int64_t study;
    Layout layout;
    TrialStatus outcome;
    std::string reason;
    double tokens_per_s_per_gpu;
    std::optional<double> peak_memory_bytes;
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Json& t = trials[i];
    auto at = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": trial ", i, ": ", what));
    };
    if (!t.is_object() || !t.contains("state") || !t.contains("layout")) {
      return at("not a `tessera trials -o json` row (state, layout)");
    }
    const std::string state = TextOr(t, "state");
    absl::StatusOr<Layout> layout = LayoutFromJson(t["layout"]);
    if (!layout.ok()) return at(layout.status().message());
    Pending p{static_cast<int64_t>(i), t.value("study_id", int64_t{0}),
              *layout, TrialStatus::kOk, TextOr(t, "reason"), 0, std::nullopt};
    if (state == "ok") {
      if (!t.contains("measured") || !t["measured"].is_object() ||
          !t.contains("ran") || !t["ran"].is_object()) {
        out.skipped.push_back(absl::StrCat(
            "trial ", i, ": ok without its measurement and 'ran' spec"));
        continue;
      }
      const Json& m = t["measured"];
      p.tokens_per_s_per_gpu = m.value("tokens_per_s_per_gpu", 0.0);
      if (m.contains("peak_memory_bytes") &&
          m["peak_memory_bytes"].is_number() &&
          m["peak_memory_bytes"].get<double>() > 0) {
        p.peak_memory_bytes = m["peak_memory_bytes"].get<double>();
      }
      absl::StatusOr<v1::StudySpec> spec =
          StudySpecFromJson(t["ran"].dump(), source);
      if (!spec.ok()) return at(spec.status().message());
      specs.emplace(std::make_pair(p.study, layout->world_size()), *spec);
    } else if (state == "oom" || state == "crash" || state == "timeout" ||
               state == "nan") {
      p.outcome = *ParseTrialStatus(state);
    } else {
      continue;  // queued, leased, cancelled, invalid: nothing measured
    }
    pending.push_back(std::move(p));
  }
  Grouping grouping;
  for (Pending& p : pending) {
    auto it = specs.find({p.study, p.layout.world_size()});
    if (it == specs.end()) {
      out.skipped.push_back(absl::StrCat(
          "trial ", p.index,
          ": no ok trial of its study ran at its world, so its workload is "
          "not known"));
      continue;
    }
    absl::StatusOr<Workload> w = CheckedWorkloadFromSpec(it->second);
    if (!w.ok()) {
      out.skipped.push_back(
          absl::StrCat("trial ", p.index, ": ", w.status().message()));
      continue;
    }
    absl::StatusOr<Layout> layout = RunnableLayout(p.layout, *w);
    if (!layout.ok()) {
      out.skipped.push_back(
          absl::StrCat("trial ", p.index, ": ", layout.status().message()));
      continue;
    }
    Launch launch;
    launch.index = p.index;
    launch.layout = *layout;
    launch.outcome = p.outcome;
    launch.reason = p.reason;
    launch.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
    launch.peak_memory_bytes = p.peak_memory_bytes;
    const std::string name =
        absl::StrFormat("study %d %dx%d", p.study, it->second.cluster().nodes(),
                        it->second.cluster().gpus_per_node());
    grouping.Of(absl::StrCat(p.study, "|", WorkloadKey(it->second)), name,
                it->second, *w)
        .launches.push_back(std::move(launch));
  }
  Finish(grouping, {}, options, &out);
  return out;
}

}  // namespace

double SweepGroup::BestTokensPerSPerGpu() const {
  double best = 0;
  for (const SweepRow& r : rows) {
    if (r.outcome == TrialStatus::kOk) {
      best = std::max(best, r.tokens_per_s_per_gpu);
    }
  }
  return best;
}

int64_t SweepGroup::OkRows() const {
  return std::count_if(rows.begin(), rows.end(), [](const SweepRow& r) {
    return r.outcome == TrialStatus::kOk;
  });
}

absl::StatusOr<MeasuredSweep> ParseMeasuredSweep(
    absl::string_view text, absl::string_view source,
    const SweepReadOptions& options) {
  const Json file = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not valid JSON"));
  }
  try {
    if (file.is_array()) return ParseTrials(file, source, options);
    if (!file.is_object() || !file.contains("rows") ||
        !file["rows"].is_array() || file["rows"].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source,
          ": neither a sweep or published runs ({\"rows\": [...]}) nor "
          "`tessera trials -o json` output ([...])"));
    }
    const bool sweep = std::all_of(
        file["rows"].begin(), file["rows"].end(),
        [](const Json& r) { return r.is_object() && r.contains("status"); });
    if (sweep) return ParseSweepRows(file, source, options);
    return ParsePublished(text, source, options);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": malformed: ", e.what()));
  }
}

absl::StatusOr<MeasuredSweep> ReadMeasuredSweep(
    const std::string& path, const SweepReadOptions& options) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseMeasuredSweep(text.str(), path, options);
}

}  // namespace tessera::replay
