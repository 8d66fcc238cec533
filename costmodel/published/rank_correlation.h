// Spearman's rank correlation, for comparing how a prediction orders a set of
// layouts with how the measurements order them.
//
//   double rho = SpearmanRho(predicted, measured);  // 1: the same order
#pragma once

#include <vector>

namespace tessera::costmodel {

// Ranks of `values` (1 = smallest), ties sharing their mean rank.
std::vector<double> Ranks(const std::vector<double>& values);

// Pearson's correlation of the ranks of `a` and `b` (same length); 0 when
// either is constant or has fewer than 2 values.
double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tessera::costmodel
