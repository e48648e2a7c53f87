// tests/core/judge_pieces_test.cpp — the judge's small named pieces that need no GPU:
// the stopping rule of a shape's timing and the L2 flush's names.
#include <gtest/gtest.h>

#include <stdexcept>

#include "evaluator/l2_flush.h"
#include "evaluator/stopping_rule.h"

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
