#include "service/trial_geometry.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace tessera::service {
namespace {

// The trial's layout, workload and note for a data-parallel degree `dp`
// (the study's, or scaled down) and `layers` (0: the model's).
absl::StatusOr<TrialPlan> Complete(const Workload& study, const Layout& layout,
                                   int64_t dp, int64_t layers) {
  const int64_t gpn = study.cluster.gpus_per_node;
  Layout t = layout;
  t.dp = dp;
  if (dp != layout.dp) {
    if (layout.zero == 0) {
      t.shard_group = 1;
    } else if (layout.shard_group == layout.dp) {
      t.shard_group = dp;  // whole-group sharding stays whole-group
    } else if (dp % layout.shard_group != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("HSDP shard_group ", layout.shard_group,
                       " does not divide the trial's dp ", dp));
    }
  }
  TrialPlan plan;
  plan.ranks_per_agent = gpn;
  plan.study_dp = layout.dp;
  plan.workload = study;
  const int64_t world = t.model_parallel() * dp;
  plan.gang_size = world / gpn;
  plan.workload.cluster.nodes = plan.gang_size;
  plan.workload.training.global_batch = t.micro_batch * dp * t.grad_accum;
  std::vector<std::string> notes;
  if (dp != layout.dp) {
    notes.push_back(absl::StrCat("measured at dp ", dp, " of ", layout.dp));
  }
  if (layers > 0 && layers != study.model.layers) {
    plan.workload.model.layers = layers;
    plan.workload.model.name = "custom";
    notes.push_back(absl::StrCat("measured with ", layers, " of ",
                                 study.model.layers, " layers"));
  }
  absl::StatusOr<Layout> resolved =
      ResolveLayout(t, world, plan.workload.training.global_batch);
  if (!resolved.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("at the trial's scale: ", resolved.status().message()));
  }
  const absl::Status fits = CheckLayoutFitsModel(
      *resolved, plan.workload.model, plan.workload.training.seq_len);
  if (!fits.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("with the trial's ", plan.workload.model.layers,
                     " layers: ", fits.message()));
  }
  plan.layout = *resolved;
  plan.note = absl::StrJoin(notes, "; ");
  return plan;
}

absl::Status CheckResolved(const Layout& layout, absl::string_view what) {
  if (layout.dp < 1 || layout.grad_accum < 1 || layout.shard_group < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what,
                     ": must be resolved (dp, grad_accum, shard_group "
                     "set), got ",
                     FormatLayout(layout)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrialPlan> PlanTrial(const Workload& study, const Layout& layout,
                                    int64_t available_agents, int64_t layers) {
  TESSERA_RETURN_IF_ERROR(CheckResolved(layout, "layout"));
  const int64_t nodes = study.cluster.nodes;
  const int64_t gpn = study.cluster.gpus_per_node;
  const int64_t agents = std::min(available_agents, nodes);
  if (agents < 1) {
    return absl::FailedPreconditionError("no agent can run it");
  }
  int64_t dp = layout.dp;
  if (agents < nodes) {
    const int64_t mp = layout.model_parallel();
    // dp' must make mp * dp' a multiple of the ranks per agent.
    const int64_t step = gpn / std::gcd(mp, gpn);
    const int64_t max_dp = agents * gpn / mp;
    dp = std::min(layout.dp, max_dp / step * step);
    if (dp < 1) {
      const int64_t needed = (mp * step + gpn - 1) / gpn;
      return absl::FailedPreconditionError(
          absl::StrCat("tp*pp*cp = ", mp, " ranks need ", needed, " agents of ",
                       gpn, " ranks, ", agents, " available"));
    }
  }
  return Complete(study, layout, dp, layers);
}

absl::StatusOr<TrialPlan> PlanOfTrialLayout(const Workload& study,
                                            const Layout& trial_layout,
                                            int64_t layers) {
  TESSERA_ASSIGN_OR_RETURN(const Layout layout,
                           StudyLayoutOfTrial(study, trial_layout));
  return Complete(study, layout, trial_layout.dp, layers);
}

absl::StatusOr<Layout> StudyLayoutOfTrial(const Workload& study,
                                          const Layout& trial_layout) {
  TESSERA_RETURN_IF_ERROR(CheckResolved(trial_layout, "trial layout"));
  Layout l = trial_layout;
  l.dp = 0;
  if (l.zero == 0 || trial_layout.shard_group == trial_layout.dp) {
    l.shard_group = 0;  // derive: 1 without sharding, else the whole group
  }
  return ResolveLayout(l, study.cluster.world_size(),
                       study.training.global_batch);
}

std::string TrialScaleNote(const db::Trial& trial, const Workload& study,
                           int64_t layers) {
  absl::StatusOr<TrialPlan> plan =
      PlanOfTrialLayout(study, trial.layout, layers);
  return plan.ok() ? plan->note : "";
}

std::string LayoutKey(const Layout& layout) { return FormatLayout(layout); }

}  // namespace tessera::service
