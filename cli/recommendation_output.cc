#include "cli/recommendation_output.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/output_format.h"
#include "cli/service_names.h"
#include "cli/text_table.h"
#include "google/protobuf/util/message_differencer.h"

namespace tessera::cli {
namespace {

// "MEASURED (trial 12)" or "PREDICTED".
std::string Label(const v1::RecommendedLayout& r) {
  if (r.provenance() == v1::MEASURED && r.trial_id() > 0) {
    return absl::StrCat("MEASURED (trial ", r.trial_id(), ")");
  }
  return std::string(ProvenanceName(r.provenance()));
}

bool SameLayout(const v1::Layout& a, const v1::Layout& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

void PrintRecommendedLayout(absl::string_view title,
                            const v1::RecommendedLayout& r, std::ostream& out) {
  out << title << ": " << FullLayout(r.layout()) << "\n";
  out << absl::StrFormat(
      "  %s: %.0f tokens/s, step %s s, MFU %.1f%%, %s per GPU, "
      "exposed comm %s s, bubble %s s\n",
      Label(r), r.tokens_per_s(), Readable(r.step_time_s()), 100 * r.mfu(),
      ReadableBytes(r.memory_gib_per_gpu() * 1024 * 1024 * 1024),
      Readable(r.exposed_comm_s()), Readable(r.bubble_s()));
  if (r.tokens_per_joule() > 0) {
    out << absl::StrFormat("  energy: %s tokens/J (%s)\n",
                           Readable(r.tokens_per_joule()),
                           ProvenanceName(r.energy_provenance()));
  } else {
    out << "  energy: not measured, not predicted\n";
  }
  if (r.provenance() == v1::MEASURED && r.has_predicted()) {
    const v1::Prediction& p = r.predicted();
    out << absl::StrFormat(
        "  the calibrated model predicted: %.0f tokens/s, step %s s, MFU "
        "%.1f%%, %.0f W per GPU\n",
        p.tokens_per_s(), Readable(p.step_time_s()), 100 * p.mfu(),
        p.watts_per_gpu());
  }
  if (r.has_full_run()) {
    out << absl::StrFormat(
        "  full run: %s days, %s, %s GPU-hours (from %s tokens/s)\n",
        Readable(r.full_run().days()),
        ReadableEnergyMwh(r.full_run().energy_mwh()),
        Readable(r.full_run().gpu_hours()), ProvenanceName(r.provenance()));
  } else {
    out << "  full run: the study gives no token budget "
           "(training.total_tokens)\n";
  }
  if (!r.why().empty()) out << "  why: " << r.why() << "\n";
}

std::string GpuLine(const v1::Recommendation& r) {
  std::string line = absl::StrCat("predicted for ", r.gpu_name());
  const v1::GpuSpec& g = r.gpu();
  std::vector<std::string> figures;
  if (g.has_peak_dense_tflops()) {
    figures.push_back(
        absl::StrCat(Readable(g.peak_dense_tflops()), " TFLOP/s dense"));
  }
  if (g.has_memory_bytes()) {
    figures.push_back(absl::StrFormat(
        "%.1f GiB", g.memory_bytes() / (1024.0 * 1024.0 * 1024.0)));
  }
  if (g.has_hbm_gbs()) {
    figures.push_back(absl::StrCat(Readable(g.hbm_gbs()), " GB/s memory"));
  }
  if (g.has_tdp_w()) figures.push_back(absl::StrCat(Readable(g.tdp_w()), " W"));
  if (!figures.empty()) {
    absl::StrAppend(&line, " (", absl::StrJoin(figures, ", "), ")");
  }
  return line;
}

std::string CalibrationLine(const v1::Recommendation& r) {
  if (r.calibration_samples() == 0) {
    return "calibration: the cost model's defaults (no trial measured yet)";
  }
  return absl::StrFormat("calibration: step-time MAPE %.1f%% over %d trial%s",
                         100 * r.calibration_mape(), r.calibration_samples(),
                         r.calibration_samples() == 1 ? "" : "s");
}

std::string ScaleLine(const v1::RecommendationScale& s) {
  return absl::StrFormat(
      "GPU count: every figure below is for %d GPUs (%d nodes), the count "
      "chosen for %s%s from the cluster's %d GPUs (%d nodes); the trials ran "
      "at that count, and the GPUs it leaves free are %s",
      s.gpus(), s.nodes(), s.objective(),
      s.deadline_days() > 0
          ? absl::StrFormat(" within %.4g days", s.deadline_days())
          : "",
      s.cluster_gpus(), s.cluster_nodes(),
      s.charge_idle_gpus() ? "charged their idle power"
                           : "not charged (they can run other work)");
}

void PrintRecommendation(const v1::Recommendation& r, std::ostream& out) {
  if (!r.has_best_throughput()) {
    out << "study " << r.study_id() << ": no recommendation yet\n";
  } else {
    out << "study " << r.study_id() << " recommendation"
        << (r.final() ? "" : " (provisional: the study is still running)")
        << ":\n";
    if (r.has_scale()) out << ScaleLine(r.scale()) << "\n";
    PrintRecommendedLayout("best throughput", r.best_throughput(), out);
    if (r.has_best_energy() &&
        SameLayout(r.best_energy().layout(), r.best_throughput().layout())) {
      out << "best energy: the same layout\n";
    } else if (r.has_best_energy()) {
      PrintRecommendedLayout("best energy", r.best_energy(), out);
    }
    if (r.pareto_size() > 0) {
      out << "pareto front (tokens/s against tokens/J): " << r.pareto_size()
          << " layout" << (r.pareto_size() == 1 ? "" : "s") << "\n";
      for (const v1::RecommendedLayout& p : r.pareto()) {
        out << absl::StrFormat("  %12.0f tokens/s %8s tokens/J  %-9s  %s\n",
                               p.tokens_per_s(), Readable(p.tokens_per_joule()),
                               ProvenanceName(p.provenance()),
                               CompactLayout(p.layout()));
      }
    }
  }
  out << CalibrationLine(r) << "\n";
  if (!r.gpu_name().empty()) out << GpuLine(r) << "\n";
  if (!r.history_db().empty()) {
    out << "history: " << r.history_db() << " (tessera trials --study "
        << r.study_id() << ", tessera history)\n";
  }
}

void PrintRecommendedLayoutCsv(const v1::Recommendation& recommendation,
                               absl::string_view objective,
                               const v1::RecommendedLayout* layout,
                               std::ostream& out) {
  out << CsvLine({"study_id", "objective", "final", "layout", "provenance",
                  "trial_id", "tokens_per_s", "step_time_s", "mfu",
                  "memory_gib_per_gpu", "exposed_comm_s", "bubble_s",
                  "tokens_per_joule", "energy_provenance", "full_run_days",
                  "full_run_energy_mwh", "full_run_gpu_hours", "why"});
  if (layout == nullptr) return;
  const v1::RecommendedLayout& r = *layout;
  const bool measured = r.provenance() == v1::MEASURED;
  const bool has_energy = r.tokens_per_joule() > 0;
  const bool full = r.has_full_run();
  auto number = [](bool known, double value) {
    return CsvNumber(known ? std::optional<double>(value) : std::nullopt);
  };
  out << CsvLine({
      absl::StrCat(recommendation.study_id()),
      std::string(objective),
      recommendation.final() ? "true" : "false",
      CompactLayout(r.layout()),
      std::string(ProvenanceName(r.provenance())),
      measured && r.trial_id() > 0 ? absl::StrCat(r.trial_id()) : "",
      CsvNumber(r.tokens_per_s()),
      CsvNumber(r.step_time_s()),
      number(r.mfu() > 0, r.mfu()),
      CsvNumber(r.memory_gib_per_gpu()),
      CsvNumber(r.exposed_comm_s()),
      CsvNumber(r.bubble_s()),
      number(has_energy, r.tokens_per_joule()),
      has_energy ? std::string(ProvenanceName(r.energy_provenance())) : "",
      number(full, r.full_run().days()),
      number(full, r.full_run().energy_mwh()),
      number(full, r.full_run().gpu_hours()),
      r.why(),
  });
}

}  // namespace tessera::cli
