// export/expr_to_c.cpp — the C++ dialect of the spec-expression translator
// (export/expr_translate.h), and the helpers its translations call.
#include "export/expr_to_c.h"

#include <fmt/format.h>

#include <cstdlib>

#include "export/expr_translate.h"

namespace tessera::exporter {

namespace {

// The literal's value as a double literal: "128" -> "128.0", "1e-6" -> "1e-06".
std::string c_number(const std::string& s, size_t& pos) {
  const char* start = s.c_str() + pos;
  char* end = nullptr;
  double v = std::strtod(start, &end);
  if (end == start) return "";
  pos += static_cast<size_t>(end - start);
  std::string t = fmt::format("{}", v);
  if (t.find_first_of(".en") == std::string::npos) t += ".0";
  return t;
}

const ExprDialect kC = {
    .truth = "({} != 0.0)",
    .boolean = "({} ? 1.0 : 0.0)",
    .ternary = "({0} ? {1} : {2})",
    .logical_or = "||",
    .logical_and = "&&",
    .comparison = "{} {} {}",
    .modulo = "std::fmod({}, {})",
    .power = "std::pow({}, {})",
    .name = "({})",
    .number = c_number,
    .functions = {{"cdiv", "tessera_cdiv({}, {})", 2},
                  {"floor", "std::floor({})", 1},
                  {"ceil", "std::ceil({})", 1},
                  {"mod", "std::fmod({}, {})", 2},
                  {"sqrt", "std::sqrt({})", 1},
                  {"abs", "std::fabs({})", 1},
                  {"exp", "std::exp({})", 1},
                  {"ln", "std::log({})", 1},
                  {"log2", "std::log2({})", 1},
                  {"log10", "std::log10({})", 1},
                  {"rint", "std::rint({})", 1},
                  {"sign", "tessera_sign({})", 1},
                  {"min", "tessera_min({}, {})", -1},
                  {"max", "tessera_max({}, {})", -1}},
    .fold_variadic = true,  // min/max are variadic in muParser: the helpers take two
};

}  // namespace

std::string expr_to_c(const std::string& expr, const std::function<std::string(const std::string&)>& name) {
  return translate_expr(expr, name, kC);
}

const char* expr_helpers_source() {
  // (shipped code, formatted by hand: clang-format would format the raw string as C++)
  // clang-format off
  return R"CPP(static inline double tessera_cdiv(double a, double b) { return std::ceil(a / b); }
static inline double tessera_min(double a, double b) { return a < b ? a : b; }
static inline double tessera_max(double a, double b) { return a > b ? a : b; }
static inline double tessera_sign(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0; }
)CPP";
  // clang-format on
}

}  // namespace tessera::exporter
