#include "service/study_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "service/agents_gpu.h"
#include "service/plan_convert.h"
#include "service/spec_bounds.h"
#include "service/trial_command_check.h"
#include "proto/convert.h"
#include "proto/spec_json.h"

namespace tessera::service {
namespace {

// The preset the "agents" GPU is checked with before it is resolved: only
// the explicit figures over it matter for the check.
constexpr char kStandInPreset[] = "h100-sxm";

std::string DefaultName(const v1::StudySpec& spec, const Workload& w) {
  return absl::StrCat(
      w.model.name, "-", w.cluster.nodes, "x", w.cluster.gpus_per_node, "-",
      spec.cluster().gpu().preset().empty() ? std::string("custom")
                                            : spec.cluster().gpu().preset());
}

}  // namespace

absl::Status InStudy(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(absl::StrCat("study.", status.message()));
}

absl::Status CheckStudyName(absl::string_view name) {
  if (name.size() > kMaxStudyNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("study.name: at most ", kMaxStudyNameBytes, " bytes, got ",
                     name.size()));
  }
  for (const char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "study.name: control character 0x%02x (names are printed on "
          "terminals)",
          c));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckedStudy> CheckStudySpec(const v1::StudySpec& spec) {
  TESSERA_RETURN_IF_ERROR(CheckStudyName(spec.name()));
  TESSERA_RETURN_IF_ERROR(CheckSpecBounds(spec));
  CheckedStudy out;
  out.spec = spec;
  out.agents_gpu = spec.cluster().gpu().preset() == kAgentsGpuPreset;
  v1::StudySpec checked = spec;
  if (out.agents_gpu) {
    checked.mutable_cluster()->mutable_gpu()->set_preset(kStandInPreset);
  }
  absl::StatusOr<Workload> workload = CheckedWorkloadFromSpec(checked);
  if (!workload.ok()) return InStudy(workload.status());
  out.workload = *std::move(workload);
  absl::StatusOr<costmodel::SearchOptions> search =
      SearchOptionsFromSpec(spec.search());
  if (!search.ok()) return InStudy(search.status());
  out.search = *search;
  TESSERA_ASSIGN_OR_RETURN(
      out.trials, ResolveTrialOptions(spec.trials(), out.workload.model));
  TESSERA_RETURN_IF_ERROR(CheckTrialBackendRunsStack(out.trials, out.workload));
  if (out.spec.name().empty()) {
    out.spec.set_name(DefaultName(spec, out.workload));
  }
  return out;
}

absl::StatusOr<Workload> WorkloadWithGpu(const v1::StudySpec& spec,
                                         const v1::GpuSpec& gpu) {
  v1::StudySpec resolved = spec;
  *resolved.mutable_cluster()->mutable_gpu() = gpu;
  absl::StatusOr<Workload> w = CheckedWorkloadFromSpec(resolved);
  if (!w.ok()) return InStudy(w.status());
  return w;
}

v1::GpuSpec GpuSpecToProto(const GpuSpec& gpu) {
  v1::GpuSpec g;
  g.set_peak_dense_tflops(gpu.peak_dense_tflops);
  g.set_memory_bytes(gpu.memory_bytes);
  g.set_hbm_gbs(gpu.hbm_gbs);
  g.set_nvlink_gbs(gpu.nvlink_gbs);
  g.set_inter_node_gbs(gpu.inter_node_gbs);
  g.set_tdp_w(gpu.tdp_w);
  g.set_idle_w(gpu.idle_w);
  return g;
}

std::string StudySpecToJson(const v1::StudySpec& spec) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(spec, &json, options);
  return json;
}

absl::StatusOr<v1::StudySpec> StudySpecFromStoredJson(
    absl::string_view json, absl::string_view source) {
  return StudySpecFromJson(json, source);
}

}  // namespace tessera::service
