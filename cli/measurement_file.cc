#include "cli/measurement_file.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/file_io.h"
#include "core/layout.h"
#include "core/layout_json.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "costmodel/resolved_workload.h"
#include "proto/convert.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::json;


constexpr const char* kMeasured[] = {
    "step_time_s", "tokens_per_s_per_gpu", "peak_memory_gib", "compute_s",
    "comm_s",      "exposed_comm_s",       "watts_per_gpu"};

// Either a parsed sample or why the run cannot be expressed; malformed
// lines are errors.
struct LineResult {
  bool skipped = false;
  std::string reason;
  costmodel::CalibrationSample sample;
};

absl::StatusOr<LineResult> ParseLine(const Json& j, const std::string& at) {
  auto bad = [&](absl::string_view field, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": ", field, ": ", what));
  };
  if (!j.is_object()) return bad("(line)", "must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "spec" && key != "layout" && key != "measured" &&
        key != "weight") {
      return bad(key, "unknown field (known: spec, layout, measured, weight)");
    }
  }
  if (!j.contains("spec") || !j["spec"].is_object()) {
    return bad("spec", "required: a StudySpec object");
  }
  if (!j.contains("layout") || !j["layout"].is_string()) {
    return bad("layout", "required: a layout string (tp=2,zero=1,...)");
  }
  if (!j.contains("measured") || !j["measured"].is_object()) {
    return bad("measured", "required: an object of measured values");
  }
  const Json& m = j["measured"];
  for (const auto& [key, value] : m.items()) {
    if (std::find(std::begin(kMeasured), std::end(kMeasured), key) ==
        std::end(kMeasured)) {
      return bad(absl::StrCat("measured.", key),
                 "unknown field (known: step_time_s, tokens_per_s_per_gpu, "
                 "peak_memory_gib, compute_s, comm_s, exposed_comm_s, "
                 "watts_per_gpu)");
    }
    const bool may_be_zero = key == "comm_s" || key == "exposed_comm_s";
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        value.get<double>() < 0 || (!may_be_zero && value.get<double>() == 0)) {
      return bad(
          absl::StrCat("measured.", key),
          may_be_zero ? "must be a number >= 0" : "must be a positive number");
    }
  }
  if (!m.contains("step_time_s") && !m.contains("tokens_per_s_per_gpu")) {
    return bad("measured", "needs step_time_s or tokens_per_s_per_gpu");
  }
  double weight = 1;
  if (j.contains("weight")) {
    if (!j["weight"].is_number() || !(j["weight"].get<double>() > 0)) {
      return bad("weight", "must be a positive number");
    }
    weight = j["weight"].get<double>();
  }
  absl::StatusOr<v1::StudySpec> spec =
      StudySpecFromJson(j["spec"].dump(), absl::StrCat(at, " spec"));
  if (!spec.ok()) {
    return absl::InvalidArgumentError(spec.status().message());
  }
  absl::StatusOr<Layout> layout = ParseLayout(j["layout"].get<std::string>());
  if (!layout.ok()) return bad("layout", layout.status().message());

  LineResult r;
  absl::StatusOr<Workload> w = CheckedWorkloadFromSpec(*spec);
  if (!w.ok()) {
    r.skipped = true;
    r.reason = std::string(w.status().message());
    return r;
  }
  absl::StatusOr<costmodel::ResolvedWorkload> rw =
      costmodel::ResolveWorkload(*w);
  const absl::Status fits =
      rw.ok() ? costmodel::RunnableLayout(*rw, *layout).status() : rw.status();
  if (!fits.ok()) {
    r.skipped = true;
    r.reason = std::string(fits.message());
    return r;
  }
  costmodel::CalibrationSample& s = r.sample;
  s.workload = *w;
  s.layout = *layout;
  s.weight = weight;
  s.step_time_s = m.contains("step_time_s")
                      ? m["step_time_s"].get<double>()
                      : static_cast<double>(w->training.tokens_per_step()) /
                            (m["tokens_per_s_per_gpu"].get<double>() *
                             static_cast<double>(w->cluster.world_size()));
  if (m.contains("peak_memory_gib")) {
    s.peak_memory_bytes = m["peak_memory_gib"].get<double>() * kGiB;
  }
  if (m.contains("compute_s")) s.compute_s = m["compute_s"].get<double>();
  if (m.contains("comm_s")) s.comm_s = m["comm_s"].get<double>();
  if (m.contains("exposed_comm_s")) {
    s.exposed_comm_s = m["exposed_comm_s"].get<double>();
  }
  if (m.contains("watts_per_gpu")) {
    s.watts_per_gpu = m["watts_per_gpu"].get<double>();
  }
  return r;
}

