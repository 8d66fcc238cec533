// Metric families and the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): what
// GET /metrics answers.
//
//   MetricFamily trials{"tessera_trials", "Trials by state.",
//                       MetricType::kGauge, {}};
//   trials.samples.push_back({"", {{"state", "ok"}}, 12});
//   std::string text = ExpositionText({trials});
//   // # HELP tessera_trials Trials by state.
//   // # TYPE tessera_trials gauge
//   // tessera_trials{state="ok"} 12
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::service::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// One line of a family: name + suffix ("_bucket", "_sum", "_count" for a
// histogram's lines, "" otherwise), its labels in order, its value.
struct Sample {
  std::string suffix;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

// A metric and its samples. `name` and label names must match
// [a-zA-Z_:][a-zA-Z0-9_:]* (label names without ':'); help is free text.
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;
};

// The families in order, each as "# HELP", "# TYPE" and its sample lines;
// every line ends with '\n'.
std::string ExpositionText(const std::vector<MetricFamily>& families);

// A label value as the format quotes it: \ " and newline escaped.
std::string EscapeLabelValue(absl::string_view value);
// HELP text escaped: \ and newline.
std::string EscapeHelp(absl::string_view help);
// A value as the format writes it: the shortest decimal that reads back
// exactly, "+Inf", "-Inf" or "NaN".
std::string FormatValue(double value);
// Whether `name` is a valid metric name (label names: allow_colon false).
bool IsValidMetricName(absl::string_view name, bool allow_colon = true);

// The Content-Type of ExpositionText.
inline constexpr absl::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace tessera::service::metrics
