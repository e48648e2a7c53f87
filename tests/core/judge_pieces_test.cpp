// tests/core/judge_pieces_test.cpp — the judge's small named pieces that need no GPU:
// the stopping rules of a shape's timing (the relative standard error, and the entropy
// plateau on synthetic sample streams), the L2 flush's names, and the settings a worker
// is sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>

#include "evaluator/l2_flush.h"
#include "evaluator/stopping_rule.h"
#include "evaluator/worker.h"

using namespace tessera::evaluator;

TEST(StoppingRule, StopsOnTightSamplesCapsAndTime) {
  StoppingRule r{10, 200, 0.01, 1.0};
  std::vector<double> tight(10, 1.0), loose;
  for (int i = 0; i < 50; ++i) loose.push_back(i % 2 ? 1.0 : 2.0);
  EXPECT_FALSE(r.enough(std::vector<double>(9, 1.0), nullptr, 9)) << "fewer than min_samples";
  EXPECT_TRUE(r.enough(tight, nullptr, 10));
  EXPECT_FALSE(r.enough(tight, &loose, 10)) << "a baseline timed beside it must be tight too";
  EXPECT_TRUE(r.enough(tight, &tight, 10));
  EXPECT_FALSE(r.enough(loose, nullptr, 50));
  EXPECT_TRUE(r.enough(std::vector<double>(200, 1.0), &loose, 200)) << "max_samples kept";
  EXPECT_TRUE(r.enough(loose, nullptr, 800)) << "four times max_samples taken (batches set aside)";
  EXPECT_FALSE(r.out_of_time(1.0));
  EXPECT_TRUE(r.out_of_time(1.01));
}

TEST(L2Flush, NamesRoundTripAndUnknownOnesAreRefused) {
  for (L2Flush f : {L2Flush::write, L2Flush::read}) EXPECT_EQ(parse_l2_flush(l2_flush_name(f)), f);
  EXPECT_STREQ(l2_flush_name(L2Flush::write), "write");
  try {
    parse_l2_flush("memset");
    FAIL() << "an unknown flush was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected write or read"), std::string::npos) << e.what();
  }
}

namespace {

// A synthetic stream of sample times (ms): sample(i) for i = 0, 1, ...
using Stream = std::function<double(int)>;

// Normally distributed about `mean` with a standard deviation of `relative_sd` times it.
Stream gaussian(double mean, double relative_sd, unsigned seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  auto dist = std::make_shared<std::normal_distribution<double>>(mean, relative_sd * mean);
  return [rng, dist](int) { return (*dist)(*rng); };
}

// The number of kept samples at which `rule` first says enough, fed as the judge feeds
// it (batches of ten; candidate and, when given, baseline side by side); -1 if never
// within `limit` samples.
int stops_at(const StoppingRule& rule, const Stream& cand, const Stream* base = nullptr, int limit = 1000) {
  std::vector<double> cs, bs;
  for (int i = 0; i < limit;) {
    for (int r = 0; r < 10; ++r, ++i) {
      cs.push_back(cand(i));
      if (base) bs.push_back((*base)(i));
    }
    if (rule.enough(cs, base ? &bs : nullptr, i)) return i;
  }
  return -1;
}

StoppingRule plateau_rule() {
  StoppingRule r;
  r.criterion = StoppingCriterion::plateau;
  return r;
}

}  // namespace

TEST(StoppingRule, TheDefaultIsTheRelativeStandardError) {
  StoppingRule r;
  EXPECT_EQ(r.criterion, StoppingCriterion::rse);
  EXPECT_EQ(JudgeSettings{}.stopping_rule, StoppingCriterion::rse);
  // A stream the RSE rule takes at once (20 samples, RSE ~0.4 %) but whose entropy is
  // still rising: which rule is asked must show.
  std::vector<double> spread;
  for (int i = 0; i < 20; ++i) spread.push_back(1.0 + 0.01 * (i % 10));
  EXPECT_TRUE(r.enough(spread, nullptr, 20));
  EXPECT_FALSE(plateau_rule().enough(spread, nullptr, 20)) << "fewer than a window of samples";
}

