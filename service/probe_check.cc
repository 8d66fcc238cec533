#include "service/probe_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/gpu.h"

namespace tessera::service {
namespace {

// A datasheet peak may be beaten by this much (clocks, measurement noise).
constexpr double kDatasheetSlack = 1.1;

bool IsGemm(const db::Probe& p) { return absl::StartsWith(p.kind, "gemm"); }

// gemm_f32 measures a CPU host as a whole (tessera-trial --probe).
bool IsHostGemm(const db::Probe& p) { return p.kind == "gemm_f32"; }

// The datasheet's highest dense rate of the GPU `device_name` names
// (the driver's name: "NVIDIA H100 80GB HBM3"), TFLOP/s.
double DatasheetPeakTflops(const std::string& device_name) {
  const std::string name = absl::AsciiStrToLower(device_name);
  const struct {
    const char* marker;
    const char* preset;
  } kGpus[] = {{"h200", "h200-sxm"},
               {"h100", "h100-sxm-96g-500w"},
               {"a100", "a100-sxm-80g"},
               {"v100", "v100-sxm-32g"}};
  for (const auto& g : kGpus) {
    if (!absl::StrContains(name, g.marker)) continue;
    absl::StatusOr<GpuSpec> spec = GpuPreset(g.preset);
    if (spec.ok()) return std::max(spec->peak_dense_tflops, spec->peak_fp8_tflops);
  }
  return kUnknownGpuPeakTflops;
}

double PerRank(const db::Agent& agent, const db::Probe& p) {
  return IsHostGemm(p) ? p.value / static_cast<double>(std::max<int64_t>(
                                       agent.info.gpu_count, 1))
                       : p.value;
}

// Agents whose GEMM rates compare: the same backend and device.
bool SameDevice(const db::Agent& a, const db::Agent& b) {
  return a.info.backend == b.info.backend && a.info.gpu_name == b.info.gpu_name;
}

}  // namespace

absl::Status CheckProbes(const db::Agent& agent,
                         const std::vector<db::Probe>& probes) {
  for (size_t i = 0; i < probes.size(); ++i) {
    const db::Probe& p = probes[i];
    const std::string what = absl::StrCat("probes[", i, "] ", p.kind, ": ");
    if (!std::isfinite(p.value) || p.value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, p.value, " ", p.unit, " is not a measurement (finite and "
          "positive)"));
    }
    if (IsGemm(p)) {
      const double cap =
          IsHostGemm(p) ? kCpuHostPeakTflops
                        : kDatasheetSlack * DatasheetPeakTflops(agent.info.gpu_name);
      if (p.value > cap) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s%g TFLOP/s is above what %s can do (at most %g TFLOP/s%s)",
            what, p.value,
            IsHostGemm(p) ? std::string("a CPU host")
                          : absl::StrCat("a ", agent.info.gpu_name.empty()
                                                   ? std::string("GPU")
                                                   : agent.info.gpu_name),
            cap, IsHostGemm(p) ? "" : ", 1.1 x its datasheet peak"));
      }
    } else if (p.value > kMaxProbeGbs) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s%g GB/s is above any memory or link (at most %g GB/s)", what,
          p.value, kMaxProbeGbs));
    }
  }
  return absl::OkStatus();
}

std::optional<double> TrustedPeakTflopsPerRank(
    const db::Agent& agent, const std::vector<db::Agent>& peers,
    const std::vector<db::Probe>& probes) {
  // The newest GEMM rate per rank of each other agent on the same device.
  double peers_best = 0;
  for (const db::Agent& peer : peers) {
    if (peer.info.id == agent.info.id || !SameDevice(peer, agent)) continue;
    std::optional<double> theirs;
    for (const db::Probe& p : probes) {
      if (p.agent_id == peer.info.id && IsGemm(p) && p.value > 0) {
        theirs = PerRank(peer, p);
      }
    }
    if (theirs.has_value()) peers_best = std::max(peers_best, *theirs);
  }
  // Each of the agent's probes, oldest first, counts for at most
  // kProbeAgreement x its references (the agent's earlier probes and its
  // peers'; none: itself); the agent is as fast as the best of them, so
  // that a probe taken while the host was loaded does not lower the
  // ceiling of what it measured before.
  std::optional<double> trusted;
  double earlier_best = 0;
  for (const db::Probe& p : probes) {
    if (p.agent_id != agent.info.id || !IsGemm(p) || !(p.value > 0)) continue;
    const double rate = PerRank(agent, p);
    const double reference = std::max(earlier_best, peers_best);
    const double counted =
        reference > 0 ? std::min(rate, kProbeAgreement * reference) : rate;
    trusted = std::max(trusted.value_or(0), counted);
    earlier_best = std::max(earlier_best, counted);
  }
  return trusted;
}

std::optional<double> GangPeakTflopsPerRank(
    const std::vector<db::Agent>& gang, const std::vector<db::Agent>& peers,
    const std::vector<db::Probe>& probes) {
  std::optional<double> best;
  for (const db::Agent& agent : gang) {
    const std::optional<double> peak =
        TrustedPeakTflopsPerRank(agent, peers, probes);
    if (peak.has_value()) best = std::max(best.value_or(0), *peak);
  }
  return best;
}

}  // namespace tessera::service
