// A study replayed against a measured sweep: the planner's own study loop
// (costmodel/service: Planner, Studies, Leases over a real SQLite store, so
// the same ranking, successive halving, refits, stopping rule and
// recommendation as tessera-planner) where the agents do not execute a
// trial but look its outcome up in the sweep group (measured tokens/s and
// peak memory, or the failure).
//
// The replayed cluster is the group's: `nodes` in-process agents (backend
// "command", gpus_per_node GPUs each) so every trial runs the study's
// layout as is, one trial at a time; the study's candidates are the group's
// launched layouts (search.candidates) and its trials the given options
// (the service's defaults when absent). The cluster's measured collectives
// are imported first, as `tessera calibration import` of a `tessera
// calibrate --collectives` file would. A trial's reported step time is the
// sweep's, times exp(noise_log_sd * z) with z ~ N(0, 1) drawn from (seed,
// group, trial), and its steps spread the same way, so a replay is
// deterministic for a seed; the manual clock moves by each trial's run time.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<StudyReplayer> r,
//                            StudyReplayer::Create(""));  // a temporary store
//   TESSERA_ASSIGN_OR_RETURN(StudyReplay s, r->Replay(group, options));
//   for (const ReplayedTrial& t : s.trials) ... t.true_tokens_per_s_per_gpu ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/trial_result.h"
#include "replay/measured_sweep.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::replay {

struct ReplayOptions {
  // The study's trial options; absent fields take the service's defaults.
  // backend and command are the replay's own.
  v1::TrialOptions trials;
  uint64_t seed = 1;
  // Run-to-run noise of a trial's step time (log-space sd), and the spread
  // of its steps around their median.
  double noise_log_sd = 0.02;
};

// One trial as the study ran it, in the order trials were reported.
struct ReplayedTrial {
  int64_t trial_id = 0;
  int64_t rung = 0;
  int64_t warmup_steps = 0;
  int64_t steps = 0;  // measured steps
  Layout layout;      // the study's layout (trials run at full scale)
  int64_t sweep_row = -1;  // SweepRow::index, -1 when not in the sweep
  TrialStatus outcome = TrialStatus::kOk;
  double measured_tokens_per_s_per_gpu = 0;  // reported (noise included)
  double true_tokens_per_s_per_gpu = 0;      // the sweep's (0: failed)
  double gpu_seconds = 0;  // cluster time the trial took, all GPUs
};

// A replayed study.
struct StudyReplay {
  int64_t study_id = 0;
  std::string state;   // done, failed
  std::string reason;  // why it ended
  std::vector<ReplayedTrial> trials;
  // The final recommendation's best-throughput layout, and its sweep value
  // (0 when it is not a measured layout of the sweep).
  std::optional<Layout> recommended;
  bool recommended_measured = false;  // provenance MEASURED
  double recommended_true_tokens_per_s_per_gpu = 0;
  std::string recommended_confidence;  // the recommendation's own words
  // The model's first ranking of the candidates (before any trial), best
  // first, then the layouts it calls infeasible (by how far over memory).
  std::vector<Layout> model_order;
  std::vector<std::string> events;  // the study's watch messages
};

// A planner on one store, replaying studies one after the other (each
// later study on the same GPU sees the earlier ones' trials, as studies
// on one cluster do).
class StudyReplayer {
 public:
  // A store at `db_path`, created when absent (a file: `tessera studies
  // --db` reads it afterwards); "" for a temporary one removed with the
  // replayer.
  static absl::StatusOr<std::unique_ptr<StudyReplayer>> Create(
      const std::string& db_path);
  ~StudyReplayer();

  StudyReplayer(const StudyReplayer&) = delete;
  StudyReplayer& operator=(const StudyReplayer&) = delete;

  // Runs a study of `group` to its end. INVALID_ARGUMENT when its spec or
  // the options do not check (naming the field); INTERNAL when the loop
  // stops with trials left that no agent can lease.
  absl::StatusOr<StudyReplay> Replay(const SweepGroup& group,
                                     const ReplayOptions& options);
  // The model's first ranking of the group's layouts, as a study of it
  // would start (StudyReplay::model_order), without running one.
  absl::StatusOr<std::vector<Layout>> ModelOrder(const SweepGroup& group,
                                                 const ReplayOptions& options);

 private:
  // Imports the group's collectives and registers its nodes (once each);
  // the study's spec.
  absl::StatusOr<v1::StudySpec> Prepare(const SweepGroup& group,
                                        const ReplayOptions& options);
  struct State;
  explicit StudyReplayer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The key of a layout for lookups in a group (FormatLayout of the resolved
// layout).
std::string SweepKey(const Layout& layout);

}  // namespace tessera::replay
