// search/strategy_bayes.cpp — Bayesian optimisation with a Gaussian-process surrogate.
//
// After a few random configurations, a Gaussian process models log(cost) over the
// parameters' positions in their value lists (so 16, 32, 64 are evenly spaced
// steps). Each round proposes the unseen configurations of highest expected
// improvement; a batch is spread out by damping the improvement expected near a
// configuration already chosen for it. Failed configurations are modelled as
// costly as the worst success, so the model learns to avoid their region.
// Length scales (one per parameter) are refitted by marginal likelihood every few
// rounds. To bound the work per round in large spaces, the model trains on the
// best kMaxTrain points and scores a random sample of candidates plus every
// unseen neighbour of the best configurations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <set>

#include "search/gaussian_process.h"
#include "search/neighbourhood.h"
#include "search/prior.h"
#include "search/strategy_makers.h"

namespace tessera::search {
namespace {

constexpr size_t kBatch = 4;
constexpr size_t kMaxTrain = 100;
constexpr size_t kMaxCandidates = 600;
constexpr size_t kNeighbourhoodOf = 5;  // best configurations whose neighbours are always scored
constexpr int kRefitEvery = 4;          // rounds between length-scale fits
constexpr double kNoise = 1e-3;
constexpr double kXi = 0.01;  // exploration margin of expected improvement

double normal_pdf(double z) {
  return std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
}
double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::numbers::sqrt2);
}

// y ≈ a + b q(x), q the prior's rank quantile (its mean where it has none), least
// squares over the training set; 0 without a prior or when q does not vary. The
// slope is never negative: a warm start's first trials are the other GPU's best,
// quantiles 0-0.002 on pnpoly, and a line fitted over so narrow a range is noise
// that, extrapolated to q = 1, took configurations that failed on the other GPU
// for the best (4 of the 3090 -> Titan pair's first 4 proposals, all failing here).
// A negative slope would say that the other GPU's worst are best here, which is
// no transfer: it is read as no information (b = 0).
class PriorMean {
 public:
  PriorMean(const Prior* prior, const std::vector<const Trial*>& trials, const std::vector<double>& y) : prior_(prior) {
    if (!prior_) return;
    std::vector<double> q;
    for (const Trial* tr : trials) q.push_back(prior_->quantile(tr->config));
    double known = 0, sum = 0;
    for (double v : q)
      if (!std::isnan(v)) sum += v, ++known;
    fill_ = known > 0 ? sum / known : 0.5;
    for (double& v : q)
      if (std::isnan(v)) v = fill_;
    double mq = 0, my = 0;
    for (size_t i = 0; i < q.size(); ++i) mq += q[i] / q.size(), my += y[i] / q.size();
    double cov = 0, var = 0;
    for (size_t i = 0; i < q.size(); ++i) cov += (q[i] - mq) * (y[i] - my), var += (q[i] - mq) * (q[i] - mq);
    if (var <= 1e-12 || cov <= 0) return;
    b_ = cov / var;
    a_ = my - b_ * mq;
  }
  double operator()(const Config& c) const {
    if (!prior_ || b_ == 0) return 0;
    double q = prior_->quantile(c);
    return a_ + b_ * (std::isnan(q) ? fill_ : q);
  }

 private:
  const Prior* prior_;
  double a_ = 0, b_ = 0, fill_ = 0.5;
};

class BayesOpt final : public Strategy {
 public:
  std::string name() const override { return "bayes"; }

  void run(Tuning& t, uint64_t seed) override {
    Rng rng(seed);
    const Space& space = t.space();
    size_t varying = 0;
    for (auto& p : space.params()) varying += p.values.size() > 1;
    // A run that continues another one (portfolio) trains on its history and only
    // tops the random start up to `initial`. With a warm start there is no random
    // start: the prior mean already ranks the space, which is what random points
    // are for (on gemm 2080 Ti -> 3090 they were 14 of the first 22 evaluations,
    // at 0.11-0.58 of the optimum); a run of its own starts at the prior's best.
    size_t initial = std::max<size_t>(8, 2 * varying);
    std::vector<Config> first;
    if (t.prior()) {
      if (t.evals() == 0) first = t.prior()->ranked(t.batch_width(8));
    } else {
      for (size_t i = std::min(initial, t.evals()); i < initial; ++i)
        if (auto c = random_unseen(t, rng); c && std::find(first.begin(), first.end(), *c) == first.end())
          first.push_back(*c);
    }
    t.evaluate(first);
    std::vector<double> scales(space.dims(), 0.3);
    for (int round = 0; !t.exhausted(); ++round) {
      std::vector<Config> batch = propose(t, rng, scales, round % kRefitEvery == 0);
      if (batch.empty()) {
        auto fresh = random_unseen(t, rng);
        if (!fresh) return;
        batch.push_back(*fresh);
      }
      t.evaluate(batch);
    }
  }

 private:
  static std::vector<double> features(const Space& space, const Config& c) {
    std::vector<double> f(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      size_t n = space.params()[i].values.size();
      f[i] = n > 1 ? static_cast<double>(c[i]) / static_cast<double>(n - 1) : 0.0;
    }
    return f;
  }

