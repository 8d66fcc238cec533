#include "core/trial_result.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/layout_json.h"

namespace tessera {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

StepTimeStats StepTimeStatsOf(const std::vector<double>& measured_s) {
  return {Percentile(measured_s, 0.5), Percentile(measured_s, 0.1),
          Percentile(measured_s, 0.9)};
}
namespace {

constexpr std::pair<TrialStatus, const char*> kStatusNames[] = {
    {TrialStatus::kOk, "ok"},       {TrialStatus::kOom, "oom"},
    {TrialStatus::kNan, "nan"},     {TrialStatus::kTimeout, "timeout"},
    {TrialStatus::kCrash, "crash"}, {TrialStatus::kInvalid, "invalid"}};

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("trial.", field, ": ", what));
}

// Reads json[key] into *out when present; a wrong type is an error.
template <typename T>
absl::Status ReadOptional(const nlohmann::json& json, const char* key, T* out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return FieldError(key, absl::StrCat("wrong type (", it->type_name(), ")"));
  }
  return absl::OkStatus();
}

// Reads an array of numbers where null stands for a value that was not finite
// (JSON has no NaN or infinity; nlohmann writes them as null).
absl::Status ReadNumbers(const nlohmann::json& json, const char* key,
                         std::vector<double>* out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) return FieldError(key, "expected an array of numbers");
  out->clear();
  for (const nlohmann::json& v : *it) {
    if (v.is_null()) {
      out->push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (v.is_number()) {
      out->push_back(v.get<double>());
    } else {
      return FieldError(key, absl::StrCat("expected numbers, got ", v.dump()));
    }
  }
  return absl::OkStatus();
}

nlohmann::json OptionalNumber(const std::optional<double>& v) {
  return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

absl::string_view TrialStatusName(TrialStatus s) {
  for (const auto& [status, name] : kStatusNames) {
    if (status == s) return name;
  }
  return "crash";
}

absl::StatusOr<TrialStatus> ParseTrialStatus(absl::string_view text) {
  for (const auto& [status, name] : kStatusNames) {
    if (text == name) return status;
  }
  return FieldError("status",
                    absl::StrCat("'", text,
                                 "' is not ok, oom, nan, timeout, crash or "
                                 "invalid"));
}

nlohmann::json TrialResultToJson(const TrialResult& r) {
  return nlohmann::json{
      {"status", std::string(TrialStatusName(r.status))},
      {"reason", r.reason},
      {"layout", LayoutToJson(r.layout)},
      {"backend", r.backend},
      {"model", r.model},
      {"device", r.device},
      {"ranks", r.ranks},
      {"global_batch", r.global_batch},
      {"seq_len", r.seq_len},
      {"warmup_steps", r.warmup_steps},
      {"steps", r.steps},
      {"step_time_s",
       {{"median", r.step_time_s.median},
        {"p10", r.step_time_s.p10},
        {"p90", r.step_time_s.p90}}},
      {"tokens_per_s", r.tokens_per_s},
      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
      {"tflops_per_gpu", r.tflops_per_gpu},
      {"mfu", r.mfu},
      {"peak_tflops", r.peak_tflops},
      {"peak_tflops_source", r.peak_tflops_source},
      {"peak_memory_bytes", r.peak_memory_bytes},
      {"compute_s", r.compute_s},
      {"comm_s", r.comm_s},
      {"exposed_comm_s", r.exposed_comm_s},
      {"watts_per_gpu", OptionalNumber(r.watts_per_gpu)},
      {"tokens_per_joule", OptionalNumber(r.tokens_per_joule)},
      {"loss", r.loss},
      {"step_times_s", r.step_times_s},
      {"output_tail", r.output_tail},
  };
}

absl::StatusOr<TrialResult> TrialResultFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError("trial: expected a JSON object");
  }
  TrialResult r;
  std::string status;
  auto it = json.find("status");
  if (it == json.end() || !it->is_string()) {
    return FieldError("status", "missing or not a string");
  }
  absl::StatusOr<TrialStatus> parsed = ParseTrialStatus(it->get<std::string>());
  if (!parsed.ok()) return parsed.status();
  r.status = *parsed;
  if (auto l = json.find("layout"); l != json.end() && !l->is_null()) {
    absl::StatusOr<Layout> layout = LayoutFromJson(*l);
    if (!layout.ok()) {
      return FieldError("layout", layout.status().message());
    }
    r.layout = *layout;
  }
  absl::Status s;
  auto read = [&](const char* key, auto* out) {
    if (s.ok()) s = ReadOptional(json, key, out);
  };
  read("reason", &r.reason);
  read("backend", &r.backend);
  read("model", &r.model);
  read("device", &r.device);
  read("output_tail", &r.output_tail);
  read("ranks", &r.ranks);
  read("global_batch", &r.global_batch);
  read("seq_len", &r.seq_len);
  read("warmup_steps", &r.warmup_steps);
  read("steps", &r.steps);
  read("tokens_per_s", &r.tokens_per_s);
  read("tokens_per_s_per_gpu", &r.tokens_per_s_per_gpu);
  read("tflops_per_gpu", &r.tflops_per_gpu);
  read("mfu", &r.mfu);
  read("peak_tflops", &r.peak_tflops);
  read("peak_tflops_source", &r.peak_tflops_source);
  read("peak_memory_bytes", &r.peak_memory_bytes);
  read("compute_s", &r.compute_s);
  read("comm_s", &r.comm_s);
  read("exposed_comm_s", &r.exposed_comm_s);
  if (s.ok()) s = ReadNumbers(json, "loss", &r.loss);
  if (s.ok()) s = ReadNumbers(json, "step_times_s", &r.step_times_s);
  double watts = 0, tokens_per_joule = 0;
  if (s.ok() && json.contains("watts_per_gpu") &&
      !json["watts_per_gpu"].is_null()) {
    read("watts_per_gpu", &watts);
    r.watts_per_gpu = watts;
  }
  if (s.ok() && json.contains("tokens_per_joule") &&
      !json["tokens_per_joule"].is_null()) {
    read("tokens_per_joule", &tokens_per_joule);
    r.tokens_per_joule = tokens_per_joule;
  }
  if (auto st = json.find("step_time_s"); s.ok() && st != json.end()) {
    if (!st->is_object())
      return FieldError("step_time_s", "expected an object");
    s = ReadOptional(*st, "median", &r.step_time_s.median);
    if (s.ok()) s = ReadOptional(*st, "p10", &r.step_time_s.p10);
    if (s.ok()) s = ReadOptional(*st, "p90", &r.step_time_s.p90);
  }
  if (!s.ok()) return s;
  return r;
}

}  // namespace tessera
