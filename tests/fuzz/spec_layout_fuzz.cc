#include "tests/fuzz/spec_layout_fuzz.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/layout_json.h"
#include "core/model.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/prediction.h"
#include "proto/convert.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera {
namespace {

// Aborts with `what` when an invariant fails: libFuzzer records the input.
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

// Checks what holds for every prediction of any layout on a valid workload.
void CheckPrediction(const Workload& workload, const Layout& layout) {
  const costmodel::LayoutEvaluation e =
      costmodel::PredictLayout(workload, layout, costmodel::Calibration{});
  if (!e.feasible) {
    Check(!e.reason.empty(), "an infeasible layout has a reason");
    return;
  }
  const costmodel::Prediction& p = e.prediction;
  Check(e.layout.world_size() == workload.cluster.world_size(),
        "a feasible layout uses the whole cluster");
  Check(std::isfinite(p.step_time_s) && p.step_time_s > 0,
        "a feasible step time is finite and positive");
  Check(std::isfinite(p.tokens_per_s) && p.tokens_per_s > 0,
        "a feasible throughput is finite and positive");
  Check(std::isfinite(p.tokens_per_joule) && p.tokens_per_joule >= 0,
        "tokens per joule is finite");
  Check(std::isfinite(p.memory.total_bytes) && p.memory.total_bytes > 0,
        "memory is finite and positive");
}

// Preset workloads every parsed layout is predicted on, so that fuzzed
// layouts reach the cost model even when the spec part does not parse.
const std::vector<Workload>& PresetWorkloads() {
  static const std::vector<Workload>* const workloads = [] {
    auto* w = new std::vector<Workload>;
    const GpuSpec h100 = *GpuPreset("h100-sxm");
    w->push_back({*ModelPreset("llama2-7b"), MakeCluster(h100, 4, 8),
                  TrainingConfig{64, 4096, 1e12}});
    w->push_back({*ModelPreset("llama3-70b"), MakeCluster(h100, 16, 8),
                  TrainingConfig{256, 8192, 0}});
    w->push_back({*ModelPreset("tiny"),
                  MakeCluster(*GpuPreset("v100-sxm-32g"), 3, 2),
                  TrainingConfig{12, 128, 1e9}});
    return w;
  }();
  return *workloads;
}

void FuzzLayout(absl::string_view text) {
  absl::StatusOr<Layout> layout = ParseLayout(text);
  if (!layout.ok()) return;
  absl::StatusOr<Layout> from_json = LayoutFromJson(LayoutToJson(*layout));
  Check(from_json.ok() && *from_json == *layout,
        "LayoutFromJson(LayoutToJson(l)) == l");
  static const ModelConfig* const model =
      new ModelConfig(*ModelPreset("llama2-70b"));
  for (int64_t world : {1, 8, 96, 256, 16384}) {
    for (int64_t batch : {1, 64, 512, 1536}) {
      absl::StatusOr<Layout> resolved = ResolveLayout(*layout, world, batch);
      if (!resolved.ok()) continue;
      // The text round trip holds for resolved layouts (FormatLayout writes
      // dp=0 etc. for unresolved ones, which ParseLayout refuses).
      absl::StatusOr<Layout> again = ParseLayout(FormatLayout(*resolved));
      Check(again.ok() && *again == *resolved,
            "ParseLayout(FormatLayout(resolved)) == resolved");
      Check(resolved->world_size() == world, "resolved world size");
      Check(
          resolved->micro_batch * resolved->dp * resolved->grad_accum == batch,
          "resolved global batch");
      Check(resolved->shard_group >= 1 &&
                resolved->dp % resolved->shard_group == 0,
            "resolved shard group");
      for (int64_t seq_len : {1, 4096, 4097}) {
        (void)CheckLayoutFitsModel(*resolved, *model, seq_len);
      }
    }
  }
  for (const Workload& w : PresetWorkloads()) CheckPrediction(w, *layout);
}

void FuzzSpec(absl::string_view json, const absl::StatusOr<Layout>& layout) {
  absl::StatusOr<v1::StudySpec> spec = StudySpecFromJson(json, "fuzz");
  if (!spec.ok()) return;
  absl::StatusOr<Workload> workload = CheckedWorkloadFromSpec(*spec);
  if (!workload.ok()) return;
  Check(ValidateWorkload(*workload).ok(), "a converted workload is valid");
  absl::StatusOr<Workload> back = CheckedWorkloadFromSpec(SpecFromWorkload(*workload));
  Check(back.ok() &&
            back->cluster.world_size() == workload->cluster.world_size() &&
            back->model.ParamCount() == workload->model.ParamCount(),
        "SpecFromWorkload round trip");
  if (layout.ok()) CheckPrediction(*workload, *layout);
}

}  // namespace
}  // namespace tessera

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const absl::string_view layout_text = input.substr(0, newline);
  tessera::FuzzLayout(layout_text);
  if (newline != absl::string_view::npos) {
    tessera::FuzzSpec(input.substr(newline + 1),
                      tessera::ParseLayout(layout_text));
  }
  return 0;
}