TEST(StoppingRule, EntropyTraceCountsBinsOnALogScale) {
  PlateauRule p;
  auto h = p.entropy_trace({1.0, 1.0, 2.0, 2.0, 1.0005, 4.0});
  ASSERT_EQ(h.size(), 6u);
  EXPECT_DOUBLE_EQ(h[0], 0.0);
  EXPECT_DOUBLE_EQ(h[1], 0.0) << "one value, one bin";
  EXPECT_NEAR(h[2], -(1 / 3.0) * std::log2(1 / 3.0) - (2 / 3.0) * std::log2(2 / 3.0), 1e-12);
  EXPECT_NEAR(h[3], 1.0, 1e-12) << "two values, half each";
  EXPECT_NEAR(h[4], -(3 / 5.0) * std::log2(3 / 5.0) - (2 / 5.0) * std::log2(2 / 5.0), 1e-12)
      << "1.0005 is within 0.5 % of 1.0: the same bin";
  EXPECT_GT(h[5], h[4]) << "a new bin raises the entropy";
  // Scale-free: the same stream in other units has the same trace.
  auto scaled = p.entropy_trace({1e-3, 1e-3, 2e-3, 2e-3, 1.0005e-3, 4e-3});
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(scaled[i], h[i], 1e-12) << i;
}

TEST(StoppingRule, PlateauStopsASteadyStream) {
  StoppingRule r = plateau_rule();
  EXPECT_EQ(stops_at(r, [](int) { return 0.25; }), r.plateau.window) << "a constant stream: once a window is seen";
  int quiet = stops_at(r, gaussian(0.25, 0.002, 1));
  EXPECT_GE(quiet, r.plateau.window);
  EXPECT_LT(quiet, r.max_samples) << "a quiet stream stops before its cap";
}

TEST(StoppingRule, PlateauRunsADriftingStreamToItsCap) {
  StoppingRule r = plateau_rule();
  // 0.05 % slower per sample (10 % over 200): the samples keep reaching new bins.
  auto noise = gaussian(1.0, 0.002, 3);
  Stream drift = [noise](int i) { return 0.25 * (1 + 0.0005 * i) * noise(i); };
  EXPECT_EQ(stops_at(r, drift), r.max_samples) << "only the sample cap ends it";
  r.max_samples = 2000;
  EXPECT_EQ(stops_at(r, drift, nullptr, 1000), -1) << "nor within 1000 samples under a higher cap";
  // The same drift in the baseline holds a steady candidate back too.
  r.max_samples = 200;
  Stream steady = [](int) { return 0.1; };
  EXPECT_EQ(stops_at(r, steady, &drift), r.max_samples);
  EXPECT_EQ(stops_at(r, steady, &steady), r.plateau.window);
  // The time cap ends it whatever the samples say.
  EXPECT_TRUE(r.out_of_time(r.max_seconds + 0.01));
}

TEST(StoppingRule, PlateauStopsANoisyStreamLaterThanAQuietOne) {
  StoppingRule r = plateau_rule();
  r.max_samples = 1000;
  std::vector<int> quiet, noisy;
  for (unsigned seed = 1; seed <= 11; ++seed) {
    quiet.push_back(stops_at(r, gaussian(0.25, 0.002, seed)));
    noisy.push_back(stops_at(r, gaussian(0.25, 0.04, 100 + seed)));
  }
  for (int n : quiet) EXPECT_GT(n, 0);
  for (int n : noisy) EXPECT_GT(n, 0) << "a noisy but stationary stream levels off too";
  std::sort(quiet.begin(), quiet.end());
  std::sort(noisy.begin(), noisy.end());
  EXPECT_LT(quiet[5], noisy[5]) << "median samples to stop: quiet " << quiet[5] << ", noisy " << noisy[5];
}

TEST(StoppingRule, CriterionNamesRoundTripAndUnknownOnesAreRefused) {
  for (StoppingCriterion c : {StoppingCriterion::rse, StoppingCriterion::plateau})
    EXPECT_EQ(parse_stopping_criterion(stopping_criterion_name(c)), c);
  EXPECT_STREQ(stopping_criterion_name(StoppingCriterion::plateau), "plateau");
  for (const char* word : {"entropy", "RSE", ""}) {
    try {
      parse_stopping_criterion(word);
      FAIL() << "'" << word << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("expected rse or plateau"), std::string::npos) << e.what();
    }
  }
}

TEST(StoppingRule, TheWorkerIsToldWhichRuleAndOlderRequestsMeanRse) {
  JudgeSettings js;
  EXPECT_EQ(settings_json(js).at("stopping_rule"), "rse");
  js.stopping_rule = StoppingCriterion::plateau;
  EXPECT_EQ(settings_from_json(settings_json(js)).stopping_rule, StoppingCriterion::plateau);
  nlohmann::json older = settings_json(js);
  older.erase("stopping_rule");
  EXPECT_EQ(settings_from_json(older).stopping_rule, StoppingCriterion::rse);
}
