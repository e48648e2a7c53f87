// spec/expr.h — shape and launch expressions over named integer/real variables.
//
// A thin wrapper over muParser: the spec's flops/bytes formulas, tensor shapes,
// grid/block/shared-memory sizes and constraints are all strings evaluated here.
// Adds cdiv(a,b) (ceiling division); muParser gives min, max, sqrt, floor, ceil...
#pragma once

#include <map>
#include <string>

namespace tessera::spec {

using Bindings = std::map<std::string, double>;

// Evaluates `text` with `vars` bound. Throws std::runtime_error naming the
// expression and the unknown variable or syntax error.
double eval(const std::string& text, const Bindings& vars);

// Evaluates and requires an integer result (within 1e-9); throws otherwise.
long long eval_int(const std::string& text, const Bindings& vars);

// True when the expression is syntactically valid and uses only `vars`.
bool check(const std::string& text, const Bindings& vars, std::string* error);

}  // namespace tessera::spec
