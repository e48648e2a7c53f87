// export/expr_to_py.cpp — the Python dialect of the spec-expression translator
// (export/expr_translate.h).
#include "export/expr_to_py.h"

#include <cctype>

#include "export/expr_translate.h"

namespace tessera::exporter {

namespace {

// The literal as written: "128" stays an int, "1e-6" and "0.5" are floats in Python too.
std::string py_number(const std::string& s, size_t& pos) {
  size_t b = pos;
  while (pos < s.size() && (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.')) ++pos;
  if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
    size_t e = pos + 1;
    if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
    if (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) {
      pos = e;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    }
  }
  std::string t = s.substr(b, pos - b);
  if (t == "." || t.find_first_of("0123456789") == std::string::npos) return "";
  if (t.front() == '.') t = "0" + t;
  if (t.back() == '.') t += "0";
  return t;
}

const ExprDialect kPython = {
    .truth = "({} != 0)",
    .boolean = "(1.0 if {} else 0.0)",
    .ternary = "({1} if {0} else {2})",
    .logical_or = "or",
    .logical_and = "and",
    .comparison = "({} {} {})",
    .modulo = "math.fmod({}, {})",
    .power = "({} ** {})",
    .name = "{}",
    .number = py_number,
    .functions = {{"floor", "math.floor({})", 1},
                  {"ceil", "math.ceil({})", 1},
                  {"mod", "math.fmod({}, {})", 2},
                  {"sqrt", "math.sqrt({})", 1},
                  {"abs", "abs({})", 1},
                  {"exp", "math.exp({})", 1},
                  {"ln", "math.log({})", 1},
                  {"log2", "math.log2({})", 1},
                  {"log10", "math.log10({})", 1},
                  {"rint", "round({})", 1},
                  {"min", "min({})", -1},
                  {"max", "max({})", -1},
                  {"cdiv", "math.ceil({0} / {1})", 2},
                  {"sign", "(({0} > 0) - ({0} < 0))", 1}},
    .fold_variadic = false,  // Python's min and max take any number of arguments
};

}  // namespace

std::string expr_to_py(const std::string& expr, const std::function<std::string(const std::string&)>& name) {
  return translate_expr(expr, name, kPython);
}

}  // namespace tessera::exporter
