// spec/expr.cpp — muParser-backed evaluation of spec expressions.
#include "spec/expr.h"

#include <muParser.h>

#include <cmath>
#include <stdexcept>

namespace tessera::spec {
namespace {

double cdiv(double a, double b) {
  return std::ceil(a / b);
}
double floor_(double a) {
  return std::floor(a);
}
double ceil_(double a) {
  return std::ceil(a);
}
double mod(double a, double b) {
  return std::fmod(a, b);
}

void setup(mu::Parser& p, const std::string& text, Bindings& vars) {
  p.DefineFun("cdiv", cdiv);
  p.DefineFun("floor", floor_);
  p.DefineFun("ceil", ceil_);
  p.DefineFun("mod", mod);
  p.DefineOprt("%", mod, mu::prMUL_DIV);
  for (auto& [name, value] : vars) p.DefineVar(name, &value);
  p.SetExpr(text);
}

}  // namespace

double eval(const std::string& text, const Bindings& vars) {
  Bindings copy = vars;
  mu::Parser p;
  try {
    setup(p, text, copy);
    return p.Eval();
  } catch (mu::Parser::exception_type& e) {
    throw std::runtime_error("expression '" + text + "': " + e.GetMsg());
  }
}

long long eval_int(const std::string& text, const Bindings& vars) {
  double v = eval(text, vars);
  double r = std::round(v);
  if (!std::isfinite(v) || std::fabs(v - r) > 1e-9)
    throw std::runtime_error("expression '" + text + "' gave " + std::to_string(v) + ", expected an integer");
  return static_cast<long long>(r);
}

bool check(const std::string& text, const Bindings& vars, std::string* error) {
  try {
    eval(text, vars);
    return true;
  } catch (std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

}  // namespace tessera::spec
