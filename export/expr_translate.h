// export/expr_translate.h — the recursive-descent parser behind expr_to_c and
// expr_to_py: it reads a spec expression (the grammar of export/expr_to_c.h) and writes
// it in a target language, as an ExprDialect says that language writes each construct.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tessera::exporter {

// A spec function as the target language writes it: `format` is an fmt format string
// over the arguments ({0}, {1}). Arity -1 is variadic (min, max): see fold_variadic.
struct ExprFunction {
  const char* name;
  const char* format;
  int arity;
};

// How a target language writes what the translations differ in. Each `const char*`
// other than the two operators is an fmt format string over the parts named beside it.
struct ExprDialect {
  const char* truth;        // {0}: a value, as a condition (non-zero)
  const char* boolean;      // {0}: a condition, as the value 1.0 or 0.0
  const char* ternary;      // {0}: the condition (already a truth), {1}: then, {2}: else
  const char* logical_or;   // the operator between two truths
  const char* logical_and;  // the operator between two truths
  const char* comparison;   // {0} {1} {2}: left, operator, right (then made a boolean)
  const char* modulo;       // {0} % {1}
  const char* power;        // {0} ^ {1}
  const char* name;         // {0}: the text `name` gives for an identifier
  // The numeric literal at s[pos]: moves pos past what it reads and gives the
  // literal's text, or "" where s[pos] starts no number.
  std::string (*number)(const std::string& s, size_t& pos);
  std::vector<ExprFunction> functions;
  // A variadic call with more than one argument: true folds f(a, b, c) into
  // f(f(a, b), c) through a two-argument format and writes a lone argument as itself;
  // false writes the arguments joined by ", " as the format's {0}.
  bool fold_variadic;
};

// `expr` in `dialect`; `name` maps an identifier to the text that holds its value.
// Throws std::runtime_error naming the expression on a syntax error, an unknown
// function or a wrong number of arguments.
std::string translate_expr(const std::string& expr, const std::function<std::string(const std::string&)>& name,
                           const ExprDialect& dialect);

}  // namespace tessera::exporter
