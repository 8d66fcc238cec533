#include "service/metrics/histogram.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace tessera::service::metrics {

Histogram::Histogram(std::string name, std::string help,
                     std::vector<std::string> label_names,
                     std::vector<double> upper_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      upper_bounds_(std::move(upper_bounds)) {}

void Histogram::Observe(const std::vector<std::string>& label_values,
                        double value) {
  if (label_values.size() != label_names_.size()) return;
  // The first bucket whose bound is >= value ("le"); past the last: +Inf.
  const size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
      upper_bounds_.begin();
  absl::MutexLock lock(&mu_);
  Series& series = series_[label_values];
  if (series.bucket_counts.empty()) {
    series.bucket_counts.assign(upper_bounds_.size() + 1, 0);
  }
  ++series.bucket_counts[bucket];
  series.sum += value;
  ++series.count;
}

MetricFamily Histogram::Collect() const {
  MetricFamily family{name_, help_, MetricType::kHistogram, {}};
  absl::MutexLock lock(&mu_);
  for (const auto& [values, series] : series_) {
    std::vector<std::pair<std::string, std::string>> labels;
    for (size_t i = 0; i < label_names_.size(); ++i) {
      labels.emplace_back(label_names_[i], values[i]);
    }
    int64_t cumulative = 0;
    for (size_t b = 0; b <= upper_bounds_.size(); ++b) {
      cumulative += series.bucket_counts[b];
      std::vector<std::pair<std::string, std::string>> bucket_labels = labels;
      bucket_labels.emplace_back(
          "le", FormatValue(b < upper_bounds_.size()
                                ? upper_bounds_[b]
                                : std::numeric_limits<double>::infinity()));
      family.samples.push_back({"_bucket", std::move(bucket_labels),
                                static_cast<double>(cumulative)});
    }
    family.samples.push_back({"_sum", labels, series.sum});
    family.samples.push_back(
        {"_count", labels, static_cast<double>(series.count)});
  }
  return family;
}

}  // namespace tessera::service::metrics
