// export/format_flashinfer.cpp — format flashinfer: DIR/flashinfer, a FlashInfer Trace
// folder that `flashinfer-bench run --local DIR/flashinfer` evaluates (flashinfer-bench
// 0.1.2's format):
//
//   definitions/<op>/<def>.json   axes, inputs and outputs in spec order, the reference
//   workloads/<op>/<def>.jsonl    one workload per benchmark shape
//   blob/workloads/<op>/<def>/    safetensors of the inputs random data would break (cu_seqlens)
//   solutions/<op>/<sol>.json     CUDA, binding torch, destination-passing
//
// Axes: a shape entry that is a symbol is that axis; any other entry (kda's "NSEQ+1")
// is an axis of its own, "<tensor>_len" or "<tensor>_dim<i>", with a constraint saying
// what it equals. A symbol that every spec shape gives one value is a const axis (kda:
// K = V = 128), the others var. The reference is the operator's math in Python:
// targets/<op>/reference.py (reference(inputs..., *, scalars...)), wrapped into the
// `run(inputs...)` the format calls, the scalars computed from the axes as the spec
// does. The Solution's sources: the binding (export/templates/flashinfer/binding.cpp,
// filled here), DIR/cpp's header and source (kernel images embedded), and the
// kernels' CUDA sources with the headers they include, named .cuh so that the builder
// compiles only the binding and the library.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "codegen/render.h"
#include "export/expr_to_c.h"
#include "export/expr_to_py.h"
#include "export/package.h"
#include "export/python_call.h"
#include "export/templates.h"

namespace tessera::exporter {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// (codegen's reader, which names the file when it cannot read it)
std::string read_file(const fs::path& p) {
  return codegen::read_file(p.string());
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

bool is_symbol(const spec::Operator& op, const std::string& e) {
  for (auto& s : op.symbols)
    if (s == trim(e)) return true;
  return false;
}

// The axis name of dimension `d` of tensor `t`.
std::string axis_of(const spec::Operator& op, const spec::Tensor& t, size_t d) {
  if (is_symbol(op, t.shape[d])) return trim(t.shape[d]);
  return t.shape.size() == 1 ? t.name + "_len" : fmt::format("{}_dim{}", t.name, d);
}

struct Layout {
  std::string definition;  // the definition's name
  ojson axes = ojson::object();
  std::vector<std::string> constraints;
};

Layout layout(const spec::Operator& op, const PythonCall& c) {
  Layout l;
  l.definition = op.name;
  for (auto& [s, v] : c.fixed) l.definition += fmt::format("_{}{}", s, v);
  for (auto& ch : l.definition) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (auto& s : op.symbols) {
    auto f = c.fixed.find(s);
    if (f != c.fixed.end())
      l.axes[s] = {{"type", "const"},
                   {"value", f->second},
                   {"description", fmt::format("every shape of tessera's spec has {} = {}: the kernel is built for it",
                                               s, f->second)}};
    else
      l.axes[s] = {{"type", "var"}};
  }
  for (auto& t : op.tensors)
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (is_symbol(op, t.shape[d])) continue;
      std::string a = axis_of(op, t, d);
      if (l.axes.contains(a)) continue;
      l.axes[a] = {{"type", "var"}, {"description", fmt::format("{} (dimension {} of {})", t.shape[d], d, t.name)}};
      l.constraints.push_back(a + " == " + expr_to_py(t.shape[d], [](const std::string& n) { return n; }));
    }
  for (auto& t : op.tensors)
    if (!t.output && t.init.dist == "cu_seqlens") {
      if (is_symbol(op, "T")) l.constraints.push_back("T == " + t.name + "[-1].item()");
      l.constraints.push_back(t.name + "[0].item() == 0");
    }
  return l;
}

ojson tensor_specs(const spec::Operator& op, const std::vector<const spec::Tensor*>& ts) {
  ojson out = ojson::object();
  for (auto* t : ts) {
    ojson shape = ojson::array();
    for (size_t d = 0; d < t->shape.size(); ++d) shape.push_back(axis_of(op, *t, d));
    out[t->name] = {{"shape", shape},
                    {"dtype", flashinfer_dtype(t->dtype)},
                    {"description", fmt::format("{} {} [{}] in tessera's spec", t->output ? "output" : "input",
                                                spec::dtype_name(t->dtype), join(t->shape, ", "))}};
  }
  return out;
}

// The definition's `reference`: the scalars, targets/<op>/reference.py, and run(inputs...).
std::string python_reference(const spec::Operator& op, const PythonCall& c) {
  fs::path file = op.dir / "reference.py";
  if (!fs::exists(file))
    throw std::runtime_error(
        fmt::format("format flashinfer needs the operator's math in Python: {} (a function "
                    "reference(inputs..., *, scalars...) returning the outputs) is missing",
                    file.string()));
  std::vector<std::string> syms, inputs, kw;
  for (auto& s : op.symbols) syms.push_back(s);
  for (auto* t : c.inputs) inputs.push_back(t->name);
  for (auto& sc : op.scalars) kw.push_back(fmt::format("{0}=_s[\"{0}\"]", sc.name));
  std::string scalars;
  auto name = [&](const std::string& id) -> std::string {
    for (auto& s : op.symbols)
      if (s == id) return id;
    for (auto& sc : op.scalars)
      if (sc.name == id) return "_r[\"" + id + "\"]";
    throw std::runtime_error("a scalar's expression names '" + id + "', which is no symbol or earlier scalar");
  };
  for (auto& sc : op.scalars) scalars += fmt::format("    _r[\"{}\"] = {}\n", sc.name, expr_to_py(sc.expr, name));
  std::string reads;
  for (auto& s : c.symbols)
    reads += s.tensor ? fmt::format("    {} = {}.shape[{}]\n", s.symbol, s.tensor->name, s.dim)
                      : fmt::format("    {} = None  # not in any input's shape\n", s.symbol);
  return fmt::format(R"(import math

import torch


# The spec's scalars, fixed in tessera's kernels, as targets/{0}/spec.json computes them.
def _scalars({1}):
    _r = {{}}
{2}    return _r


{3}

@torch.no_grad()
def run({4}):
{5}    _s = _scalars({1})
    return reference({4}{6})
)",
                     op.name, join(syms, ", "), scalars.empty() ? "    pass\n" : scalars, read_file(file),
                     join(inputs, ", "), reads, kw.empty() ? "" : ", " + join(kw, ", "));
}

