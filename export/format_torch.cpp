// export/format_torch.cpp — format torch: DIR/torch, a pip-installable package
// `tessera-<op>` (module tessera_<op>) over the C ABI library of DIR/cpp.
//
// The binding is a plain shared library built from csrc/ by setup.py at install time
// (a C++17 compiler and cuda.h; no GPU, no torch headers), loaded with ctypes: a call
// costs one dispatcher hop into Python, the checks, the allocations and one foreign
// call, and installs anywhere torch runs. The operator tessera::<op> is registered
// with torch.library (a CUDA kernel, a fake kernel for torch.compile, a CPU kernel that
// says there is no GPU). What is fixed text lives in export/templates/torch/; this file
// writes what depends on the operator: the schema, the checks, the argument structure,
// the scalars, the README's tables. For kda it adds the FLA backend (fla_kda.py).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "codegen/render.h"
#include "export/expr_to_py.h"
#include "export/package.h"
#include "export/python_call.h"
#include "export/templates.h"

namespace tessera::exporter {

namespace fs = std::filesystem;

namespace {

// (codegen's reader, which names the file when it cannot read it)
std::string read_file(const fs::path& p) {
  return codegen::read_file(p.string());
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string shape_text(const spec::Tensor& t) {
  return "[" + join(t.shape, ", ") + "]";
}

// The shape of `t` as a Python tuple over the symbols.
std::string py_shape(const spec::Tensor& t) {
  std::vector<std::string> dims;
  for (auto& e : t.shape) dims.push_back(python_dim(e));
  return "(" + join(dims, ", ") + (dims.size() == 1 ? ",)" : ")");
}

struct TorchCode {
  std::string params, args, schema, symbol_list, symbol_tuple, symbol_params, checks, device_checks, alloc, ret,
      fields_py, args_fields, set_symbols, scalars, fixed;
};

std::string checks_of(const spec::Operator& op, const PythonCall& c) {
  std::string out;
  for (auto* t : c.inputs) {
    out += fmt::format(
        "    if {0}.dtype != {1}:\n        _fail(TypeError, \"{0} must be {1} (spec: {2}), got \" + str({0}.dtype))\n",
        t->name, torch_dtype(t->dtype), spec::dtype_name(t->dtype));
    out += fmt::format(
        "    if {0}.dim() != {1}:\n        _fail(ValueError, \"{0} must have {1} dimension{2} {3}, got shape \" + "
        "str(tuple({0}.shape)))\n",
        t->name, t->shape.size(), t->shape.size() == 1 ? "" : "s", shape_text(*t));
  }
  for (auto& s : c.symbols)
    if (s.tensor) out += fmt::format("    {} = {}.shape[{}]\n", s.symbol, s.tensor->name, s.dim);
  std::vector<std::string> named;
  for (auto& s : c.symbols) named.push_back(s.symbol + " = \" + str(" + s.symbol + ") + \"");
  std::string sym_text = join(named, ", ");
  for (auto* t : c.inputs)
    out += fmt::format(
        "    if {0}.shape != {1}:\n        _fail(ValueError, \"{0} has shape \" + str(tuple({0}.shape)) + \", "
        "expected {2} with {3}\")\n",
        t->name, py_shape(*t), shape_text(*t), sym_text);
  for (auto* t : c.inputs)
    out += fmt::format(
        "    if not {0}.is_contiguous():\n        _fail(ValueError, \"{0} must be contiguous (call "
        ".contiguous() on it)\")\n",
        t->name);
  for (auto& [sym, v] : c.fixed)
    out += fmt::format(
        "    if {0} != {1}:\n        _fail(ValueError, \"{0} = \" + str({0}) + \": the kernels were built "
        "and checked for {0} = {1} only (every shape of targets/{2}/spec.json)\")\n",
        sym, v, op.name);
  return out;
}

TorchCode torch_code(const ExportPackage& p, const PythonCall& c) {
  const spec::Operator& op = *p.op;
  const std::string n = c_name(op.name);
  TorchCode k;
  std::vector<std::string> params, schema_args, syms, outs;
  for (auto* t : c.inputs) params.push_back(t->name), schema_args.push_back("Tensor " + t->name);
  for (auto& s : c.int_arguments()) params.push_back(s), schema_args.push_back("int " + s);
  for (auto& s : c.symbols) syms.push_back(s.symbol);
  for (auto* t : c.outputs) outs.push_back(t->name);
  if (c.outputs.empty()) throw std::runtime_error("operator " + op.name + " has no output tensor");
  k.params = k.args = join(params, ", ");
  k.schema = fmt::format(
      "{}({}) -> {}", n, join(schema_args, ", "),
      c.outputs.size() == 1 ? "Tensor" : "(" + join(std::vector<std::string>(c.outputs.size(), "Tensor"), ", ") + ")");
  k.symbol_list = join(syms, ", ");
  k.symbol_tuple = syms.size() == 1 ? syms[0] + "," : join(syms, ", ");
  k.symbol_params = k.symbol_list;
  k.checks = checks_of(op, c);
  for (size_t i = 1; i < c.inputs.size(); ++i)
    k.device_checks += fmt::format(
        "    if {0}.device != _dev:\n        _fail(ValueError, \"{0} is on \" + str({0}.device) + "
        "\" and {1} on \" + str(_dev) + \": every tensor on one CUDA device\")\n",
        c.inputs[i]->name, c.inputs[0]->name);
  for (auto* t : c.outputs)
    k.alloc +=
        fmt::format("    {} = torch.empty({}, dtype={}, device=_dev)\n", t->name, py_shape(*t), torch_dtype(t->dtype));
  k.ret = c.outputs.size() == 1 ? outs[0] : join(outs, ", ");
  std::vector<std::string> fields;
  for (auto& t : op.tensors) {
    k.fields_py += fmt::format("        (\"{}\", ctypes.c_uint64),\n", t.name);
    fields.push_back(t.name + ".data_ptr()");
  }
  for (auto& s : op.symbols) {
    k.fields_py += fmt::format("        (\"{}\", ctypes.c_longlong),\n", s);
    fields.push_back(s);
    k.set_symbols += fmt::format("    a.{0} = {0}\n", s);
  }
  k.args_fields = join(fields, ", ");
  auto name = [&](const std::string& id) -> std::string {
    for (auto& s : op.symbols)
      if (s == id) return id;
    for (auto& sc : op.scalars)
      if (sc.name == id) return "_r[\"" + id + "\"]";
    throw std::runtime_error(fmt::format("{}: a scalar's expression names '{}', which is no symbol or earlier scalar",
                                         (op.dir / "spec.json").string(), id));
  };
  for (auto& sc : op.scalars) k.scalars += fmt::format("    _r[\"{}\"] = {}\n", sc.name, expr_to_py(sc.expr, name));
  std::vector<std::string> fixed;
  for (auto& [s, v] : c.fixed) fixed.push_back(fmt::format("\"{}\": {}", s, v));
  k.fixed = "{" + join(fixed, ", ") + "}";
  return k;
}

// The README's example: inputs made with torch.randn / zeros at the first benchmark shape.
std::string example(const spec::Operator& op, const PythonCall& c) {
  const spec::Shape* s = !op.benchmark_shapes.empty()
                             ? &op.benchmark_shapes[0]
                             : (!op.validation_shapes.empty() ? &op.validation_shapes[0] : nullptr);
  if (!s) return "";
  spec::Bindings b = op.bindings(*s);
  std::string out;
  std::vector<std::string> names;
  for (auto* t : c.inputs) {
    std::vector<std::string> dims;
    for (auto& e : t->shape) dims.push_back(std::to_string(spec::eval_int(e, b)));
    std::string shape = "(" + join(dims, ", ") + (dims.size() == 1 ? ",)" : ")");
    if (t->init.dist == "cu_seqlens") {
      std::vector<std::string> cum = {"0"};
      long long acc = 0;
      for (auto l : s->seqlens) cum.push_back(std::to_string(acc += l));
      out += fmt::format("{} = torch.tensor([{}], dtype={}, device=\"cuda\")\n", t->name, join(cum, ", "),
                         torch_dtype(t->dtype));
    } else if (t->dtype == spec::DType::i32 || t->dtype == spec::DType::i64) {
      out += fmt::format("{} = torch.zeros({}, dtype={}, device=\"cuda\")\n", t->name, shape, torch_dtype(t->dtype));
    } else {
      out += fmt::format("{} = torch.randn({}, device=\"cuda\").to({})\n", t->name, shape, torch_dtype(t->dtype));
    }
    names.push_back(t->name);
  }
  std::vector<std::string> outs;
  for (auto* t : c.outputs) outs.push_back(t->name);
  out += fmt::format("{} = tessera_{}.{}({})   # on torch.cuda.current_stream()", join(outs, ", "), c_name(op.name),
                     c_name(op.name), join(names, ", "));
  return out;
}

std::string readme_tables(const spec::Operator& op, const PythonCall& c, std::string* scalars, std::string* fixed) {
  std::string rows;
  for (auto& t : op.tensors)
    rows += fmt::format("| `{}` | {} | {} | `{}` |\n", t.name, t.output ? "output" : "input", torch_dtype(t.dtype),
                        shape_text(t));
  if (!rows.empty()) rows.pop_back();
  *scalars = "";
  if (!op.scalars.empty()) {
    std::vector<std::string> v;
    for (auto& s : op.scalars) v.push_back("`" + s.name + " = " + s.expr + "`");
    *scalars =
        "The spec's scalars are fixed in the kernels, computed from the symbols as the spec does: " + join(v, ", ") +
        " (`tessera_" + c_name(op.name) + ".scalars(...)` gives their values).\n";
  }
  *fixed = "";
  if (!c.fixed.empty()) {
    std::vector<std::string> v;
    for (auto& [s, x] : c.fixed) v.push_back(fmt::format("{} = {}", s, x));
    *fixed = "Every shape of the spec has " + join(v, ", ") +
             ": the kernels were built and checked there only, and the operator refuses other values.\n";
  }
  return rows;
}

std::string fla_section(const std::string& n) {
  if (n != "kda") return "";
  return R"(## FLA

With FLA installed (`flash-linear-attention`), importing `tessera_kda` registers a backend
with FLA's registry for `fla.ops.kda.chunk_kda`: in `torch.inference_mode()`, a call with
`use_gate_in_kernel`, `use_qk_l2norm_in_kernel`, `use_beta_sigmoid_in_kernel`,
`safe_gate=True`, `lower_bound=-5`, `state_v_first=True`, `A_log` and `dt_bias`, bf16
inputs and K = V = 128 runs tessera's kernel; anything else (gradients, other head sizes,
GVA, dtypes, layouts) goes to FLA's own kernels. `tessera_kda.fla_kda.CALLS` counts the
calls served, FLA logs `[FLA Backend] chunk_kda.chunk_kda -> tessera` at the first, and
`FLA_TESSERA=0` turns the backend off. See `tessera_kda/fla_kda.py`.
)";
}

// DIR/cpp's header and source (write_cpp's): written first when they are not there.
void ensure_cpp(const ExportPackage& p, const fs::path& out, fs::path* header, fs::path* source) {
  const std::string n = c_name(p.op->name);
  *header = out / "cpp" / "include" / ("tessera_" + n + ".h");
  *source = out / "cpp" / "src" / ("tessera_" + n + ".cpp");
  if (!fs::exists(*header) || !fs::exists(*source)) write_cpp(p, out);
}

// DIR/torch/csrc (write_cpp's header and source) and the package's copy of DIR/manifest.json.
void copy_cpp_and_manifest(const ExportPackage& p, const fs::path& out, const fs::path& dir, const std::string& n) {
  fs::path header, source;
  ensure_cpp(p, out, &header, &source);
  write_text(dir / "csrc" / header.filename(), read_file(header));
  write_text(dir / "csrc" / source.filename(), read_file(source));
  if (!fs::exists(out / "manifest.json")) write_manifest(p, out);
  write_text(dir / ("tessera_" + n) / "manifest.json", read_file(out / "manifest.json"));
}

// The values of the package's templates (pyproject.toml, setup.py, README.md, __init__.py).
std::map<std::string, std::string> package_values(const ExportPackage& p, const PythonCall& call, const TorchCode& k) {
  const spec::Operator& op = *p.op;
  const std::string n = c_name(op.name);
  std::vector<std::string> cands, inputs, outputs;
  for (auto& c : p.candidates) cands.push_back(c.name);
  for (auto* t : call.inputs) inputs.push_back(t->name);
  for (auto* t : call.outputs) outputs.push_back(t->name);
  std::string dist = n;
  for (auto& ch : dist)
    if (ch == '_') ch = '-';
  std::string scalars_text, fixed_text;
  std::string tensors = readme_tables(op, call, &scalars_text, &fixed_text);
  std::vector<std::string> set_args;
  for (auto& s : op.symbols) set_args.push_back(s);
  return {
      {"OP", op.name},
      {"CNAME", n},
      {"DIST", dist},
      {"VERSION", fmt::format("1.0.{}+{}", p.candidates[0].id, join(cands, "."))},
      {"COMMIT", p.tessera_commit},
      {"CREATED", p.created},
      {"CANDIDATES", join(cands, ", ")},
      {"ARCHS", join(p.archs, ", ")},
      {"DESCRIPTION", op.description},
      {"EXAMPLE", example(op, call)},
      {"TENSORS", tensors},
      {"SCALARS", scalars_text},
      {"FIXED", fixed_text},
      {"FLA", fla_section(n)},
      {"INPUTS", join(inputs, ", ")},
      {"OUTPUTS", outputs.size() == 1 ? outputs[0] : "(" + join(outputs, ", ") + ")"},
      {"SYMBOL_PARAMS", k.symbol_params},
      {"SYMBOL_ARGS", join(set_args, ", ")},
      {"FLA_IMPORT",
       n == "kda" ? "\nfrom . import fla_kda  # noqa: E402,F401  (FLA's chunk_kda backend, when FLA is installed)\n"
                  : ""},
  };
}

// pkg/_library.py and pkg/_op.py, adding the operator's code to `v` (which fla_kda.py then uses).
void write_library_and_op(const fs::path& pkg, const PythonCall& call, const TorchCode& k,
                          std::map<std::string, std::string>& v) {
  v["FIELDS"] = k.fields_py.empty() ? "" : k.fields_py.substr(0, k.fields_py.size() - 1);
  v["SET_SYMBOLS"] = k.set_symbols.empty() ? "    pass" : k.set_symbols.substr(0, k.set_symbols.size() - 1);
  write_text(pkg / "_library.py", fill_template("torch/package/_library.py", v));

  auto strip = [](std::string s) {
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  };
  v["SCHEMA"] = k.schema;
  v["FIXED"] = k.fixed;
  v["SCALARS"] = k.scalars.empty() ? "    pass" : strip(k.scalars);
  v["PARAMS"] = k.params;
  v["ARGS"] = k.args;
  v["SYMBOL_LIST"] = k.symbol_list;
  v["SYMBOL_TUPLE"] = k.symbol_tuple;
  v["CHECKS"] = strip(k.checks);
  v["FIRST"] = call.inputs.at(0)->name;
  v["DEVICE_CHECKS"] = strip(k.device_checks);
  v["ALLOC_OUTPUTS"] = strip(k.alloc);
  v["ARGS_FIELDS"] = k.args_fields;
  v["RETURN"] = k.ret;
  write_text(pkg / "_op.py", fill_template("torch/package/_op.py", v));
}

// pkg/fla_kda.py (kda only): the FLA backend, with the spec's lower_bound and fixed symbols.
void write_fla_kda(const fs::path& pkg, const spec::Operator& op, const PythonCall& call,
                   std::map<std::string, std::string>& v) {
  std::string fixed;
  for (auto& [s, x] : call.fixed) fixed += (fixed.empty() ? "" : ", ") + fmt::format("{} = {}", s, x);
  std::string lb = "?";
  for (auto& sc : op.scalars)
    if (sc.name == "lower_bound") lb = sc.expr;
  v["LOWER_BOUND"] = lb;
  v["FIXED_TEXT"] = fixed.empty() ? "any" : fixed;
  write_text(pkg / "fla_kda.py", fill_template("torch/package/fla_kda.py", v));
}

}  // namespace

void write_torch(const ExportPackage& p, const fs::path& out) {
  if (!p.op || p.candidates.empty()) throw std::runtime_error("write_torch: an empty package");
  const spec::Operator& op = *p.op;
  const std::string n = c_name(op.name);
  PythonCall call = python_call(op);
  TorchCode k = torch_code(p, call);
  fs::path dir = out / "torch";
  copy_cpp_and_manifest(p, out, dir, n);

  std::map<std::string, std::string> v = package_values(p, call, k);
  write_text(dir / "pyproject.toml", fill_template("torch/pyproject.toml", v));
  write_text(dir / "setup.py", fill_template("torch/setup.py", v));
  write_text(dir / "README.md", fill_template("torch/README.md", v));
  fs::path pkg = dir / ("tessera_" + n);
  write_text(pkg / "__init__.py", fill_template("torch/package/__init__.py", v));

  write_library_and_op(pkg, call, k, v);
  if (n == "kda") write_fla_kda(pkg, op, call, v);
}

}  // namespace tessera::exporter
