// search/gaussian_process.cpp — Matérn 5/2 Gaussian process: fit, likelihood, prediction.
#include "search/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tessera::search {
namespace {

double matern52(double r) {
  double s = std::sqrt(5.0) * r;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

// In-place Cholesky of a row-major n x n matrix (lower triangle). False if not PD.
bool cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double* rj = &a[j * n];
    double d = rj[j];
    for (size_t k = 0; k < j; ++k) d -= rj[k] * rj[k];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    rj[j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double* ri = &a[i * n];
      double s = ri[j];
      for (size_t k = 0; k < j; ++k) s -= ri[k] * rj[k];
      ri[j] = s / d;
    }
  }
  return true;
}

// Solves L z = b in place (L lower, row-major n x n).
void forward(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    const double* ri = &l[i * n];
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= ri[k] * b[k];
    b[i] = s / ri[i];
  }
}

// Solves L^T z = b in place.
void backward(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

}  // namespace

double GaussianProcess::correlation(const std::vector<double>& a, const std::vector<double>& b) const {
  double r2 = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    double d = (a[k] - b[k]) * inv_scale_[k];
    r2 += d * d;
  }
  return matern52(std::sqrt(r2));
}

bool GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                          const std::vector<double>& length_scales, double noise) {
  x_ = x;
  inv_scale_.clear();
  for (double l : length_scales) inv_scale_.push_back(1.0 / l);
  size_t n = x.size();
  std::vector<double> k(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) k[i * n + j] = k[j * n + i] = correlation(x[i], x[j]);
  bool ok = false;
  for (double jitter = noise; jitter < 1.0 && !ok; jitter *= 10) {
    chol_ = k;
    for (size_t i = 0; i < n; ++i) chol_[i * n + i] += jitter;
    ok = cholesky(chol_, n);
  }
  if (!ok) return false;
  alpha_ = y;
  forward(chol_, n, alpha_);
  double fit_term = 0;
  for (double v : alpha_) fit_term += v * v;
  backward(chol_, n, alpha_);
  double log_det = 0;
  for (size_t i = 0; i < n; ++i) log_det += std::log(chol_[i * n + i]);
  lml_ = -0.5 * fit_term - log_det - 0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
  return true;
}

void GaussianProcess::predict(const std::vector<double>& at, double& mean, double& variance) const {
  size_t n = x_.size();
  std::vector<double> ks(n);
  mean = 0;
  for (size_t i = 0; i < n; ++i) {
    ks[i] = correlation(at, x_[i]);
    mean += ks[i] * alpha_[i];
  }
  forward(chol_, n, ks);
  double explained = 0;
  for (double v : ks) explained += v * v;
  variance = std::max(1e-12, 1.0 - explained);
}

}  // namespace tessera::search
