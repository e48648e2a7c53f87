// export/python_call.h — an operator's call as the Python formats (torch, flashinfer)
// present it: inputs then outputs in spec order, where each shape symbol of a call
// comes from, the symbols every spec shape fixes, and dtype names.
//
// A symbol comes from the first input whose shape has an entry that is exactly that
// symbol (rmsnorm: M from x[0], N from x[1]; kda: T, H, K from q, V from v, NSEQ from
// h0); a symbol no input shape names that way becomes an int argument of the call.
// A symbol that every validation and benchmark shape of the spec gives the same value
// (kda: K = V = 128) is "fixed": the kernels were built and checked there only, so
// calls with another value are refused. Symbols derived from seqlens (T, NSEQ) are
// never fixed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace tessera::exporter {

struct SymbolSource {
  std::string symbol;
  const spec::Tensor* tensor = nullptr;  // nullptr: an int argument of the call
  size_t dim = 0;
};

struct PythonCall {
  std::vector<const spec::Tensor*> inputs, outputs;
  std::vector<SymbolSource> symbols;               // in spec order
  std::map<std::string, long long> fixed;          // symbol -> the only value the spec's shapes give it
  std::vector<std::string> int_arguments() const;  // symbols no input shape names (call arguments)
};

// Throws std::runtime_error when a tensor or symbol name is not a Python identifier
// (or is a keyword), naming it and the spec.
PythonCall python_call(const spec::Operator& op);

// "torch.bfloat16", ...
std::string torch_dtype(spec::DType t);
// FlashInfer Trace's names: "bfloat16", "float32", "int64", ...; throws for f64, which
// the format has not.
std::string flashinfer_dtype(spec::DType t);
// A shape entry as a Python int expression over the symbols (names as they are).
std::string python_dim(const std::string& expr);

}  // namespace tessera::exporter
