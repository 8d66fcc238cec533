// The cost model's coefficients that are not physics: each has a name, a
// default with its source, and a valid range. Trials refit them (the planner
// service stores fitted sets in SQLite); `tessera plan` uses the defaults.
//
//   Calibration c;
//   TESSERA_RETURN_IF_ERROR(c.Set("fsdp_overlap_efficiency", 0.7));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/calibration/measured_collectives.h"

namespace tessera::costmodel {

// What sets a coefficient (coefficients.inc): the hardware, or the stack.
enum CoefficientKind { kHardware, kStack };

// Describes one coefficient.
struct CoefficientInfo {
  std::string name;
  double default_value = 0;
  double min_value = 0;
  double max_value = 0;
  std::string unit;    // "", "s", "bytes", ...
  std::string source;  // where the default comes from
  CoefficientKind kind = kStack;
};

// A full set of coefficient values (the cost model reads them by field; the
// service stores and fits them by name).
struct Calibration {
  // Defined in calibration.cc together with their CoefficientInfo.
#define TESSERA_COEFFICIENT(name, kind, default_value, min, max, unit, source) \
  double name = default_value;
#include "costmodel/calibration/coefficients.inc"
#undef TESSERA_COEFFICIENT

  // The cluster's measured collective bus bandwidth, used in place of the
  // link figures (and their efficiencies) where it covers a collective;
  // null: none measured.
  std::shared_ptr<const MeasuredCollectives> collectives;

  // Every coefficient, in declaration order.
  static const std::vector<CoefficientInfo>& Infos();
  // NotFound for an unknown name; InvalidArgument outside [min, max].
  absl::StatusOr<double> Get(absl::string_view name) const;
  absl::Status Set(absl::string_view name, double value);
};

// The offset of a coefficient's shifted log axis u = log(x + offset), in which
// fits move it and spreads are stated: 0 when its range starts above 0, else a
// tenth of its default (of its maximum when the default is 0), so that 0 is
// reachable at a finite u.
double ShiftedLogOffset(const CoefficientInfo& info);

// `to` with the hardware coefficients (kHardware) of `from`: what a fit to
// one stack's trials says about the cluster, carried to another stack's
// defaults on the same cluster.
Calibration WithHardwareOf(const Calibration& from, Calibration to);

}  // namespace tessera::costmodel
