// search/gaussian_process.h — a small Gaussian-process regressor for model-based search.
//
// Matérn 5/2 kernel with one length scale per feature, unit signal variance and a
// fixed noise term, fitted by Cholesky factorisation. Meant for the few hundred
// points a tuning run has seen; targets are expected standardised (mean 0, sd 1).
// Written here (no linear-algebra dependency) because only Cholesky, triangular
// solves and dot products are needed.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::search {

class GaussianProcess {
 public:
  // Fits to points x (each of the same dimension) and targets y. Returns false if
  // the kernel matrix is not positive definite even with jitter.
  bool fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
           const std::vector<double>& length_scales, double noise);

  // Log marginal likelihood of the last fit (for choosing length scales).
  double log_marginal_likelihood() const { return lml_; }

  // Posterior mean and variance (of the latent function) at one point.
  void predict(const std::vector<double>& at, double& mean, double& variance) const;

  // Prior correlation between two points, in [0, 1].
  double correlation(const std::vector<double>& a, const std::vector<double>& b) const;

  size_t size() const { return x_.size(); }

 private:
  std::vector<std::vector<double>> x_;
  std::vector<double> inv_scale_;  // 1 / length scale, per feature
  std::vector<double> chol_;       // lower-triangular factor, row-major n x n
  std::vector<double> alpha_;      // K^-1 y
  double lml_ = 0;
};

}  // namespace tessera::search
