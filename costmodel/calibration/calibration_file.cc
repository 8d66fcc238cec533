#include "costmodel/calibration/calibration_file.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::costmodel {
namespace {

using Json = nlohmann::json;

constexpr char kFormat[] = "tessera-calibration/1";

absl::Status Error(absl::string_view source, absl::string_view field,
                   absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", field, ": ", what));
}

Json ErrorJson(const QuantityError& e) {
  return {{"samples", e.samples},
          {"prior", e.prior_mape},
          {"fitted", e.fitted_mape}};
}

// fit.posterior_covariance: known coefficients, a square symmetric matrix
// of finite numbers with a positive diagonal.
absl::StatusOr<PosteriorCovariance> ReadCovariance(const Json& o,
                                                   absl::string_view source) {
  constexpr char kField[] = "fit.posterior_covariance";
  if (!o.is_object() || !o.contains("coefficients") ||
      !o["coefficients"].is_array() || !o.contains("matrix") ||
      !o["matrix"].is_array()) {
    return Error(source, kField, "must be {\"coefficients\": [...], "
                                 "\"matrix\": [[...], ...]}");
  }
  PosteriorCovariance cov;
  for (const Json& name : o["coefficients"]) {
    if (!name.is_string() || !Calibration{}.Get(name.get<std::string>()).ok()) {
      return Error(source, absl::StrCat(kField, ".coefficients"),
                   absl::StrCat("unknown coefficient ", name.dump()));
    }
    cov.coefficients.push_back(name.get<std::string>());
  }
  const size_t n = cov.size();
  const Json& rows = o["matrix"];
  if (rows.size() != n) {
    return Error(source, absl::StrCat(kField, ".matrix"),
                 absl::StrCat("must have ", n, " rows, one per coefficient"));
  }
  cov.matrix.assign(n * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!rows[i].is_array() || rows[i].size() != n) {
      return Error(source, absl::StrCat(kField, ".matrix[", i, "]"),
                   absl::StrCat("must have ", n, " numbers"));
    }
    for (size_t j = 0; j < n; ++j) {
      if (!rows[i][j].is_number() ||
          !std::isfinite(rows[i][j].get<double>())) {
        return Error(source, absl::StrCat(kField, ".matrix[", i, "][", j, "]"),
                     "must be a finite number");
      }
      cov.matrix[i * n + j] = rows[i][j].get<double>();
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!(cov.At(i, i) > 0)) {
      return Error(source, absl::StrCat(kField, ".matrix[", i, "][", i, "]"),
                   "a variance must be positive");
    }
    for (size_t j = 0; j < i; ++j) {
      if (std::abs(cov.At(i, j) - cov.At(j, i)) >
          1e-9 * std::sqrt(cov.At(i, i) * cov.At(j, j))) {
        return Error(source, absl::StrCat(kField, ".matrix"),
                     absl::StrCat("must be symmetric (rows ", j, " and ", i,
                                  " differ)"));
      }
    }
  }
  return cov;
}

absl::StatusOr<QuantityError> ReadError(const Json& o, absl::string_view source,
                                        const std::string& field) {
  QuantityError e;
  if (!o.is_object() || !o.contains("prior") || !o.contains("fitted") ||
      !o["prior"].is_number() || !o["fitted"].is_number()) {
    return Error(source, field, "must be {samples, prior, fitted}");
  }
  e.samples = o.value("samples", int64_t{0});
  e.prior_mape = o["prior"].get<double>();
  e.fitted_mape = o["fitted"].get<double>();
  return e;
}