// safetensors: an 8-byte header length, the JSON header, the little-endian data.
std::string safetensors_i64(const std::string& key, const std::vector<long long>& values, const char* dtype) {
  std::string data;
  bool i32 = std::string(dtype) == "I32";
  for (long long v : values) {
    uint64_t u = static_cast<uint64_t>(v);
    for (int b = 0; b < (i32 ? 4 : 8); ++b) data += static_cast<char>((u >> (8 * b)) & 0xff);
  }
  nlohmann::json h = {{key, {{"dtype", dtype}, {"shape", {values.size()}}, {"data_offsets", {0, data.size()}}}}};
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::string out;
  uint64_t n = header.size();
  for (int b = 0; b < 8; ++b) out += static_cast<char>((n >> (8 * b)) & 0xff);
  return out + header + data;
}

std::string uuid_of(const std::string& text) {  // a stable UUID-shaped name (FNV-1a, twice)
  uint64_t a = 1469598103934665603ull, b = 1099511628211ull ^ 0x9e3779b97f4a7c15ull;
  for (unsigned char ch : text) a = (a ^ ch) * 1099511628211ull, b = (b ^ ch) * 1469598103934665603ull;
  std::string h = fmt::format("{:016x}{:016x}", a, b);
  return fmt::format("{}-{}-{}-{}-{}", h.substr(0, 8), h.substr(8, 4), h.substr(12, 4), h.substr(16, 4),
                     h.substr(20, 12));
}

