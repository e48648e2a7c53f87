// export/expr_to_py.h — a spec expression (muParser syntax, spec/expr.h) as a Python
// expression, for the torch and flashinfer packages: their shape checks, output
// shapes and scalars are computed from the call's symbols with no parser at run time.
//
// The grammar and precedence are those of export/expr_to_c.h (the part of muParser's
// that specs use). Integer literals stay Python ints and + - * keep ints as ints, so a
// shape such as "NSEQ+1" is an int (or a torch SymInt while torch.compile traces);
// "/" is true division as in muParser. Comparisons and logic give 1.0 or 0.0. The
// functions map onto Python's math module; the text needs `import math` only.
#pragma once

#include <functional>
#include <string>

namespace tessera::exporter {

// `name` maps an identifier to the Python expression that holds its value; it throws
// for a name the package does not know. Throws std::runtime_error naming the
// expression on a syntax error or a function Python has no counterpart for.
std::string expr_to_py(const std::string& expr, const std::function<std::string(const std::string&)>& name);

}  // namespace tessera::exporter