  // Coordinate search over log length scales, starting from the current ones.
  static void fit_scales(GaussianProcess& gp, const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                         std::vector<double>& scales) {
    auto lml = [&](const std::vector<double>& s) {
      return gp.fit(x, y, s, kNoise) ? gp.log_marginal_likelihood() : -std::numeric_limits<double>::infinity();
    };
    double best = -std::numeric_limits<double>::infinity();
    for (double iso : {0.1, 0.2, 0.35, 0.6, 1.0, 2.0}) {  // a common scale first
      std::vector<double> s(scales.size(), iso);
      if (double v = lml(s); v > best) {
        best = v;
        scales = s;
      }
    }
    for (size_t k = 0; k < scales.size(); ++k)
      for (double factor : {0.5, 2.0, 4.0}) {
        std::vector<double> s = scales;
        s[k] = std::clamp(s[k] * factor, 0.05, 20.0);
        if (double v = lml(s); v > best) {
          best = v;
          scales = s;
        }
      }
  }

  std::vector<Config> propose(Tuning& t, Rng& rng, std::vector<double>& scales, bool refit) {
    const Space& space = t.space();
    // Training set: log cost, failures as the worst success.
    std::vector<const Trial*> trials;
    double worst = -std::numeric_limits<double>::infinity();
    for (auto& tr : t.history()) {
      trials.push_back(&tr);
      if (tr.outcome.ok) worst = std::max(worst, std::log(tr.outcome.cost));
    }
    if (!std::isfinite(worst)) return {};  // nothing has worked yet: keep sampling at random
    auto target = [&](const Trial* tr) { return tr->outcome.ok ? std::log(tr->outcome.cost) : worst; };
    std::stable_sort(trials.begin(), trials.end(),
                     [&](const Trial* a, const Trial* b) { return target(a) < target(b); });
    if (trials.size() > kMaxTrain) trials.resize(kMaxTrain);
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const Trial* tr : trials) {
      x.push_back(features(space, tr->config));
      y.push_back(target(tr));
    }
    double mean = 0, var = 0;
    for (double v : y) mean += v;
    mean /= static_cast<double>(y.size());
    for (double v : y) var += (v - mean) * (v - mean);
    double sd = std::sqrt(var / static_cast<double>(y.size()));
    if (!(sd > 0)) sd = 1;
    for (double& v : y) v = (v - mean) / sd;
    double best_y = *std::min_element(y.begin(), y.end());

    // A warm start (Tuning::prior) is the model's prior mean: a line in the other
    // GPU's rank quantile, fitted to the history; the process models what it misses.
    PriorMean prior_mean(t.prior(), trials, y);
    std::vector<double> residual = y;
    for (size_t i = 0; i < y.size(); ++i) residual[i] -= prior_mean(trials[i]->config);

    GaussianProcess gp;
    if (refit) fit_scales(gp, x, residual, scales);
    if (!gp.fit(x, residual, scales, kNoise)) return {};

    std::vector<Config> cands = candidates(t, rng, trials);
    std::vector<std::vector<double>> cx;
    std::vector<double> ei;
    for (const Config& c : cands) {
      cx.push_back(features(space, c));
      double mu, v;
      gp.predict(cx.back(), mu, v);
      mu += prior_mean(c);
      double s = std::sqrt(v);
      double gain = best_y - mu - kXi;
      double z = gain / s;
      ei.push_back(std::max(0.0, gain * normal_cdf(z) + s * normal_pdf(z)));
    }
    std::vector<Config> batch;
    for (size_t q = 0; q < t.batch_width(kBatch) && q < cands.size(); ++q) {
      size_t at = static_cast<size_t>(std::max_element(ei.begin(), ei.end()) - ei.begin());
      if (ei[at] < 0) break;
      batch.push_back(cands[at]);
      for (size_t j = 0; j < cands.size(); ++j)
        if (ei[j] >= 0) ei[j] *= 1.0 - gp.correlation(cx[j], cx[at]);
      ei[at] = -1;  // taken
    }
    return batch;
  }

  // Unseen valid configurations to score: all of them in a small space; otherwise
  // a random sample plus the unseen neighbours of the best trials.
  static std::vector<Config> candidates(const Tuning& t, Rng& rng, const std::vector<const Trial*>& best_first) {
    const auto& all = t.space().valid_configs();
    std::vector<const Config*> unseen;
    for (const Config& c : all)
      if (!t.seen(c)) unseen.push_back(&c);
    std::vector<Config> out;
    if (unseen.size() <= kMaxCandidates) {
      for (const Config* c : unseen) out.push_back(*c);
      return out;
    }
    std::set<Config> chosen;
    for (size_t i = 0; i < kMaxCandidates; ++i) {
      size_t j = i + pick(rng, unseen.size() - i);
      std::swap(unseen[i], unseen[j]);
      chosen.insert(*unseen[i]);
    }
    size_t tops = 0;
    for (const Trial* tr : best_first) {
      if (!tr->outcome.ok) continue;
      for (auto& n : neighbours(t.space(), tr->config, Neighbourhood::hamming))
        if (!t.seen(n)) chosen.insert(n);
      if (++tops >= kNeighbourhoodOf) break;
    }
    return {chosen.begin(), chosen.end()};
  }
};

}  // namespace

std::unique_ptr<Strategy> make_bayes_opt() {
  return std::make_unique<BayesOpt>();
}

}  // namespace tessera::search
