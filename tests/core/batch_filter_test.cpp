// tests/core/batch_filter_test.cpp — which timing batches the judge keeps.
#include "evaluator/batch_filter.h"

#include <gtest/gtest.h>

using tessera::evaluator::select_batches;

namespace {
std::vector<double> batch(double ms) {
  return std::vector<double>(10, ms);
}
}  // namespace

TEST(BatchFilter, SetsAsideBatchesTakenWhileTheBaselineRanSlow) {
  // The shape of the H200 episodes: candidate +50 us and baseline +60 us per launch
  // for a while, then back.
  std::vector<std::vector<double>> cand = {batch(0.100), batch(0.101), batch(0.052), batch(0.051), batch(0.052)};
  std::vector<std::vector<double>> base = {batch(0.175), batch(0.172), batch(0.112), batch(0.111), batch(0.112)};
  auto sel = select_batches(cand, base, 0, 0.05);
  EXPECT_EQ(sel.total, 5);
  EXPECT_EQ(sel.kept, 3);
  EXPECT_DOUBLE_EQ(sel.reference_ms, 0.111);
  ASSERT_EQ(sel.candidate_ms.size(), 30u);
  ASSERT_EQ(sel.baseline_ms.size(), 30u);
  for (double x : sel.candidate_ms) EXPECT_LT(x, 0.06);
  EXPECT_TRUE(sel.prior_met);
}

TEST(BatchFilter, KeepsEveryBatchOfASteadyMachine) {
  std::vector<std::vector<double>> cand = {batch(0.052), batch(0.051), batch(0.053)};
  std::vector<std::vector<double>> base = {batch(0.112), batch(0.114), batch(0.111)};
  auto sel = select_batches(cand, base, 0, 0.05);
  EXPECT_EQ(sel.kept, 3);
  EXPECT_EQ(sel.candidate_ms.size(), 30u);
}

TEST(BatchFilter, APriorRevealsAWholeRunTakenWhileDisturbed) {
  std::vector<std::vector<double>> cand = {batch(0.100), batch(0.101)};
  std::vector<std::vector<double>> base = {batch(0.175), batch(0.172)};
  // Without a prior every batch looks alike and is kept...
  EXPECT_EQ(select_batches(cand, base, 0, 0.05).kept, 2);
  // ...with the baseline's usual 0.112 ms none qualifies: the judge keeps waiting,
  // and if it must stop, all batches are kept and the reference is what was seen.
  auto sel = select_batches(cand, base, 0.112, 0.05);
  EXPECT_FALSE(sel.prior_met);
  EXPECT_EQ(sel.kept, 2);
  EXPECT_DOUBLE_EQ(sel.reference_ms, 0.172);
  // Once a batch comes back, only it counts.
  cand.push_back(batch(0.052));
  base.push_back(batch(0.113));
  sel = select_batches(cand, base, 0.112, 0.05);
  EXPECT_TRUE(sel.prior_met);
  EXPECT_EQ(sel.kept, 1);
  EXPECT_DOUBLE_EQ(sel.reference_ms, 0.112);
}

TEST(BatchFilter, APriorAboveWhatIsMeasuredIsNotTheReference) {
  std::vector<std::vector<double>> cand = {batch(0.052), batch(0.060)};
  std::vector<std::vector<double>> base = {batch(0.100), batch(0.104)};
  auto sel = select_batches(cand, base, 0.130, 0.05);
  EXPECT_DOUBLE_EQ(sel.reference_ms, 0.100);
  EXPECT_EQ(sel.kept, 2);
}

TEST(BatchFilter, UsesTheBatchMedianNotItsWorstSample) {
  auto noisy = batch(0.112);
  noisy[3] = 0.5;  // one late sample does not make a batch disturbed
  auto sel = select_batches({batch(0.05), batch(0.05)}, {batch(0.112), noisy}, 0, 0.05);
  EXPECT_EQ(sel.kept, 2);
  EXPECT_THROW(select_batches({batch(0.05)}, {}, 0, 0.05), std::invalid_argument);
}
