#include "db/validation.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "nlohmann/json.hpp"

namespace tessera::db {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

absl::Status AtLeast(absl::string_view field, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return FieldError(field, absl::StrCat("must be >= ", min, ", got ", value));
}

absl::Status NonNegativeFinite(absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return FieldError(field,
                    absl::StrCat("must be finite and >= 0, got ", value));
}

absl::Status NotEmpty(absl::string_view field, absl::string_view value) {
  if (!value.empty()) return absl::OkStatus();
  return FieldError(field, "must not be empty");
}

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

constexpr size_t kMaxAgentIdChars = 128;

}  // namespace

bool IsJson(absl::string_view text) {
  return nlohmann::json::accept(text.begin(), text.end());
}

absl::Status ValidateNewStudy(const NewStudy& s) {
  TESSERA_RETURN_IF_ERROR(NotEmpty("study.name", s.name));
  if (!IsJson(s.spec_json)) {
    return FieldError("study.spec_json", "is not valid JSON");
  }
  TESSERA_RETURN_IF_ERROR(NotEmpty("study.model", s.model));
  TESSERA_RETURN_IF_ERROR(NotEmpty("study.gpu", s.gpu));
  TESSERA_RETURN_IF_ERROR(AtLeast("study.nodes", s.nodes, 1));
  TESSERA_RETURN_IF_ERROR(AtLeast("study.gpus_per_node", s.gpus_per_node, 1));
  TESSERA_RETURN_IF_ERROR(AtLeast("study.trial_budget", s.trial_budget, 0));
  return NonNegativeFinite("study.time_budget_s", s.time_budget_s);
}

absl::Status ValidateNewTrial(const NewTrial& t, absl::string_view field) {
  const Layout& l = t.layout;
  const std::string layout = absl::StrCat(field, ".layout.");
  // Stored layouts are resolved: dp and grad_accum are known.
  const std::pair<const char*, int64_t> at_least_one[] = {
      {"tp", l.tp},
      {"pp", l.pp},
      {"vpp", l.vpp},
      {"cp", l.cp},
      {"dp", l.dp},
      {"micro_batch", l.micro_batch},
      {"grad_accum", l.grad_accum}};
  for (const auto& [name, value] : at_least_one) {
    TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(layout, name), value, 1));
  }
  if (l.zero < 0 || l.zero > 3) {
    return FieldError(absl::StrCat(layout, "zero"),
                      absl::StrCat("must be 0..3, got ", l.zero));
  }
  TESSERA_RETURN_IF_ERROR(
      AtLeast(absl::StrCat(layout, "shard_group"), l.shard_group, 0));
  TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(field, ".rung"), t.rung, 0));
  TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(field, ".steps"), t.steps, 1));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(absl::StrCat(field, ".warmup_steps"), t.warmup_steps, 0));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(absl::StrCat(field, ".gang_size"), t.gang_size, 1));
  if (t.predicted.has_value()) {
    const TrialPrediction& p = *t.predicted;
    const std::string pred = absl::StrCat(field, ".predicted.");
    TESSERA_RETURN_IF_ERROR(
        NonNegativeFinite(absl::StrCat(pred, "tokens_per_s"), p.tokens_per_s));
    TESSERA_RETURN_IF_ERROR(NonNegativeFinite(
        absl::StrCat(pred, "tokens_per_joule"), p.tokens_per_joule));
    TESSERA_RETURN_IF_ERROR(
        NonNegativeFinite(absl::StrCat(pred, "step_time_s"), p.step_time_s));
    TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(pred, "peak_memory_bytes"),
                                    p.peak_memory_bytes, 0));
  }
  return absl::OkStatus();
}

