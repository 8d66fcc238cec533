#include "cli/trial_filters.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/service_names.h"
#include "cli/time_text.h"
#include "core/layout.h"

namespace tessera::cli {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

// A degree filter: at least 1.
absl::Status CheckDegree(absl::string_view flag,
                         const std::optional<int64_t>& value) {
  if (value.has_value() && *value < 1) {
    return FlagError(flag, absl::StrCat("must be at least 1, got ", *value));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> TimeFlag(absl::string_view flag,
                                 const std::string& text, absl::Time now) {
  absl::StatusOr<absl::Time> time = ParseTimeBound(text, now);
  if (!time.ok()) return FlagError(flag, time.status().message());
  return ToUnixMs(*time);
}

}  // namespace

void TrialFilterFlags::Register(FlagSet* flags) {
  flags->AddSection("Filters (combined with AND)");
  flags->AddString("state", "S,...",
                   "trial states: ok, oom, ...; failed, done (see above)",
                   &states);
  flags->AddString("model", "M", "model preset (or custom)", &model);
  flags->AddString("gpu", "G", "GPU (h100-sxm, ...)", &gpu);
  flags->AddInt("tp", "N", "tensor-parallel degree", &tp);
  flags->AddSwitch("sp", "sequence parallelism (--sp=false: without)", &sp);
  flags->AddInt("pp", "N", "pipeline stages", &pp);
  flags->AddInt("vpp", "N", "virtual stages per pipeline rank", &vpp);
  flags->AddInt("cp", "N", "context-parallel degree", &cp);
  flags->AddInt("dp", "N", "data-parallel degree", &dp);
  flags->AddInt("zero", "N", "ZeRO stage (0-3)", &zero);
  flags->AddInt("micro-batch", "N", "sequences per micro-batch", &micro_batch);
  flags->AddString("recompute", "R", "none, selective or full", &recompute);
  flags->AddString("since", "T", "created at or after T (a time: see above)",
                   &since);
  flags->AddString("until", "T", "created before T", &until);
}

absl::Status TrialFilterFlags::Apply(absl::Time now,
                                     v1::ListTrialsRequest* request) const {
  if (states.has_value()) {
    absl::StatusOr<std::vector<v1::TrialState>> parsed =
        ParseTrialStates(*states);
    if (!parsed.ok()) return FlagError("state", parsed.status().message());
    for (v1::TrialState s : *parsed) request->add_states(s);
  }
  if (model.has_value()) request->set_model(*model);
  if (gpu.has_value()) request->set_gpu(*gpu);
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::optional<int64_t>&>{"tp", tp},
        {"pp", pp},
        {"vpp", vpp},
        {"cp", cp},
        {"dp", dp},
        {"micro-batch", micro_batch}}) {
    if (absl::Status s = CheckDegree(flag, value); !s.ok()) return s;
  }
  if (zero.has_value() && (*zero < 0 || *zero > 3)) {
    return FlagError("zero", absl::StrCat("must be 0 to 3, got ", *zero));
  }
  if (tp.has_value()) request->set_tp(*tp);
  if (sp.has_value()) request->set_sp(*sp);
  if (pp.has_value()) request->set_pp(*pp);
  if (vpp.has_value()) request->set_vpp(*vpp);
  if (cp.has_value()) request->set_cp(*cp);
  if (dp.has_value()) request->set_dp(*dp);
  if (zero.has_value()) request->set_zero(*zero);
  if (micro_batch.has_value()) request->set_micro_batch(*micro_batch);
  if (recompute.has_value()) {
    absl::StatusOr<Recompute> r = ParseRecompute(*recompute);
    if (!r.ok()) return FlagError("recompute", r.status().message());
    request->set_recompute(std::string(RecomputeName(*r)));
  }
  if (since.has_value()) {
    absl::StatusOr<int64_t> ms = TimeFlag("since", *since, now);
    if (!ms.ok()) return ms.status();
    request->set_since_unix_ms(*ms);
  }
  if (until.has_value()) {
    absl::StatusOr<int64_t> ms = TimeFlag("until", *until, now);
    if (!ms.ok()) return ms.status();
    request->set_until_unix_ms(*ms);
  }
  if (since.has_value() && until.has_value() &&
      request->until_unix_ms() <= request->since_unix_ms()) {
    return FlagError(
        "until",
        absl::StrCat("'", *until, "' is not after --since '", *since, "'"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::cli
