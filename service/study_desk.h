// Where the lease side of the planner (leases.h) meets the study side
// (studies.h): what leasing must know of the studies and what it tells
// them. Studies implements it; Leases holds one, so that leasing, the
// reaper and the agents' calls reach a study only through these calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/workload.h"
#include "db/trial_store.h"

namespace tessera::service {

class StudyDesk {
 public:
  virtual ~StudyDesk() = default;

  // Whether the study is queued or running here (its trials may run; an
  // agent running a trial of any other study is told to stop it).
  virtual bool IsActive(int64_t study_id) = 0;
  // The workload `trial` runs (its study's, scaled as the trial was); nullopt
  // when the study is not active or its GPU not yet resolved. Never waits
  // for a refit.
  virtual std::optional<Workload> TrialWorkload(const db::Trial& trial) = 0;
  // A trial of the study was reported, re-queued or gave up: the study is
  // advanced (later, on the advancer thread).
  virtual void TrialChanged(int64_t study_id) = 0;
  // Agents registered or reported probes: the studies that wait for agents
  // try to start.
  virtual void AgentsChanged() = 0;
  // The agents `lost` were marked gone after `silence`: each study hears of
  // it, and whether any agent left can run its trials.
  virtual void AgentsLost(const std::vector<std::string>& lost,
                          absl::Duration silence) = 0;
  // A cluster probe of `cluster` (a GPU name) was stored: the studies
  // planning for it hear `message`.
  virtual void ClusterProbed(const std::string& cluster,
                             const std::string& message) = 0;
  // The reaper's pass at `now`: studies past their time budget advance (to
  // end), studies waiting for agents try to start.
  virtual void Tick(absl::Time now) = 0;
};

}  // namespace tessera::service
