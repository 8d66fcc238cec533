#include "proto/assigned_trial.h"

#include "proto/convert.h"

namespace tessera {

AssignedTrial AssignedTrialOf(const v1::TrialAssignment& a) {
  AssignedTrial t{a, ModelFromSpec(a.model()), LayoutFromProto(a.layout()),
                  absl::StatusOr<Layout>()};
  t.resolved_layout =
      t.layout.ok() ? ResolveLayout(*t.layout, a.world_size(), a.global_batch())
                    : t.layout;
  return t;
}

}  // namespace tessera
