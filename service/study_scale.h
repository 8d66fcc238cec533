// A study that searches its GPU count (spec search.scale): when it is
// submitted, the planner runs the count search (costmodel/search/
// scale_search.h) with the study's calibration and the objective's count
// becomes the study's cluster (spec cluster.nodes), the cluster's nodes kept
// in search.scale.cluster_nodes and every count searched in
// search.scale.counts. Its candidates, trials and recommendation
// are then for that count: the trials run the chosen layouts at the chosen
// count (cheaper than the whole cluster), and the recommendation says which
// count its figures are for (Recommendation.scale).
//
//   TESSERA_RETURN_IF_ERROR(ChooseStudyScale(calibration, &checked));
//   // checked.spec.cluster().nodes() is now the chosen count
//   std::optional<v1::RecommendationScale> s = RecommendationScaleOf(spec);
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/search/scale_search.h"
#include "service/study_spec.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

// Chooses the count of `checked` when its spec has search.scale and no
// count was chosen yet (search.scale.cluster_nodes 0), rewriting its spec
// and workload; any other study is left as is. INVALID_ARGUMENT naming
// "search.scale.<field>" for bad scale options or an "agents" GPU (known
// only when agents register); a count search that finds no feasible layout
// leaves the whole cluster.
absl::Status ChooseStudyScale(const costmodel::Calibration& calibration,
                              CheckedStudy* checked);

// counts[index] of `result` (searched on `workload`, the whole cluster,
// with `options`) as the spec and the recommendation keep it: its best
// layout for the objective, or why it has none.
v1::ScaleSearchCount ScaleCountToProto(const Workload& workload,
                                       const costmodel::ScaleResult& result,
                                       size_t index,
                                       const costmodel::ScaleOptions& options);

// The scale of a study whose count was chosen (search.scale.cluster_nodes
// set), for its recommendation; nullopt otherwise.
std::optional<v1::RecommendationScale> RecommendationScaleOf(
    const v1::StudySpec& spec);

}  // namespace tessera::service
