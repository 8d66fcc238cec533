// One study the planner is working on (queued or running), in memory: its
// checked spec and what is derived from the store (the resolved GPU, the
// calibration it plans with, the agents' backend). Everything in it can be
// rebuilt from the store after a restart; the trials themselves are never
// held here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "service/study_spec.h"

namespace tessera::service {

struct StudyRun {
  StudyRun(int64_t study_id, CheckedStudy checked_study, absl::Time created)
      : id(study_id), checked(std::move(checked_study)), created_at(created) {}

  const int64_t id;
  const CheckedStudy checked;
  const absl::Time created_at;

  // Serializes the study's decisions (start, advance, finish, cancel).
  absl::Mutex mu;
  // The workload with its GPU resolved; unset until then ("agents" preset).
  std::optional<Workload> workload ABSL_GUARDED_BY(mu);
  std::string gpu_name ABSL_GUARDED_BY(mu);  // the calibration scope's name
  // `workload` once resolved (it does not change after), readable without
  // `mu`, which an advance holds for as long as a refit takes (seconds):
  // checking a report must not wait for that (ReportTrial).
  absl::Mutex resolved_mu ABSL_ACQUIRED_AFTER(mu);
  std::optional<Workload> resolved_workload ABSL_GUARDED_BY(resolved_mu);
  // The agents' backend trials run on ("" until chosen).
  std::string backend ABSL_GUARDED_BY(mu);
  costmodel::Calibration calibration ABSL_GUARDED_BY(mu);
  double calibration_mape ABSL_GUARDED_BY(mu) = 0;
  int64_t calibration_samples ABSL_GUARDED_BY(mu) = 0;
  // How uncertain `calibration`'s predictions are (GpuPredictionUncertainty),
  // set with it.
  costmodel::PredictionUncertainty spreads ABSL_GUARDED_BY(mu);
  // Ok trials of the study when the calibration was last fitted (-1: not
  // since this process started, so the next advance refits).
  int64_t fitted_ok_trials ABSL_GUARDED_BY(mu) = -1;
  // The study reached a final state (removed from the planner).
  bool finished ABSL_GUARDED_BY(mu) = false;

  int64_t gpus_per_node() const {
    return checked.workload.cluster.gpus_per_node;
  }
  const TrialOptions& options() const { return checked.trials; }
};

}  // namespace tessera::service