absl::Status ValidateAgentId(absl::string_view id, absl::string_view field) {
  TESSERA_RETURN_IF_ERROR(NotEmpty(field, id));
  if (id.size() > kMaxAgentIdChars) {
    return FieldError(
        field, absl::StrCat("longer than ", kMaxAgentIdChars, " characters"));
  }
  if (!std::all_of(id.begin(), id.end(), IsIdChar)) {
    return FieldError(field, absl::StrCat("'", id,
                                          "' may hold only letters, digits "
                                          "and . _ : -"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLeaseAgents(const std::vector<std::string>& agent_ids) {
  if (agent_ids.empty()) {
    return FieldError("lease.agent_ids", "at least one agent is needed");
  }
  std::set<absl::string_view> seen;
  for (size_t i = 0; i < agent_ids.size(); ++i) {
    const std::string field = absl::StrCat("lease.agent_ids[", i, "]");
    TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_ids[i], field));
    if (!seen.insert(agent_ids[i]).second) {
      return FieldError(field,
                        absl::StrCat("'", agent_ids[i], "' appears twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAgentRegistration(const AgentRegistration& a) {
  if (!a.id.empty()) TESSERA_RETURN_IF_ERROR(ValidateAgentId(a.id, "agent.id"));
  TESSERA_RETURN_IF_ERROR(NotEmpty("agent.hostname", a.hostname));
  if (absl::StatusOr<const TrialBackend*> b = FindTrialBackend(a.backend);
      !b.ok()) {
    return FieldError("agent.backend", b.status().message());
  }
  TESSERA_RETURN_IF_ERROR(AtLeast("agent.gpu_count", a.gpu_count, 0));
  TESSERA_RETURN_IF_ERROR(AtLeast("agent.memory_bytes", a.memory_bytes, 0));
  return AtLeast("agent.cpu_ranks", a.cpu_ranks, 0);
}

absl::Status ValidateProbe(const Probe& p, absl::string_view field) {
  TESSERA_RETURN_IF_ERROR(NotEmpty(absl::StrCat(field, ".kind"), p.kind));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(absl::StrCat(field, ".group_size"), p.group_size, 1));
  TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(field, ".bytes"), p.bytes, 0));
  if (!std::isfinite(p.value)) {
    return FieldError(absl::StrCat(field, ".value"), "must be finite");
  }
  return NotEmpty(absl::StrCat(field, ".unit"), p.unit);
}

absl::Status ValidateCalibration(const Calibration& c) {
  const bool study = absl::StartsWith(c.scope, "study:");
  const bool gpu = absl::StartsWith(c.scope, "gpu:");
  if ((!study && !gpu) || c.scope.size() <= (study ? 6u : 4u)) {
    return FieldError(
        "calibration.scope",
        absl::StrCat("'", c.scope, "' is not study:<id> or gpu:<name>"));
  }
  if (c.coefficients.empty()) {
    return FieldError("calibration.coefficients", "must not be empty");
  }
  for (const auto& [name, value] : c.coefficients) {
    const std::string field = absl::StrCat("calibration.coefficients.", name);
    TESSERA_RETURN_IF_ERROR(
        NotEmpty("calibration.coefficients (a name)", name));
    if (!std::isfinite(value)) return FieldError(field, "must be finite");
  }
  TESSERA_RETURN_IF_ERROR(AtLeast("calibration.samples", c.samples, 0));
  std::vector<int64_t> ids = c.trial_ids;
  ids.insert(ids.end(), c.excluded_trial_ids.begin(),
             c.excluded_trial_ids.end());
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] <= 0 || (i > 0 && ids[i] == ids[i - 1])) {
      return FieldError("calibration.trial_ids",
                        absl::StrCat("trial ", ids[i],
                                     " is not a trial id or is named twice"));
    }
  }
  return NonNegativeFinite("calibration.fit_error", c.fit_error);
}

absl::Status ValidateImportedCalibration(const ImportedCalibration& c) {
  TESSERA_RETURN_IF_ERROR(NotEmpty("imported_calibration.gpu", c.gpu));
  if (!nlohmann::json::parse(c.file_json, nullptr, false).is_object()) {
    return FieldError("imported_calibration.file_json", "is not a JSON object");
  }
  return absl::OkStatus();
}

absl::Status ValidateCollectiveSample(const CollectiveSample& s,
                                      absl::string_view field) {
  TESSERA_RETURN_IF_ERROR(NotEmpty(absl::StrCat(field, ".cluster"), s.cluster));
  static const char* const kNames[] = {"all_gather", "reduce_scatter",
                                       "all_reduce", "sendrecv"};
  if (std::find(std::begin(kNames), std::end(kNames), s.collective) ==
      std::end(kNames)) {
    return FieldError(absl::StrCat(field, ".collective"),
                      absl::StrCat("'", s.collective,
                                   "' is not all_gather, reduce_scatter, "
                                   "all_reduce or sendrecv"));
  }
  TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(field, ".nodes"), s.nodes, 1));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(absl::StrCat(field, ".gpus_per_node"), s.gpus_per_node, 1));
  TESSERA_RETURN_IF_ERROR(AtLeast(absl::StrCat(field, ".bytes"), s.bytes, 1));
  if (!std::isfinite(s.busbw_gbs) || s.busbw_gbs <= 0) {
    return FieldError(absl::StrCat(field, ".busbw_gbs"),
                      "must be positive and finite");
  }
  return absl::OkStatus();
}

absl::Status ValidateTrialFilter(const TrialFilter& f) {
  const auto& keys = TrialSortKeys();
  if (std::find(keys.begin(), keys.end(), f.sort_by) == keys.end()) {
    return FieldError("filter.sort_by",
                      absl::StrCat("'", f.sort_by, "' is not one of ",
                                   absl::StrJoin(keys, ", ")));
  }
  TESSERA_RETURN_IF_ERROR(AtLeast("filter.limit", f.limit, 0));
  TESSERA_RETURN_IF_ERROR(AtLeast("filter.offset", f.offset, 0));
  if (!f.leased_to.empty()) {
    TESSERA_RETURN_IF_ERROR(ValidateAgentId(f.leased_to, "filter.leased_to"));
  }
  return absl::OkStatus();
}

absl::Status ValidateStudyFilter(const StudyFilter& f) {
  return AtLeast("filter.limit", f.limit, 0);
}

std::string AgentIdBase(absl::string_view hostname) {
  std::string id;
  for (char c : hostname.substr(0, kMaxAgentIdChars - 8)) {
    id.push_back(IsIdChar(c) ? c : '-');
  }
  return id.empty() ? "agent" : id;
}

}  // namespace tessera::db