void write_workloads(const spec::Operator& op, const PythonCall& c, const Layout& l, const fs::path& dir,
                     std::string* blobs_note) {
  std::string lines;
  for (auto& s : op.benchmark_shapes) {
    spec::Bindings b = op.bindings(s);
    ojson axes = ojson::object();
    for (auto& [name, a] : l.axes.items()) {
      if (a["type"] != "var") continue;
      if (is_symbol(op, name)) {
        axes[name] = static_cast<long long>(b.at(name));
        continue;
      }
      for (auto& t : op.tensors)
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (!is_symbol(op, t.shape[d]) && axis_of(op, t, d) == name) axes[name] = spec::eval_int(t.shape[d], b);
    }
    ojson inputs = ojson::object();
    for (auto* t : c.inputs) {
      if (t->init.dist == "cu_seqlens") {
        std::vector<long long> cum = {0};
        for (auto len : s.seqlens) cum.push_back(cum.back() + len);
        std::string rel = fmt::format("blob/workloads/{}/{}/{}.safetensors", op.name, l.definition, s.label());
        write_text(dir / rel, safetensors_i64(t->name, cum, t->dtype == spec::DType::i32 ? "I32" : "I64"));
        inputs[t->name] = {{"type", "safetensors"}, {"path", rel}, {"tensor_key", t->name}};
        *blobs_note = " (their cu_seqlens in blob/, as safetensors)";
      } else if (t->init.dist == "randint") {
        throw std::runtime_error(
            fmt::format("format flashinfer: input {} of {} is drawn with randint (an index?), and "
                        "FlashInfer-Bench's random integers are [-1024, 1024): not exported yet",
                        t->name, op.name));
      } else {
        inputs[t->name] = {{"type", "random"}};
      }
    }
    ojson w = {{"definition", l.definition},
               {"solution", nullptr},
               {"workload", {{"uuid", uuid_of(op.name + "/" + s.label())}, {"axes", axes}, {"inputs", inputs}}},
               {"evaluation", nullptr}};
    lines += w.dump() + "\n";
  }
  write_text(dir / "workloads" / op.name / (l.definition + ".jsonl"), lines);
}

std::string at_dtype(spec::DType t) {
  switch (t) {
    case spec::DType::bf16:
      return "at::kBFloat16";
    case spec::DType::f16:
      return "at::kHalf";
    case spec::DType::f32:
      return "at::kFloat";
    case spec::DType::f64:
      return "at::kDouble";
    case spec::DType::i32:
      return "at::kInt";
    case spec::DType::i64:
      return "at::kLong";
  }
  return "at::kFloat";
}

std::string binding(const ExportPackage& p, const PythonCall& c, const std::string& definition) {
  const spec::Operator& op = *p.op;
  std::vector<std::string> params, sig;
  for (auto* t : c.inputs) params.push_back("torch::Tensor " + t->name), sig.push_back(t->name);
  for (auto* t : c.outputs) params.push_back("torch::Tensor " + t->name), sig.push_back(t->name);
  if (!c.int_arguments().empty())
    throw std::runtime_error(
        fmt::format("format flashinfer: symbol {} of {} is in no input's shape, and a definition "
                    "binds every axis from the inputs",
                    c.int_arguments()[0], op.name));
  std::string symbols, checks, fields;
  for (auto& s : c.symbols)
    symbols += fmt::format("  const int64_t {} = {}.size({});\n", s.symbol, s.tensor->name, s.dim);
  std::function<std::string(const std::string&)> name = [&](const std::string& id) -> std::string {
    for (auto& s : op.symbols)
      if (s == id) return "static_cast<double>(" + id + ")";
    for (auto& sc : op.scalars)  // (an imported definition's const axes are scalars)
      if (sc.name == id) return "(" + expr_to_c(sc.expr, name) + ")";
    throw std::runtime_error("a shape names '" + id + "', which is no symbol or scalar");
  };
  for (auto& [s, v] : c.fixed)
    checks += fmt::format(
        "  TORCH_CHECK({0} == {1}, \"tessera {2}: {0} = \", {0}, \", the kernels are built for {0} = {1}\");\n", s, v,
        op.name);
  for (auto& t : op.tensors) {
    std::vector<std::string> dims;
    for (auto& e : t.shape)
      dims.push_back(is_symbol(op, e) ? trim(e) : "static_cast<int64_t>(" + expr_to_c(e, name) + ")");
    checks += fmt::format("  expect({0}, \"{0}\", {1}, {{{2}}});\n", t.name, at_dtype(t.dtype), join(dims, ", "));
    fields += fmt::format("  a.{0} = ptr({0});\n", t.name);
  }
  for (auto& s : op.symbols) fields += fmt::format("  a.{0} = {0};\n", s);
  auto strip = [](std::string s) {
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  };
  return fill_template("flashinfer/binding.cpp", {{"CNAME", c_name(op.name)},
                                                  {"OP", op.name},
                                                  {"DEFINITION", definition},
                                                  {"SIGNATURE", join(sig, ", ")},
                                                  {"ARCHS", join(p.archs, ", ")},
                                                  {"HELPERS", expr_helpers_source()},
                                                  {"PARAMS", join(params, ", ")},
                                                  {"SYMBOLS", strip(symbols)},
                                                  {"CHECKS", strip(checks)},
                                                  {"FIRST", c.inputs.at(0)->name},
                                                  {"FIELDS", strip(fields)}});
}

