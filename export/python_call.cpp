// export/python_call.cpp — the call's inputs, outputs and symbols for the Python formats.
#include "export/python_call.h"

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <stdexcept>

#include "export/expr_to_py.h"

namespace tessera::exporter {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void require_identifier(const std::string& s, const spec::Operator& op, const char* what) {
  static const std::set<std::string> keywords = {
      "False",    "None",   "True",  "and",  "as",     "assert",   "async",   "await", "break", "class",
      "continue", "def",    "del",   "elif", "else",   "except",   "finally", "for",   "from",  "global",
      "if",       "import", "in",    "is",   "lambda", "nonlocal", "not",     "or",    "pass",  "raise",
      "return",   "try",    "while", "with", "yield",  "math",     "torch",   "self"};
  bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') && s[0] != '_';
  for (char c : s) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok || keywords.count(s))
    throw std::runtime_error(
        fmt::format("{}: {} '{}' cannot be a Python name (the torch and flashinfer formats "
                    "use the spec's names as arguments)",
                    (op.dir / "spec.json").string(), what, s));
}

}  // namespace

std::vector<std::string> PythonCall::int_arguments() const {
  std::vector<std::string> r;
  for (auto& s : symbols)
    if (!s.tensor) r.push_back(s.symbol);
  return r;
}

PythonCall python_call(const spec::Operator& op) {
  PythonCall c;
  for (auto& t : op.tensors) {
    require_identifier(t.name, op, "tensor");
    (t.output ? c.outputs : c.inputs).push_back(&t);
  }
  bool ragged = false;
  for (auto* suite : {&op.validation_shapes, &op.benchmark_shapes})
    for (auto& s : *suite) ragged = ragged || !s.seqlens.empty();
  for (auto& sym : op.symbols) {
    require_identifier(sym, op, "symbol");
    SymbolSource src{sym, nullptr, 0};
    for (auto* t : c.inputs) {
      for (size_t d = 0; d < t->shape.size() && !src.tensor; ++d)
        if (trim(t->shape[d]) == sym) src.tensor = t, src.dim = d;
      if (src.tensor) break;
    }
    c.symbols.push_back(src);
    if (ragged && (sym == "T" || sym == "NSEQ")) continue;
    std::set<long long> values;
    size_t n = 0;
    for (auto* suite : {&op.validation_shapes, &op.benchmark_shapes})
      for (auto& s : *suite) {
        spec::Bindings b = op.bindings(s);
        auto it = b.find(sym);
        if (it == b.end()) continue;
        values.insert(static_cast<long long>(it->second));
        ++n;
      }
    if (n > 1 && values.size() == 1) c.fixed[sym] = *values.begin();
  }
  return c;
}

std::string torch_dtype(spec::DType t) {
  return std::string("torch.") + spec::torch_dtype_name(t);
}

std::string flashinfer_dtype(spec::DType t) {
  if (t == spec::DType::f64)
    throw std::runtime_error(
        "FlashInfer Trace has no float64 tensors (its dtypes: float32, float16, bfloat16, "
        "float8_e4m3fn, float8_e5m2, float4_e2m1, int64, int32, int16, int8, bool)");
  return spec::torch_dtype_name(t);
}

std::string python_dim(const std::string& expr) {
  std::string py = expr_to_py(expr, [](const std::string& n) { return n; });
  // Division, math functions and comparisons give floats; a dimension is an int.
  if (py.find('/') != std::string::npos || py.find("math.") != std::string::npos ||
      py.find("1.0 if") != std::string::npos)
    return "int(" + py + ")";
  return py;
}

}  // namespace tessera::exporter
