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