// DIR/src's files (write_kernels_and_sources'), DIR/cpp's (write_cpp's): written first where missing.
void ensure_shared(const ExportPackage& p, const fs::path& out) {
  const std::string n = c_name(p.op->name);
  bool sources = true;
  for (auto& c : p.candidates) sources = sources && fs::exists(out / "src" / (c.name + ".cu"));
  if (!sources) write_kernels_and_sources(p, out);
  if (!fs::exists(out / "cpp" / "include" / ("tessera_" + n + ".h")) ||
      !fs::exists(out / "cpp" / "src" / ("tessera_" + n + ".cpp")))
    write_cpp(p, out);
}

ojson solution(const ExportPackage& p, const PythonCall& c, const Layout& l, const fs::path& out,
               std::string* sol_name) {
  const spec::Operator& op = *p.op;
  const std::string n = c_name(op.name);
  ensure_shared(p, out);
  std::vector<std::string> cands;
  for (auto& cand : p.candidates) cands.push_back(cand.name);
  *sol_name = "tessera_" + n + "_" + join(cands, "_");
  ojson sources = ojson::array();
  const std::string entry = "tessera_" + n + "_binding.cpp";
  sources.push_back({{"path", entry}, {"content", binding(p, c, l.definition)}});
  sources.push_back(
      {{"path", "tessera_" + n + ".h"}, {"content", read_file(out / "cpp" / "include" / ("tessera_" + n + ".h"))}});
  sources.push_back(
      {{"path", "tessera_" + n + ".cpp"}, {"content", read_file(out / "cpp" / "src" / ("tessera_" + n + ".cpp"))}});
  // The kernels' sources and every header beside them in DIR/src (the tile library too).
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(out / "src"))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), out / "src"));
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    std::string rel = f.generic_string();
    if (f.extension() == ".cu") rel = rel.substr(0, rel.size() - 3) + ".cuh";
    std::string content = read_file(out / "src" / f);
    if (content.empty()) continue;  // (the format has no empty files)
    sources.push_back({{"path", "kernels/" + rel}, {"content", content}});
  }
  std::string figures;
  const auto& fig = p.candidates[0].figures;
  if (fig.contains("geomean_speedup") && fig.contains("device"))
    figures = fmt::format(" Measured by tessera on {}: {:.3g}x its baseline (geometric mean of the benchmark shapes).",
                          fig["device"].get<std::string>(), fig["geomean_speedup"].get<double>());
  return {{"name", *sol_name},
          {"definition", l.definition},
          {"author", "tessera"},
          {"description", fmt::format(
                              "tessera's {} kernel{} {} (templates {}), exported from tessera commit {} on {}; "
                              "NVRTC-compiled images for {} embedded in tessera_{}.cpp, launched through its C "
                              "ABI.{}",
                              op.name, cands.size() == 1 ? "" : "s", join(cands, ", "),
                              [&] {
                                std::vector<std::string> t;
                                for (auto& cand : p.candidates) t.push_back(cand.template_name);
                                return join(t, ", ");
                              }(),
                              p.tessera_commit, p.created, join(p.archs, ", "), n, figures)},
          {"spec",
           {{"language", "cuda"},
            {"target_hardware", p.archs},
            {"entry_point", entry + "::run"},
            {"dependencies", ojson::array()},
            {"destination_passing_style", true},
            {"binding", "torch"}}},
          {"sources", sources}};
}

}  // namespace

