#include "service/metrics/exposition.h"

#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tessera::service::metrics {
namespace {

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, r.ptr);
}

bool IsValidMetricName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' ||
                    (allow_colon && c == ':') ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

std::string ExpositionText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    absl::StrAppend(&out, "# HELP ", family.name, " ", EscapeHelp(family.help),
                    "\n# TYPE ", family.name, " ", TypeName(family.type), "\n");
    for (const Sample& sample : family.samples) {
      absl::StrAppend(&out, family.name, sample.suffix);
      if (!sample.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < sample.labels.size(); ++i) {
          absl::StrAppend(&out, i > 0 ? "," : "", sample.labels[i].first, "=\"",
                          EscapeLabelValue(sample.labels[i].second), "\"");
        }
        out += '}';
      }
      absl::StrAppend(&out, " ", FormatValue(sample.value), "\n");
    }
  }
  return out;
}

}  // namespace tessera::service::metrics
