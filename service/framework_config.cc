#include "service/framework_config.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/gpu.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/status_macros.h"
#include "core/workload.h"
#include "export/layout_export.h"
#include "proto/assigned_trial.h"
#include "proto/convert.h"

namespace tessera::service {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// The workload the assignment runs, for the exporter: its model, batch,
// stack and precision on a cluster of its shape (the stand-in GPU only
// names the cluster; no export depends on its figures).
absl::StatusOr<Workload> AssignmentWorkload(const AssignedTrial& t) {
  const v1::TrialAssignment& a = t.wire;
  if (!t.model.ok()) {
    return FieldError("assignment.model", t.model.status().message());
  }
  Workload w;
  w.model = *t.model;
  w.cluster =
      MakeCluster(*GpuPreset("h100-sxm"), std::max<int64_t>(a.gang_size(), 1),
                  a.ranks_per_node());
  w.training.global_batch = a.global_batch();
  w.training.seq_len = a.seq_len();
  w.training.stack = a.stack();
  if (!a.precision().empty()) {
    absl::StatusOr<Precision> p = ParsePrecision(a.precision());
    if (!p.ok()) {
      return FieldError("assignment.precision", p.status().message());
    }
    w.training.precision = *p;
  }
  return w;
}

absl::StatusOr<std::string> RenderedConfig(const v1::TrialAssignment& a,
                                           exporters::ExportTarget target) {
  // The same conversion the agent makes of its lease (proto/assigned_trial.h).
  const AssignedTrial t = AssignedTrialOf(a);
  TESSERA_ASSIGN_OR_RETURN(const Workload w, AssignmentWorkload(t));
  if (!t.resolved_layout.ok()) {
    return FieldError("assignment.layout", t.resolved_layout.status().message());
  }
  absl::StatusOr<std::string> text =
      exporters::ExportLayout(w, *t.resolved_layout, target);
  if (!text.ok()) {
    return FieldError("assignment.layout",
                      absl::StrCat("{config}: ", text.status().message()));
  }
  return text;
}

}  // namespace

void AttachFrameworkConfig(v1::TrialAssignment& a) {
  a.clear_framework_config_file();
  a.clear_framework_config();
  a.clear_framework_config_error();
  const std::optional<exporters::ExportTarget> target =
      exporters::ExportTargetOfStack(a.stack());
  if (!target.has_value()) return;
  a.set_framework_config_file(std::string(exporters::ExportFileName(*target)));
  absl::StatusOr<std::string> text = RenderedConfig(a, *target);
  if (text.ok()) {
    a.set_framework_config(*std::move(text));
  } else {
    a.set_framework_config_error(std::string(text.status().message()));
  }
}

}  // namespace tessera::service