std::vector<std::string> Strings(const Json& o, const char* key) {
  std::vector<std::string> out;
  if (o.contains(key) && o[key].is_array()) {
    for (const Json& v : o[key]) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

}  // namespace

std::string CalibrationFileJson(const CalibrationFile& f) {
  Json coefficients = Json::object();
  for (const CoefficientInfo& info : Calibration::Infos()) {
    Json c = {{"value", *f.calibration.Get(info.name)},
              {"prior", *f.prior.Get(info.name)},
              {"fitted", std::find(f.fitted.begin(), f.fitted.end(),
                                   info.name) != f.fitted.end()},
              {"unit", info.unit},
              {"kind", info.kind == kHardware ? "hardware" : "stack"},
              {"source", info.source}};
    auto sd = f.posterior_log_sd.find(info.name);
    if (sd != f.posterior_log_sd.end()) c["posterior_log_sd"] = sd->second;
    coefficients[info.name] = c;
  }
  Json fit = {{"samples", f.samples},
              {"prior_log_sd", f.prior_log_sd},
              {"step_time_mape", ErrorJson(f.step_time)},
              {"at_bound", f.at_bound},
              {"warnings", f.warnings}};
  if (f.posterior_covariance.size() > 0) {
    const PosteriorCovariance& cov = f.posterior_covariance;
    Json rows = Json::array();
    for (size_t i = 0; i < cov.size(); ++i) {
      Json row = Json::array();
      for (size_t j = 0; j < cov.size(); ++j) row.push_back(cov.At(i, j));
      rows.push_back(std::move(row));
    }
    fit["posterior_covariance"] = {{"coefficients", cov.coefficients},
                                   {"matrix", std::move(rows)}};
  }
  if (f.peak_memory) fit["peak_memory_mape"] = ErrorJson(*f.peak_memory);
  if (f.watts) fit["watts_mape"] = ErrorJson(*f.watts);
  Json collectives = Json::array();
  if (f.calibration.collectives != nullptr) {
    for (const CollectiveMeasurement& m :
         f.calibration.collectives->measurements()) {
      collectives.push_back({{"collective", CollectiveOpName(m.op)},
                             {"nodes", m.nodes},
                             {"gpus_per_node", m.gpus_per_node},
                             {"bytes", m.bytes},
                             {"busbw_gbs", m.busbw_gbs}});
    }
  }
  const Json out = {{"format", kFormat},
                    {"stack", f.stack},
                    {"stack_options", f.stack_options},
                    {"gpu", f.gpu},
                    {"architecture", f.architecture},
                    {"coefficients", coefficients},
                    {"fit", fit},
                    {"fitted_from", f.fitted_from},
                    {"collectives", collectives}};
  return out.dump(2) + "\n";
}

absl::StatusOr<CalibrationFile> ParseCalibrationFile(absl::string_view text,
                                                     absl::string_view source) {
  const Json o = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded() || !o.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a JSON object"));
  }
  if (o.value("format", "") != kFormat) {
    return Error(source, "format", absl::StrCat("must be \"", kFormat, "\""));
  }
  CalibrationFile f;
  for (const char* key : {"stack", "gpu", "architecture"}) {
    if (!o.contains(key) || !o[key].is_string()) {
      return Error(source, key, "required: a string");
    }
  }
  f.stack = o["stack"].get<std::string>();
  f.gpu = o["gpu"].get<std::string>();
  f.architecture = o["architecture"].get<std::string>();
  f.stack_options = Strings(o, "stack_options");
  f.fitted_from = Strings(o, "fitted_from");
  if (!o.contains("coefficients") || !o["coefficients"].is_object()) {
    return Error(source, "coefficients", "required: an object");
  }
  for (const auto& [name, c] : o["coefficients"].items()) {
    const std::string field = absl::StrCat("coefficients.", name);
    if (!Calibration{}.Get(name).ok()) {
      return Error(source, field, "unknown coefficient");
    }
    if (!c.is_object() || !c.contains("value") || !c["value"].is_number()) {
      return Error(source, field, "must be an object with a numeric value");
    }
    if (absl::Status s = f.calibration.Set(name, c["value"].get<double>());
        !s.ok()) {
      return Error(source, absl::StrCat(field, ".value"), s.message());
    }
    if (c.contains("prior") && c["prior"].is_number()) {
      if (absl::Status s = f.prior.Set(name, c["prior"].get<double>());
          !s.ok()) {
        return Error(source, absl::StrCat(field, ".prior"), s.message());
      }
    }
    if (c.value("fitted", false)) f.fitted.push_back(name);
    if (c.contains("posterior_log_sd") && c["posterior_log_sd"].is_number()) {
      f.posterior_log_sd[name] = c["posterior_log_sd"].get<double>();
    }
  }
  if (o.contains("fit") && o["fit"].is_object()) {
    const Json& fit = o["fit"];
    f.samples = fit.value("samples", int64_t{0});
    if (fit.contains("prior_log_sd")) {
      if (!fit["prior_log_sd"].is_number() ||
          !(fit["prior_log_sd"].get<double>() >= 0)) {
        return Error(source, "fit.prior_log_sd", "must be a number >= 0");
      }
      f.prior_log_sd = fit["prior_log_sd"].get<double>();
    }
    if (fit.contains("step_time_mape")) {
      TESSERA_ASSIGN_OR_RETURN(
          f.step_time,
          ReadError(fit["step_time_mape"], source, "fit.step_time_mape"));
    }
    if (fit.contains("peak_memory_mape")) {
      TESSERA_ASSIGN_OR_RETURN(f.peak_memory,
                               ReadError(fit["peak_memory_mape"], source,
                                         "fit.peak_memory_mape"));
    }
    if (fit.contains("watts_mape")) {
      TESSERA_ASSIGN_OR_RETURN(
          f.watts, ReadError(fit["watts_mape"], source, "fit.watts_mape"));
    }
    if (fit.contains("posterior_covariance")) {
      TESSERA_ASSIGN_OR_RETURN(
          f.posterior_covariance,
          ReadCovariance(fit["posterior_covariance"], source));
    }
    f.at_bound = Strings(fit, "at_bound");
    f.warnings = Strings(fit, "warnings");
  }
  if (o.contains("collectives")) {
    if (!o["collectives"].is_array()) {
      return Error(source, "collectives", "must be a list");
    }
    std::vector<CollectiveMeasurement> measured;
    for (size_t i = 0; i < o["collectives"].size(); ++i) {
      const Json& c = o["collectives"][i];
      const std::string field = absl::StrCat("collectives[", i, "]");
      if (!c.is_object() || !c.contains("collective") ||
          !c["collective"].is_string()) {
        return Error(source, field, "must name its collective");
      }
      absl::StatusOr<CollectiveOp> op =
          ParseCollectiveOp(c["collective"].get<std::string>());
      if (!op.ok()) return Error(source, field, op.status().message());
      CollectiveMeasurement m;
      m.op = *op;
      m.nodes = c.value("nodes", int64_t{0});
      m.gpus_per_node = c.value("gpus_per_node", int64_t{0});
      m.bytes = c.value("bytes", 0.0);
      m.busbw_gbs = c.value("busbw_gbs", 0.0);
      if (m.nodes < 1 || m.gpus_per_node < 1 || !(m.bytes > 0) ||
          !(m.busbw_gbs > 0) || !std::isfinite(m.busbw_gbs)) {
        return Error(source, field,
                     "needs positive nodes, gpus_per_node, bytes and "
                     "busbw_gbs");
      }
      measured.push_back(m);
    }
    if (!measured.empty()) {
      f.calibration.collectives =
          std::make_shared<MeasuredCollectives>(std::move(measured));
      f.prior.collectives = f.calibration.collectives;
    }
  }
  return f;
}

absl::StatusOr<CalibrationFile> ReadCalibrationFile(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseCalibrationFile(text, path);
}

}  // namespace tessera::costmodel
