#include "service/study_scale.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "costmodel/search/scale_search.h"
#include "proto/convert.h"
#include "service/plan_convert.h"

namespace tessera::service {

absl::Status ChooseStudyScale(const costmodel::Calibration& calibration,
                              CheckedStudy* checked) {
  v1::StudySpec& spec = checked->spec;
  if (!spec.search().has_scale()) return absl::OkStatus();
  v1::ScaleSearch& scale = *spec.mutable_search()->mutable_scale();
  if (scale.cluster_nodes() != 0) {
    // Chosen before (a stored spec submitted again): the count must lie in
    // the cluster it was chosen from.
    if (scale.cluster_nodes() < spec.cluster().nodes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search.scale.cluster_nodes: ", scale.cluster_nodes(),
          " is fewer than cluster.nodes ", spec.cluster().nodes()));
    }
    return absl::OkStatus();
  }
  if (checked->agents_gpu) {
    return absl::InvalidArgumentError(
        "search.scale: the 'agents' GPU is known only when agents register; "
        "give a GPU preset to search the GPU count");
  }
  TESSERA_ASSIGN_OR_RETURN(const costmodel::ScaleOptions options,
                           ScaleOptionsFromSpec(spec.search()));
  TESSERA_ASSIGN_OR_RETURN(
      const costmodel::ScaleResult result,
      costmodel::SearchScale(checked->workload, calibration, options));
  const costmodel::ScalePoint* chosen = result.chosen();
  const int64_t nodes =
      chosen == nullptr ? checked->workload.cluster.nodes : chosen->nodes;
  scale.clear_counts();
  for (size_t i = 0; i < result.counts.size(); ++i) {
    *scale.add_counts() =
        ScaleCountToProto(checked->workload, result, i, options);
  }
  scale.set_cluster_nodes(checked->workload.cluster.nodes);
  spec.mutable_cluster()->set_nodes(nodes);
  checked->workload = costmodel::WorkloadOnNodes(checked->workload, nodes);
  return absl::OkStatus();
}

v1::ScaleSearchCount ScaleCountToProto(const Workload& workload,
                                       const costmodel::ScaleResult& result,
                                       size_t index,
                                       const costmodel::ScaleOptions& options) {
  const costmodel::ScaleCount& c = result.counts[index];
  v1::ScaleSearchCount out;
  out.set_nodes(c.nodes);
  out.set_gpus(c.gpus);
  const std::optional<costmodel::ScalePoint> best =
      costmodel::BestOfCount(workload, result, index, options);
  if (!best.has_value()) {
    out.set_skipped(c.skipped.empty() ? "no feasible layout" : c.skipped);
    return out;
  }
  const costmodel::Prediction& p = best->evaluation.prediction;
  *out.mutable_layout() = LayoutToProto(best->evaluation.layout);
  out.set_tokens_per_s_per_gpu(p.tokens_per_s_per_gpu);
  out.set_watts_per_gpu(p.watts_per_gpu);
  out.set_seconds_per_token(best->seconds_per_token);
  out.set_joules_per_token(best->joules_per_token);
  out.set_gpu_seconds_per_token(best->gpu_seconds_per_token);
  if (best->full_run.has_value()) {
    v1::FullRun* run = out.mutable_full_run();
    run->set_days(best->full_run->days);
    run->set_energy_mwh(best->full_run->energy_mwh);
    run->set_gpu_hours(best->full_run->gpu_hours);
  }
  out.set_on_front(costmodel::IsOnScaleFront(result, *best));
  out.set_chosen(costmodel::IsScaleChoice(result, *best));
  return out;
}

std::optional<v1::RecommendationScale> RecommendationScaleOf(
    const v1::StudySpec& spec) {
  if (!spec.search().has_scale() || spec.search().scale().cluster_nodes() == 0) {
    return std::nullopt;
  }
  const v1::ScaleSearch& scale = spec.search().scale();
  const int64_t per_node = spec.cluster().gpus_per_node();
  v1::RecommendationScale out;
  out.set_nodes(spec.cluster().nodes());
  out.set_gpus(spec.cluster().nodes() * per_node);
  out.set_cluster_nodes(scale.cluster_nodes());
  out.set_cluster_gpus(scale.cluster_nodes() * per_node);
  absl::StatusOr<costmodel::ScaleOptions> options =
      ScaleOptionsFromSpec(spec.search());
  out.set_objective(std::string(costmodel::RunObjectiveName(
      options.ok() ? options->objective : costmodel::RunObjective::kTime)));
  out.set_deadline_days(scale.deadline_days());
  out.set_charge_idle_gpus(scale.charge_idle_gpus());
  *out.mutable_counts() = scale.counts();
  return out;
}

}  // namespace tessera::service
