#include "agents/probes.h"

#include "absl/strings/str_cat.h"
#include "agents/files.h"
#include "agents/process_runner.h"
#include "nlohmann/json.hpp"

namespace tessera::agents {
namespace {

constexpr int64_t kStderrTailBytes = 2048;

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::StatusOr<v1::Probe> ParseProbe(const nlohmann::json& p, size_t index) {
  const std::string where = absl::StrCat("probes[", index, "]");
  if (!p.is_object()) return FieldError(where, "not an object");
  v1::Probe probe;
  const auto string_field =
      [&](const char* key) -> absl::StatusOr<std::string> {
    auto it = p.find(key);
    if (it == p.end() || !it->is_string() || it->get<std::string>().empty()) {
      return FieldError(absl::StrCat(where, ".", key), "a non-empty string");
    }
    return it->get<std::string>();
  };
  const auto number_field = [&](const char* key) -> absl::StatusOr<double> {
    auto it = p.find(key);
    if (it == p.end() || !it->is_number()) {
      return FieldError(absl::StrCat(where, ".", key), "a number");
    }
    return it->get<double>();
  };
  absl::StatusOr<std::string> kind = string_field("kind");
  if (!kind.ok()) return kind.status();
  absl::StatusOr<std::string> unit = string_field("unit");
  if (!unit.ok()) return unit.status();
  absl::StatusOr<double> group = number_field("group_size");
  if (!group.ok()) return group.status();
  absl::StatusOr<double> bytes = number_field("bytes");
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<double> value = number_field("value");
  if (!value.ok()) return value.status();
  if (*group < 1 || *bytes < 0 || !(*value >= 0)) {
    return FieldError(where, "group_size >= 1, bytes >= 0, value >= 0");
  }
  probe.set_kind(*kind);
  probe.set_unit(*unit);
  probe.set_group_size(static_cast<int64_t>(*group));
  probe.set_bytes(static_cast<int64_t>(*bytes));
  probe.set_value(*value);
  return probe;
}

}  // namespace

absl::StatusOr<std::vector<v1::Probe>> ParseProbesJson(absl::string_view text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return FieldError("probes", "not a JSON object");
  }
  std::vector<v1::Probe> probes;
  auto list = json.find("probes");
  if (list != json.end() && !list->is_null()) {
    if (!list->is_array()) return FieldError("probes", "not an array");
    for (size_t i = 0; i < list->size(); ++i) {
      absl::StatusOr<v1::Probe> probe = ParseProbe((*list)[i], i);
      if (!probe.ok()) return probe.status();
      probes.push_back(std::move(*probe));
    }
  }
  auto error = json.find("error");
  if (probes.empty() && error != json.end() && error->is_string()) {
    return absl::UnavailableError(
        absl::StrCat("probes: ", error->get<std::string>()));
  }
  return probes;
}

absl::StatusOr<std::vector<v1::Probe>> RunProbes(
    const ProbeOptions& options, const std::function<bool()>& should_stop,
    ProcessGroupRegistry* registry) {
  const std::string json_path = absl::StrCat(options.work_dir, "/probes.json");
  ProcessSpec spec;
  spec.argv = {options.trial_binary,
               "--probe",
               "--backend",
               options.backend,
               "--ranks",
               absl::StrCat(options.ranks),
               "--json",
               json_path};
  spec.working_dir = options.work_dir;
  spec.stdout_path = absl::StrCat(options.work_dir, "/probes.out");
  spec.stderr_path = absl::StrCat(options.work_dir, "/probes.err");
  // A stale file from an earlier run must not pass for this one's.
  (void)RemoveTree(json_path);
  RunLimits limits;
  limits.time_limit = options.time_limit;
  absl::StatusOr<std::vector<ProcessOutcome>> outcomes =
      RunProcesses({spec}, limits, should_stop, registry);
  if (!outcomes.ok()) return outcomes.status();
  const ProcessOutcome& outcome = outcomes->front();
  if (outcome.kill == KillReason::kStopped) {
    return absl::CancelledError("probes: stopped");
  }
  if (outcome.kill == KillReason::kTimeLimit) {
    return absl::DeadlineExceededError(absl::StrCat(
        "probes: no result within ", absl::FormatDuration(options.time_limit)));
  }
  absl::StatusOr<std::string> text = ReadFile(json_path);
  if (!text.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "probes: ", options.trial_binary, " ", outcome.exit.Describe(),
        " without a result; stderr tail:\n",
        ReadFileTail(spec.stderr_path, kStderrTailBytes)));
  }
  return ParseProbesJson(*text);
}

}  // namespace tessera::agents
