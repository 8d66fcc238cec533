// A leased trial's assignment converted once to domain types: where the agent
// starts it (RunTrialAssignment), and where the planner renders its framework
// configuration (service/framework_config.h): the message, and its model and
// layout as domain types. What runs the trial reads these (the command trial's placeholders
// and result, tessera-trial's command line, the result the agent writes
// itself) instead of converting the message again. A model or layout that
// does not convert keeps its error, unprefixed; each reader says what it
// means for it (a result that names the preset, a launch refused naming
// "assignment.layout" or "layout.<field>").
//
//   const AssignedTrial t = AssignedTrialOf(assignment);
//   if (t.layout.ok()) line = FormatLayout(*t.layout);
#pragma once

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/model.h"
#include "tessera/v1/service.pb.h"

namespace tessera {

struct AssignedTrial {
  v1::TrialAssignment wire;
  absl::StatusOr<ModelConfig> model;  // ModelFromSpec of wire.model()
  absl::StatusOr<Layout> layout;      // LayoutFromProto of wire.layout()
  // `layout` resolved for the world and global batch (dp, grad_accum and
  // shard_group derived where 0: core ResolveLayout).
  absl::StatusOr<Layout> resolved_layout;
};

AssignedTrial AssignedTrialOf(const v1::TrialAssignment& assignment);

}  // namespace tessera
