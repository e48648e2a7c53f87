// tests/core/expr_test.cpp — shape and launch expressions.
#include "spec/expr.h"

#include <gtest/gtest.h>

using namespace tessera::spec;

TEST(Expr, ArithmeticOverSymbols) {
  Bindings b{{"M", 4096}, {"N", 8192}};
  EXPECT_DOUBLE_EQ(eval("2*M*N*2 + 2*N", b), 2.0 * 4096 * 8192 * 2 + 2 * 8192);
  EXPECT_EQ(eval_int("cdiv(M, 3)", b), 1366);
  EXPECT_EQ(eval_int("min(M, N)", b), 4096);
  EXPECT_EQ(eval_int("max(M, N)", b), 8192);
}

TEST(Expr, ModuloAndComparisons) {
  Bindings b{{"THREADS", 256}, {"ROWS", 4}};
  EXPECT_EQ(eval("THREADS % (ROWS * 32) == 0", b), 1);
  EXPECT_EQ(eval("THREADS % (ROWS * 48) == 0", b), 0);
  EXPECT_EQ(eval("ROWS <= 4 && THREADS >= 128", b), 1);
  EXPECT_EQ(eval("ROWS > 4 || THREADS < 128", b), 0);
  EXPECT_NEAR(eval("1/sqrt(K)", {{"K", 128}}), 0.08838834764831845, 1e-15);
}

TEST(Expr, ErrorsNameTheExpression) {
  try {
    eval("M * Q", {{"M", 1}});
    FAIL() << "unknown variable accepted";
  } catch (std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("M * Q"), std::string::npos) << e.what();
  }
  EXPECT_THROW(eval_int("M / 3", {{"M", 10}}), std::runtime_error);  // not an integer
  EXPECT_THROW(eval("M *", {{"M", 1}}), std::runtime_error);
  std::string err;
  EXPECT_FALSE(check("foo(1)", {}, &err));
  EXPECT_FALSE(err.empty());
}

// eval keeps a parsed expression per text (spec/expr.cpp): the same text evaluated again takes
// the new values, under other names (or names added) it is set up again, an unknown name stays
// an error on every call, and many texts (past the cache's size) still evaluate.
TEST(Expr, ReusedTextsTakeEachCallsValuesAndNames) {
  const std::string e = "A*10 + B";
  EXPECT_EQ(eval_int(e, {{"A", 1}, {"B", 2}}), 12);
  EXPECT_EQ(eval_int(e, {{"A", 3}, {"B", 4}}), 34);
  EXPECT_EQ(eval_int(e, {{"A", 5}, {"B", 6}, {"C", 100}}), 56);  // another set of names
  EXPECT_EQ(eval_int(e, {{"A", 7}, {"B", 8}}), 78);
  EXPECT_THROW(eval(e, {{"A", 1}, {"X", 2}}), std::runtime_error);  // B unbound
  EXPECT_THROW(eval(e, {{"A", 1}, {"X", 2}}), std::runtime_error);  // and again
  EXPECT_EQ(eval_int(e, {{"A", 0}, {"B", 9}}), 9);
  for (int i = 0; i < 1200; ++i) ASSERT_EQ(eval_int("A + " + std::to_string(i), {{"A", 1}}), i + 1);
  EXPECT_EQ(eval_int(e, {{"A", 2}, {"B", 1}}), 21);
}