// The measured values of a tessera-trial result or a `tessera trials
// --json` row, by the rule the planner's own fits follow
// (service/recalibration.h): the median step time, weighted by the
// measured steps; the compute / communication split and peak memory only
// from the cuda backend (the CPU executor's blocking collectives also time
// waiting); power where it was measured.
Json MeasuredOfTrial(double step_time_s, const std::string& backend,
                     double compute_s, double comm_s, double exposed_comm_s,
                     double peak_memory_bytes, const Json& watts) {
  Json m = {{"step_time_s", step_time_s}};
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(backend);
  if (kind.ok() && (*kind)->times_comm_apart) {
    if (compute_s > 0) m["compute_s"] = compute_s;
    if (comm_s >= 0) m["comm_s"] = comm_s;
    if (exposed_comm_s >= 0) m["exposed_comm_s"] = exposed_comm_s;
  }
  if (kind.ok() && (*kind)->measures_model_memory && peak_memory_bytes > 0) {
    m["peak_memory_gib"] = peak_memory_bytes / kGiB;
  }
  if (watts.is_number() && watts.get<double>() > 0) m["watts_per_gpu"] = watts;
  return m;
}

double NumberOr(const Json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>()
                                               : fallback;
}

// Peak memory per GPU: a number (`tessera trials -o json`), or the largest
// rank's of tessera-trial's per-rank list.
double PeakMemoryBytes(const Json& j) {
  if (!j.contains("peak_memory_bytes")) return 0;
  const Json& p = j["peak_memory_bytes"];
  if (p.is_number()) return p.get<double>();
  double peak = 0;
  if (p.is_array()) {
    for (const Json& v : p) {
      if (v.is_number()) peak = std::max(peak, v.get<double>());
    }
  }
  return peak;
}

