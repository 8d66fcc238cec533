// Where a study's layout runs as a trial. The study's world is nodes x
// gpus_per_node; a trial runs gpus_per_node ranks on each of gang_size agents.
// With as many suitable agents as nodes, the trial is the study's layout as
// is. With fewer, the data-parallel degree is scaled down (tp, pp, cp,
// micro_batch and grad_accum kept) to the largest dp' whose world
// tp*pp*cp*dp' fits the agents and fills whole agents; the global batch
// becomes micro_batch * dp' * grad_accum. TrialOptions.layers trials the model
// with fewer layers (same widths). A layout whose model-parallel group does
// not fit the agents, or that no longer fits the model, is not trialable.
//
//   TESSERA_ASSIGN_OR_RETURN(TrialPlan plan,
//       PlanTrial(workload, candidate.layout, /*agents=*/2, /*layers=*/0));
//   // plan.layout.dp == 2, plan.gang_size == 2, plan.note ==
//   //     "measured at dp 2 of 32"
//   TESSERA_ASSIGN_OR_RETURN(Layout back,
//                            StudyLayoutOfTrial(workload, plan.layout));
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/workload.h"
#include "db/trial_store.h"

namespace tessera::service {

struct TrialPlan {
  Layout layout;          // resolved for the trial's world
  Workload workload;      // as trialed: the model (maybe fewer layers), nodes =
                          // gang_size, the trial's global batch
  int64_t gang_size = 1;  // agents the trial needs
  int64_t ranks_per_agent = 1;  // the study's gpus_per_node
  int64_t study_dp = 1;         // the layout's dp in the study's world
  // How the trial differs from the study ("" when it does not): "measured at
  // dp 2 of 32", "measured with 4 of 32 layers".
  std::string note;

  int64_t world_size() const { return layout.world_size(); }
  bool scaled() const { return !note.empty(); }
};

// Plans the trial of `layout` (resolved for the study's world) on at most
// `available_agents` agents with gpus_per_node ranks each (>= 1), with the
// model cut to `layers` layers (0: the full model). FAILED_PRECONDITION with
// the reason for a layout that cannot be trialed ("tp*pp*cp = 16 ranks need 2
// agents of 8 ranks, 1 available"); INVALID_ARGUMENT for an unresolved layout.
absl::StatusOr<TrialPlan> PlanTrial(const Workload& study, const Layout& layout,
                                    int64_t available_agents, int64_t layers);

// The plan of a stored trial: its layout is resolved for the trial's world
// (layout.world_size() ranks, gpus_per_node per agent). What PlanTrial of
// StudyLayoutOfTrial gives back, without needing the agents.
absl::StatusOr<TrialPlan> PlanOfTrialLayout(const Workload& study,
                                            const Layout& trial_layout,
                                            int64_t layers);

// The study-world layout a trial layout stands for: dp for the study's world,
// the rest kept; a shard_group equal to the trial's dp (whole-group sharding)
// becomes the study's whole group. INVALID_ARGUMENT when it does not resolve.
absl::StatusOr<Layout> StudyLayoutOfTrial(const Workload& study,
                                          const Layout& trial_layout);

// How a stored trial differs from its study ("measured at dp 2 of 32",
// ...), "" when it runs the study's layout as is (or does not map onto it).
std::string TrialScaleNote(const db::Trial& trial, const Workload& study,
                           int64_t layers);

// A canonical key of a (resolved) layout, for "was this trialed".
std::string LayoutKey(const Layout& layout);

}  // namespace tessera::service
