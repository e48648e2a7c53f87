// export/expr_to_c.h — a spec expression (muParser syntax, spec/expr.h) as a C++
// expression of type double, so that an exported package computes grids, shared
// memory and scratch sizes from the call's shapes with no parser at run time.
//
// The grammar is the part of muParser's that specs use, with muParser's precedence:
//   cond ? a : b  <  ||  <  &&  <  == != < > <= >=  <  + -  <  * / %  <  unary -  <  ^
// numbers, names, parentheses, and the functions cdiv, floor, ceil, mod, min, max,
// sqrt, abs, exp, ln, log2, log10, rint, sign. Comparisons and logic give 1.0 or 0.0
// as muParser does. Everything is evaluated in double, as spec::eval does.
#pragma once

#include <functional>
#include <string>

namespace tessera::exporter {

// `name` maps an identifier to the C++ expression that holds its value (a double
// variable, or a number for a parameter fixed at export); it throws for a name the
// package does not know. Throws std::runtime_error naming the expression on a
// syntax error or an unsupported function.
std::string expr_to_c(const std::string& expr, const std::function<std::string(const std::string&)>& name);

// The C++ helpers the translated expressions call (tessera_cdiv, ...), as source text
// for the generated file.
const char* expr_helpers_source();

}  // namespace tessera::exporter
