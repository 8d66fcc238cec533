// A Prometheus histogram with labels: observations counted into cumulative
// buckets by upper bound, with their sum and count, one series per distinct
// set of label values. Safe to use from several threads at once.
//
//   Histogram latency("tessera_rpc_duration_seconds", "RPC latency.",
//                     {"method", "code"}, {0.001, 0.01, 0.1, 1});
//   latency.Observe({"tessera.v1.PlannerService/ListStudies", "OK"}, 0.002);
//   MetricFamily family = latency.Collect();
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "service/metrics/exposition.h"

namespace tessera::service::metrics {

class Histogram {
 public:
  // `upper_bounds`: finite, strictly increasing bucket bounds (the +Inf
  // bucket is implicit). `label_names` must not include "le".
  Histogram(std::string name, std::string help,
            std::vector<std::string> label_names,
            std::vector<double> upper_bounds);

  // Counts `value` in the series of `label_values` (one per label name, in
  // order; a wrong count is a programming error and is dropped).
  void Observe(const std::vector<std::string>& label_values, double value);

  // The family as of now: per series, one _bucket line per bound and +Inf
  // (cumulative counts, "le" the last label), then _sum and _count. Series
  // in label-value order.
  MetricFamily Collect() const;

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  struct Series {
    std::vector<int64_t> bucket_counts;  // per bound, not cumulative; + Inf
    double sum = 0;
    int64_t count = 0;
  };

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> upper_bounds_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, Series> series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::service::metrics