std::string StringOr(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The canonical {spec, layout, measured, weight} of a line in any accepted
// form; `skip` set (and nothing returned) for a run that did not measure.
//   - {spec, layout, measured[, weight]}: as is;
//   - {spec, trial[, weight]}: `trial` is tessera-trial's result JSON and
//     `spec` the model, GPU, GPUs per node, stack and precision it ran with;
//     the world (its ranks), global batch and sequence length are the
//     result's;
//   - a `tessera trials -o json` row (it has "state"): its "ran" spec, its
//     layout and its measured values.
absl::StatusOr<Json> Canonical(const Json& j, const std::string& at,
                               std::string* skip) {
  auto bad = [&](absl::string_view field, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": ", field, ": ", what));
  };
  if (!j.is_object()) return bad("(line)", "must be a JSON object");
  auto layout_text = [&](const Json& layout,
                         absl::string_view field) -> absl::StatusOr<Json> {
    absl::StatusOr<Layout> l = LayoutFromJson(layout);
    if (!l.ok()) return bad(field, l.status().message());
    return Json(FormatLayout(*l));
  };
  if (j.contains("state")) {  // a `tessera trials -o json` row
    const std::string id = j.contains("id") ? j["id"].dump() : std::string("?");
    if (StringOr(j, "state") != "ok") {
      *skip = absl::StrCat("trial ", id, " is ", j["state"].dump(), ", not ok");
      return Json();
    }
    if (!j.contains("ran") || !j["ran"].is_object()) {
      *skip = absl::StrCat("trial ", id,
                           ": the planner gave no 'ran' spec (its study no "
                           "longer maps onto it, or an older planner)");
      return Json();
    }
    if (!j.contains("measured") || !j["measured"].is_object()) {
      return bad("measured", "an ok trial without measured values");
    }
    const Json& m = j["measured"];
    TESSERA_ASSIGN_OR_RETURN(Json layout, layout_text(j["layout"], "layout"));
    const double steps = NumberOr(m, "steps", 1);
    return Json{
        {"spec", j["ran"]},
        {"layout", layout},
        {"measured",
         MeasuredOfTrial(
             NumberOr(m, "step_time_median_s", 0), StringOr(m, "backend"),
             NumberOr(m, "compute_s", 0), NumberOr(m, "comm_s", -1),
             NumberOr(m, "exposed_comm_s", -1), PeakMemoryBytes(m),
             m.contains("watts_per_gpu") ? m["watts_per_gpu"] : Json())},
        {"weight", std::max(1.0, steps)}};
  }
  if (!j.contains("trial")) return j;
  for (const auto& [key, value] : j.items()) {
    if (key != "spec" && key != "trial" && key != "weight") {
      return bad(key,
                 "unknown field beside 'trial' (known: spec, trial, "
                 "weight)");
    }
  }
  const Json& r = j["trial"];
  if (!r.is_object()) return bad("trial", "must be tessera-trial's result");
  if (!j.contains("spec") || !j["spec"].is_object()) {
    return bad("spec",
               "required: the model, cluster (gpu, gpus_per_node) and "
               "training (stack, precision) the trial ran with");
  }
  if (StringOr(r, "status") != "ok") {
    *skip = absl::StrCat("the trial's status is '", StringOr(r, "status"),
                         "': ", StringOr(r, "reason"));
    return Json();
  }
  for (const char* key : {"ranks", "global_batch", "seq_len", "steps"}) {
    if (!(NumberOr(r, key, 0) >= 1)) {
      return bad(absl::StrCat("trial.", key), "required: a number >= 1");
    }
  }
  if (!r.contains("step_time_s") ||
      !(NumberOr(r["step_time_s"], "median", 0) > 0)) {
    return bad("trial.step_time_s.median", "required: a positive number");
  }
  TESSERA_ASSIGN_OR_RETURN(
      Json layout, layout_text(r.value("layout", Json()), "trial.layout"));
  Json spec = j["spec"];
  const int64_t ranks = static_cast<int64_t>(NumberOr(r, "ranks", 1));
  const int64_t gpn = static_cast<int64_t>(
      NumberOr(spec.value("cluster", Json::object()), "gpus_per_node", 0));
  if (gpn < 1) {
    return bad("spec.cluster.gpus_per_node",
               "required with a trial: how its ranks were placed");
  }
  // The trial's world: whole nodes of the spec's GPUs per node, or one
  // node of its ranks when it ran on fewer.
  spec["cluster"]["nodes"] = ranks >= gpn ? ranks / gpn : 1;
  spec["cluster"]["gpus_per_node"] = ranks >= gpn ? gpn : ranks;
  if (ranks >= gpn && ranks % gpn != 0) {
    return bad("trial.ranks", absl::StrCat(ranks,
                                           " ranks are not whole nodes "
                                           "of spec.cluster.gpus_per_node ",
                                           gpn));
  }
  spec["training"]["global_batch"] = r["global_batch"];
  spec["training"]["seq_len"] = r["seq_len"];
  const double steps = NumberOr(r, "steps", 1);
  return Json{
      {"spec", spec},
      {"layout", layout},
      {"measured",
       MeasuredOfTrial(
           r["step_time_s"]["median"].get<double>(), StringOr(r, "backend"),
           NumberOr(r, "compute_s", 0), NumberOr(r, "comm_s", -1),
           NumberOr(r, "exposed_comm_s", -1), PeakMemoryBytes(r),
           r.contains("watts_per_gpu") ? r["watts_per_gpu"] : Json())},
      {"weight",
       j.contains("weight") ? j["weight"] : Json(std::max(1.0, steps))}};
}

// One measurement: `j` in any accepted form, added to `out` or skipped.
absl::Status AddMeasurement(const Json& j, const std::string& at,
                            int64_t line_no, MeasurementFile& out) {
  std::string skip;
  TESSERA_ASSIGN_OR_RETURN(const Json canonical, Canonical(j, at, &skip));
  if (!skip.empty()) {
    out.skipped.push_back(SkippedMeasurement{line_no, skip});
    return absl::OkStatus();
  }
  TESSERA_ASSIGN_OR_RETURN(LineResult r, ParseLine(canonical, at));
  if (r.skipped) {
    out.skipped.push_back(SkippedMeasurement{line_no, r.reason});
  } else {
    out.samples.push_back(std::move(r.sample));
    out.sample_lines.push_back(line_no);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MeasurementFile> ParseMeasurements(absl::string_view text,
                                                  const std::string& path) {
  MeasurementFile out;
  out.path = path;
  // `tessera trials -o json` prints one array: element i counts as line i+1.
  if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "[")) {
    const Json all = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!all.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": starts with '[' but is not a JSON array"));
    }
    for (size_t i = 0; i < all.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(AddMeasurement(all[i],
                                             absl::StrCat(path, "[", i, "]"),
                                             static_cast<int64_t>(i) + 1, out));
    }
    return out;
  }
  int64_t line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    const std::string at = absl::StrCat(path, ":", line_no);
    const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": not a JSON object on one line"));
    }
    TESSERA_RETURN_IF_ERROR(AddMeasurement(j, at, line_no, out));
  }
  return out;
}

absl::StatusOr<MeasurementFile> ReadMeasurements(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseMeasurements(text, path);
}

}  // namespace tessera::cli
