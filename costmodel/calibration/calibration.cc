#include "costmodel/calibration/calibration.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tessera::costmodel {
namespace {

// Each coefficient's name and where it lives in Calibration.
struct Field {
  const char* name;
  double Calibration::*member;
};

const Field kFields[] = {
#define TESSERA_COEFFICIENT(name, kind, default_value, min, max, unit, source) \
  {#name, &Calibration::name},
#include "costmodel/calibration/coefficients.inc"
#undef TESSERA_COEFFICIENT
};

// The index of `name` in kFields / Infos(), or -1.
int FindField(absl::string_view name) {
  for (size_t i = 0; i < std::size(kFields); ++i) {
    if (name == kFields[i].name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status UnknownName(absl::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("calibration: unknown coefficient '", name, "'"));
}

}  // namespace

const std::vector<CoefficientInfo>& Calibration::Infos() {
  static const std::vector<CoefficientInfo>* infos =
      new std::vector<CoefficientInfo>{
#define TESSERA_COEFFICIENT(name, kind, default_value, min, max, unit, source) \
  CoefficientInfo{#name, default_value, min, max, unit, source, kind},
#include "costmodel/calibration/coefficients.inc"
#undef TESSERA_COEFFICIENT
      };
  return *infos;
}

absl::StatusOr<double> Calibration::Get(absl::string_view name) const {
  const int i = FindField(name);
  if (i < 0) return UnknownName(name);
  return this->*kFields[i].member;
}

absl::Status Calibration::Set(absl::string_view name, double value) {
  const int i = FindField(name);
  if (i < 0) return UnknownName(name);
  const CoefficientInfo& info = Infos()[i];
  if (!std::isfinite(value) || value < info.min_value ||
      value > info.max_value) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration.", name, ": ", value, " is outside [",
                     info.min_value, ", ", info.max_value, "]"));
  }
  this->*kFields[i].member = value;
  return absl::OkStatus();
}

Calibration WithHardwareOf(const Calibration& from, Calibration to) {
  const std::vector<CoefficientInfo>& infos = Calibration::Infos();
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].kind == kHardware) {
      to.*kFields[i].member = from.*kFields[i].member;
    }
  }
  return to;
}

double ShiftedLogOffset(const CoefficientInfo& info) {
  if (info.min_value > 0) return 0;
  return 0.1 * (info.default_value > 0 ? info.default_value : info.max_value);
}

}  // namespace tessera::costmodel
