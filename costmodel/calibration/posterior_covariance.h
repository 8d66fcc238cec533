// How sure a fit is of the coefficients it moved: the data a calibration file
// keeps (calibration_file.h) and a prediction's spread reads
// (fit/prediction_uncertainty.h); the fit that computes it is
// fit/calibration_fit.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessera::costmodel {

// The fit's posterior covariance of the fitted coefficients, in their shifted
// logs u (Gauss-Newton: (J^T J)^-1 at the fit, the prior's rows included).
// The coefficients a fit determines only together (a GEMM rate against an
// element-wise traffic factor) have large variances and a strong negative
// covariance; a prediction's spread needs the whole matrix.
struct PosteriorCovariance {
  std::vector<std::string> coefficients;  // in Calibration::Infos() order
  std::vector<double> matrix;             // row-major, size()^2
  size_t size() const { return coefficients.size(); }
  double At(size_t i, size_t j) const { return matrix[i * size() + j]; }
};

}  // namespace tessera::costmodel
