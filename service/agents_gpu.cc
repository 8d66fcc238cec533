#include "service/agents_gpu.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tessera::service {
namespace {

// The newest probe of `kind` (probes come oldest first), optionally the one
// of the largest group and message.
const db::Probe* Newest(const std::vector<db::Probe>& probes,
                        absl::string_view kind) {
  const db::Probe* found = nullptr;
  for (const db::Probe& p : probes) {
    if (p.kind == kind) found = &p;
  }
  return found;
}

const db::Probe* NewestGemm(const std::vector<db::Probe>& probes) {
  const db::Probe* found = nullptr;
  for (const db::Probe& p : probes) {
    if (absl::StartsWith(p.kind, "gemm") && p.value > 0) found = &p;
  }
  return found;
}

// The allreduce of the largest group, then the largest message; the newest
// of equals.
const db::Probe* LargestAllReduce(const std::vector<db::Probe>& probes) {
  const db::Probe* found = nullptr;
  for (const db::Probe& p : probes) {
    if (p.kind != "allreduce" || !(p.value > 0)) continue;
    if (found == nullptr || p.group_size > found->group_size ||
        (p.group_size == found->group_size && p.bytes >= found->bytes)) {
      found = &p;
    }
  }
  return found;
}

}  // namespace

std::string AgentsGpuName(const db::Agent& agent) {
  return absl::StrCat(
      "agents/", agent.info.backend, "/",
      agent.info.gpu_name.empty() ? agent.info.hostname : agent.info.gpu_name);
}

absl::StatusOr<v1::GpuSpec> GpuSpecFromAgent(
    const db::Agent& agent, const std::vector<db::Probe>& probes,
    const v1::GpuSpec& overrides) {
  const std::string who = absl::StrCat("agent ", agent.info.id);
  const int64_t ranks = std::max<int64_t>(agent.info.gpu_count, 1);
  const db::Probe* gemm = NewestGemm(probes);
  const db::Probe* memcpy = Newest(probes, "memcpy");
  if (gemm == nullptr || memcpy == nullptr || !(memcpy->value > 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, ": no gemm and memcpy probes yet"));
  }
  if (agent.info.memory_bytes <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, ": reported no memory per rank"));
  }
  // gemm_f32 is the whole host's rate (tessera-trial --probe).
  const double tflops = gemm->kind == "gemm_f32"
                            ? gemm->value / static_cast<double>(ranks)
                            : gemm->value;
  const db::Probe* allreduce = LargestAllReduce(probes);
  v1::GpuSpec g;
  g.set_peak_dense_tflops(tflops);
  g.set_memory_bytes(agent.info.memory_bytes);
  g.set_hbm_gbs(memcpy->value);
  g.set_nvlink_gbs(memcpy->value);
  // No TCP probe yet: the largest in-process allreduce stands in for the
  // link between agents.
  g.set_inter_node_gbs(allreduce != nullptr ? allreduce->value : memcpy->value);
  g.set_tdp_w(kNominalCpuRankTdpW);
  g.set_idle_w(0);
  // The study's explicit figures win.
  if (overrides.has_peak_dense_tflops()) {
    g.set_peak_dense_tflops(overrides.peak_dense_tflops());
  }
  if (overrides.has_memory_bytes())
    g.set_memory_bytes(overrides.memory_bytes());
  if (overrides.has_hbm_gbs()) g.set_hbm_gbs(overrides.hbm_gbs());
  if (overrides.has_nvlink_gbs()) g.set_nvlink_gbs(overrides.nvlink_gbs());
  if (overrides.has_inter_node_gbs()) {
    g.set_inter_node_gbs(overrides.inter_node_gbs());
  }
  if (overrides.has_tdp_w()) g.set_tdp_w(overrides.tdp_w());
  if (overrides.has_idle_w()) g.set_idle_w(overrides.idle_w());
  return g;
}

}  // namespace tessera::service
