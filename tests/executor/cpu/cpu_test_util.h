// Helpers for the CPU backend's tests: seeded random data, central finite
// differences, and element-wise comparison with the first mismatch named.
//
//   std::vector<double> x = RandomVector<double>(n, /*seed=*/1);
//   std::vector<double> fd = CentralDifferences(x, [&] { return Loss(x); });
//   ExpectAllNear(analytic, fd, /*abs_tol=*/1e-9, /*rel_tol=*/1e-7, "dx");
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::cpu_test {

// n values uniform in [lo, hi), the same for the same seed.
template <typename T>
std::vector<T> RandomVector(int64_t n, uint32_t seed, double lo = -1.0,
                            double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(dist(gen));
  return v;
}

// n integers uniform in [lo, hi].
inline std::vector<int32_t> RandomInts(int64_t n, uint32_t seed, int32_t lo,
                                       int32_t hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = dist(gen);
  return v;
}

template <typename To, typename From>
std::vector<To> Cast(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// d loss / d x[i] by central differences (error O(h^2) + O(eps/h)); `loss`
// reads x, which is perturbed in place and restored.
inline std::vector<double> CentralDifferences(
    std::vector<double>& x, const std::function<double()>& loss,
    double h = 1e-6) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = loss();
    x[i] = saved - h;
    const double minus = loss();
    x[i] = saved;
    grad[i] = (plus - minus) / (2 * h);
  }
  return grad;
}

// sum_i w[i] * y[i]: the scalar whose gradient with respect to y is w.
inline double Dot(const std::vector<double>& w, const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * y[i];
  return s;
}

// Expects |actual - expected| <= abs_tol + rel_tol |expected| element-wise
// (and equal sizes); reports the count and the worst element.
template <typename A, typename E>
void ExpectAllNear(const std::vector<A>& actual, const std::vector<E>& expected,
                   double abs_tol, double rel_tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    const double tol = abs_tol + rel_tol * std::abs(e);
    const double err = std::abs(a - e);
    const bool ok = err <= tol || (std::isinf(e) && a == e);
    if (!ok) ++bad;
    const double excess = std::isnan(err) ? INFINITY : err - tol;
    if (!ok && excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << actual.size()
                     << " elements off; worst [" << worst
                     << "] = " << (bad ? double(actual[worst]) : 0.0)
                     << ", expected " << (bad ? double(expected[worst]) : 0.0);
}

template <typename A, typename E>
void ExpectAllNear(const std::vector<A>& actual, const std::vector<E>& expected,
                   double abs_tol, double rel_tol,
                   const testing::Message& what) {
  ExpectAllNear(actual, expected, abs_tol, rel_tol, what.GetString());
}

}  // namespace tessera::executor::cpu_test
