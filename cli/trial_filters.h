// The trial filters that `tessera trials` and `tessera history` share: state,
// model, GPU, layout fields and a time range, as flags that fill a
// ListTrialsRequest (filters combine with AND; a flag not given matches
// everything).
//
//   TrialFilterFlags filters;
//   filters.Register(&flags);
//   TESSERA_RETURN_IF_ERROR(flags.Parse({"--tp", "8", "--since", "30d"}));
//   v1::ListTrialsRequest request;
//   TESSERA_RETURN_IF_ERROR(filters.Apply(absl::Now(), &request));
//   // request.tp() == 8, request.since_unix_ms() == now - 30 days
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/flags.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

struct TrialFilterFlags {
  std::optional<std::string> states;  // "ok,oom", "failed" (service_names.h)
  std::optional<std::string> model, gpu;
  std::optional<int64_t> tp, pp, vpp, cp, dp, zero, micro_batch;
  std::optional<bool> sp;
  std::optional<std::string> recompute;
  std::optional<std::string> since, until;  // cli/time_text.h

  // Adds the flags under a "Filters" section.
  void Register(FlagSet* flags);

  // Sets the given filters on `request`; relative times count back from
  // `now`. INVALID_ARGUMENT naming the flag for a bad value ("--tp: must be
  // at least 1, got 0", "--since: '3x' is not a time ...", "--until: before
  // --since").
  absl::Status Apply(absl::Time now, v1::ListTrialsRequest* request) const;
};

}  // namespace tessera::cli
