#include "cli/layout_explanation.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/layout.h"
#include "core/units.h"

namespace tessera::cli {
namespace {


// The parts of a step, named as the explanation names them.
std::vector<std::pair<std::string, double>> StepParts(
    const costmodel::Prediction& p) {
  return {{"compute", p.compute_s},
          {"exposed tp comm", p.tp_exposed_s},
          {"exposed cp comm", p.cp_exposed_s},
          {"exposed pp comm", p.pp_exposed_s},
          {"exposed dp comm", p.dp_exposed_s},
          {"bubble", p.bubble_s}};
}

}  // namespace

std::string StepAccount(const costmodel::Prediction& p) {
  std::vector<std::pair<std::string, double>> exposed = {
      {"tp", p.tp_exposed_s},
      {"cp", p.cp_exposed_s},
      {"pp", p.pp_exposed_s},
      {"dp", p.dp_exposed_s}};
  std::stable_sort(
      exposed.begin(), exposed.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> kinds;
  for (const auto& [kind, seconds] : exposed) {
    // Below a microsecond is rounding, not communication.
    if (seconds > 1e-6)
      kinds.push_back(absl::StrFormat("%s %.4f", kind, seconds));
  }
  // Of the compute, what the hidden collectives slowed it by and how long
  // the GPU waited for its host.
  std::vector<std::string> of_compute;
  if (p.overlap_slowdown_s > 1e-6) {
    of_compute.push_back(absl::StrFormat("%.4f of it slowed by hidden comm",
                                         p.overlap_slowdown_s));
  }
  if (p.host_wait_s > 1e-6) {
    of_compute.push_back(
        absl::StrFormat("%.4f of it waiting for the host", p.host_wait_s));
  }
  const std::string slowed =
      of_compute.empty()
          ? ""
          : absl::StrCat(" (", absl::StrJoin(of_compute, ", "), ")");
  return absl::StrFormat(
      "%.4f s = compute %.4f%s + exposed comm %.4f%s + bubble %.4f",
      p.step_time_s, p.compute_s, slowed, p.exposed_comm_s,
      kinds.empty() ? "" : absl::StrCat(" (", absl::StrJoin(kinds, ", "), ")"),
      p.bubble_s);
}

std::string MemoryAccount(const costmodel::MemoryBreakdown& m) {
  return absl::StrFormat(
      "%.1f GiB: weights %.1f, master weights %.1f, gradients %.1f, optimizer "
      "%.1f, activations %.1f, logits %.1f, gathered params %.1f, overhead "
      "%.1f",
      m.total_bytes / kGiB, m.weights_bytes / kGiB,
      m.master_weights_bytes / kGiB, m.gradients_bytes / kGiB,
      m.optimizer_bytes / kGiB, m.activations_bytes / kGiB,
      m.logits_bytes / kGiB, m.gathered_params_bytes / kGiB,
      m.overhead_bytes / kGiB);
}

std::string WhatSeparates(const costmodel::Prediction& p,
                          const costmodel::Prediction& best) {
  const double change = p.step_time_s / best.step_time_s - 1;
  const auto mine = StepParts(p);
  const auto theirs = StepParts(best);
  std::vector<std::pair<std::string, double>> deltas;
  for (size_t i = 0; i < mine.size(); ++i) {
    const double delta = mine[i].second - theirs[i].second;
    if (std::abs(delta) > 0.005 * best.step_time_s) {
      deltas.push_back({mine[i].first, delta});
    }
  }
  // Memory is what the cheaper-looking layout may be paying with.
  const double memory_gib =
      (p.memory.total_bytes - best.memory.total_bytes) / kGiB;
  const std::string memory =
      std::abs(memory_gib) >= 0.5
          ? absl::StrFormat("; memory %+.1f GiB per GPU", memory_gib)
          : "";
  if (deltas.empty() && std::abs(change) < 0.0005) {
    return absl::StrCat("the same step time as the best", memory);
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const auto& a, const auto& b) {
                     return std::abs(a.second) > std::abs(b.second);
                   });
  std::vector<std::string> parts;
  for (const auto& [name, delta] : deltas) {
    // Three significant digits: a difference of 41 us is "+4.1e-05 s", never
    // "-0.0000 s".
    parts.push_back(absl::StrFormat("%s %+.3g s", name, delta));
  }
  return absl::StrFormat(
      "%+.1f%% step time vs the best%s%s", 100 * change,
      parts.empty() ? "" : absl::StrCat(": ", absl::StrJoin(parts, ", ")),
      memory);
}

void PrintWhyTopCandidates(const costmodel::SearchResult& result,
                           const costmodel::PlanUncertainty* u, int64_t top,
                           std::ostream& out) {
  const int64_t shown =
      std::min<int64_t>(top, static_cast<int64_t>(result.candidates.size()));
  if (shown <= 0) return;
  out << "why the top " << shown << (shown == 1 ? " layout" : " layouts")
      << " (step = compute + exposed communication + bubble; memory per GPU "
         "by what holds it):\n";
  const costmodel::Prediction& best = result.candidates.front().prediction;
  for (int64_t i = 0; i < shown; ++i) {
    const costmodel::LayoutEvaluation& e = result.candidates[i];
    out << absl::StrFormat("%2d %s\n", i + 1, FormatLayout(e.layout));
    out << "   step   " << StepAccount(e.prediction) << "\n";
    out << "   memory " << MemoryAccount(e.prediction.memory) << "\n";
    if (i == 0) continue;
    out << "   vs 1   " << WhatSeparates(e.prediction, best);
    const auto& within =
        u == nullptr ? std::vector<bool>{} : u->ranking.within_error_of_best;
    if (static_cast<size_t>(i) < within.size()) {
      out << (within[i] ? "; within the model's error of rank 1"
                        : "; beyond the model's error");
    }
    out << "\n";
  }
}

}  // namespace tessera::cli
