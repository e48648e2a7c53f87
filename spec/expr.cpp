// spec/expr.cpp — muParser-backed evaluation of spec expressions.
#include "spec/expr.h"

#include <muParser.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

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

// A parsed expression and the variables it was set up with (muParser keeps pointers to them:
// a std::map's values stay where they are).
struct Parsed {
  mu::Parser parser;
  Bindings vars;
};

// The same names in the same order (both maps are sorted).
bool same_names(const Bindings& a, const Bindings& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first) return false;
  return true;
}

}  // namespace

// Parsers are kept per thread and expression text, and reused while the names bound stay the
// same (only their values change): a plan's expressions are evaluated for every configuration
// and shape, and with lets substituted they are long (gemm's wgmma: a parse each cost most of
// the time of its plan tests). The cache is emptied when it grows past kMaxParsed texts.
double eval(const std::string& text, const Bindings& vars) {
  constexpr size_t kMaxParsed = 512;
  thread_local std::unordered_map<std::string, std::unique_ptr<Parsed>> cache;
  auto it = cache.find(text);
  try {
    if (it == cache.end() || !same_names(it->second->vars, vars)) {
      if (cache.size() >= kMaxParsed) cache.clear();
      auto fresh = std::make_unique<Parsed>();
      fresh->vars = vars;
      setup(fresh->parser, text, fresh->vars);
      it = cache.insert_or_assign(text, std::move(fresh)).first;
    } else {
      auto v = vars.begin();
      for (auto& [_, value] : it->second->vars) value = (v++)->second;
    }
    return it->second->parser.Eval();
  } catch (mu::Parser::exception_type& e) {
    cache.erase(text);
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
