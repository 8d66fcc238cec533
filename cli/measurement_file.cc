#include "cli/measurement_file.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/file_io.h"
#include "core/layout.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/stacks/training_stack.h"
#include "proto/convert.h"
#include "proto/spec_json.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr const char* kMeasured[] = {
    "step_time_s",  "tokens_per_s_per_gpu", "peak_memory_gib", "compute_s",
    "comm_s",       "exposed_comm_s",       "watts_per_gpu"};

// Either a parsed sample or why the run cannot be expressed; malformed
// lines are errors.
struct LineResult {
  bool skipped = false;
  std::string reason;
  planner::CalibrationSample sample;
};

absl::StatusOr<LineResult> ParseLine(const Json& j, const std::string& at) {
  auto bad = [&](absl::string_view field, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(at, ": ", field, ": ", what));
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
    const bool may_be_zero =
        key == "comm_s" || key == "exposed_comm_s";
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        value.get<double>() < 0 || (!may_be_zero && value.get<double>() == 0)) {
      return bad(absl::StrCat("measured.", key),
                 may_be_zero ? "must be a number >= 0"
                             : "must be a positive number");
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
  absl::StatusOr<Workload> w = WorkloadFromSpec(*spec);
  if (!w.ok()) {
    r.skipped = true;
    r.reason = std::string(w.status().message());
    return r;
  }
  absl::StatusOr<Layout> resolved = ResolveLayout(
      *layout, w->cluster.world_size(), w->training.global_batch);
  absl::Status fits = resolved.status();
  absl::StatusOr<planner::TrainingStack> stack =
      planner::StackForTraining(w->training);
  if (fits.ok()) fits = stack.status();
  if (fits.ok()) {
    fits = CheckLayoutFitsModel(*resolved, w->model, w->training.seq_len,
                                stack->layouts.uneven_interleaving);
  }
  if (fits.ok()) fits = stack->CanRun(*resolved, w->training.precision);
  if (!fits.ok()) {
    r.skipped = true;
    r.reason = std::string(fits.message());
    return r;
  }
  planner::CalibrationSample& s = r.sample;
  s.workload = *w;
  s.layout = *layout;
  s.weight = weight;
  s.step_time_s =
      m.contains("step_time_s")
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

}  // namespace

absl::StatusOr<MeasurementFile> ParseMeasurements(absl::string_view text,
                                                  const std::string& path) {
  MeasurementFile out;
  out.path = path;
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
    TESSERA_ASSIGN_OR_RETURN(LineResult r, ParseLine(j, at));
    if (r.skipped) {
      out.skipped.push_back(SkippedMeasurement{line_no, r.reason});
    } else {
      out.samples.push_back(std::move(r.sample));
      out.sample_lines.push_back(line_no);
    }
  }
  return out;
}

absl::StatusOr<MeasurementFile> ReadMeasurements(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseMeasurements(text, path);
}

}  // namespace tessera::cli