// An operator made by `tessera import`: the Solution is for the definition it came from,
// which goes into the folder unchanged with the workloads it came with (those whose
// safetensors blobs are absent are left out: flashinfer-bench could not run them).
void write_flashinfer_imported(const ExportPackage& p, const PythonCall& c, const fs::path& out) {
  const spec::Operator& op = *p.op;
  const auto& im = *op.imported;
  ojson def = ojson::parse(read_file(im.definition));
  const std::string name = def.at("name"), op_type = def.at("op_type");
  for (auto& [in, v] : def.at("inputs").items())
    if (v.at("shape").is_null())
      throw std::runtime_error(
          fmt::format("format flashinfer: input {} of {} is a scalar, which tessera's exported "
                      "binding does not take yet",
                      in, name));
  Layout l;
  l.definition = name;
  fs::path dir = out / "flashinfer";
  write_text(dir / "definitions" / op_type / (name + ".json"), read_file(im.definition));
  std::string lines, left_out;
  int kept = 0, dropped = 0;
  if (!im.workloads.empty()) {
    std::istringstream in(read_file(im.workloads));
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"safetensors\"") != std::string::npos) {
        ++dropped;
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      lines += line + "\n";
      ++kept;
    }
  }
  if (dropped)
    left_out =
        fmt::format(" ({} workloads whose index tensors live in absent safetensors blobs are left out)", dropped);
  write_text(dir / "workloads" / op_type / (name + ".jsonl"), lines);
  std::string sol_name;
  ojson sol = solution(p, c, l, out, &sol_name);
  write_text(dir / "solutions" / op_type / (sol_name + ".json"), sol.dump(2) + "\n");
  std::vector<std::string> cands;
  for (auto& cand : p.candidates) cands.push_back(cand.name);
  write_text(
      dir / "README.md",
      fill_template("flashinfer/README.md",
                    {{"DEFINITION", name},
                     {"OP", op_type},
                     {"CANDIDATES", join(cands, ", ")},
                     {"COMMIT", p.tessera_commit},
                     {"CREATED", p.created},
                     {"WORKLOADS", fmt::format("the definition's own workloads ({})", kept)},
                     {"BLOBS", left_out},
                     {"SOLUTION", sol_name},
                     {"NOTES", fmt::format("\nThe operator was imported from this definition "
                                           "(`tessera import`); the definition is the original, unchanged.\n")}}));
}

void write_flashinfer(const ExportPackage& p, const fs::path& out) {
  if (!p.op || p.candidates.empty()) throw std::runtime_error("write_flashinfer: an empty package");
  const spec::Operator& op = *p.op;
  PythonCall c = python_call(op);
  for (auto& t : op.tensors) flashinfer_dtype(t.dtype);  // (throws for float64)
  if (op.imported) return write_flashinfer_imported(p, c, out);
  Layout l = layout(op, c);
  fs::path dir = out / "flashinfer";
  std::vector<std::string> tags = {"source:tessera", "op:" + op.name};
  for (auto& a : p.archs) tags.push_back("arch:" + a);
  ojson def = {{"name", l.definition},
               {"op_type", op.name},
               {"description", op.description},
               {"tags", tags},
               {"axes", l.axes},
               {"constraints", l.constraints},
               {"inputs", tensor_specs(op, c.inputs)},
               {"outputs", tensor_specs(op, c.outputs)},
               {"reference", python_reference(op, c)}};
  write_text(dir / "definitions" / op.name / (l.definition + ".json"), def.dump(2) + "\n");
  std::string blobs;
  write_workloads(op, c, l, dir, &blobs);
  std::string sol_name;
  ojson sol = solution(p, c, l, out, &sol_name);
  write_text(dir / "solutions" / op.name / (sol_name + ".json"), sol.dump(2) + "\n");
  std::vector<std::string> cands;
  for (auto& cand : p.candidates) cands.push_back(cand.name);
  std::string notes;
  if (op.name == "kda")
    notes =
        "\nThe reference runs the recurrence token by token in float64 (8192 sequential steps a workload, in "
        "every timed run too), so fewer timing runs keep the evaluation short: `flashinfer-bench run --local . "
        "--warmup-runs 3 --iterations 20 --num-trials 1`.\n";
  write_text(dir / "README.md", fill_template("flashinfer/README.md",
                                              {{"DEFINITION", l.definition},
                                               {"OP", op.name},
                                               {"CANDIDATES", join(cands, ", ")},
                                               {"COMMIT", p.tessera_commit},
                                               {"CREATED", p.created},
                                               {"BLOBS", blobs},
                                               {"WORKLOADS", "one workload for each of tessera's benchmark shapes"},
                                               {"SOLUTION", sol_name},
                                               {"NOTES", notes}}));
}

}  // namespace tessera::exporter
