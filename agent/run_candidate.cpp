// agent/run_candidate.cpp — shape inference from .npy inputs, compilation of
// the chosen program, and the worker's "run" request.
#include "agent/run_candidate.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/npy.h"
#include "evaluator/worker_client.h"
#include "spec/spec.h"
#include "store/store.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Binds every shape symbol that appears alone as a dimension of an input, then
// checks that every input's dimensions agree with the spec's expressions.
spec::Shape infer_shape(const spec::Operator& op, const fs::path& dir) {
  spec::Shape shape;
  std::map<std::string, std::vector<std::int64_t>> dims;
  for (auto& t : op.tensors) {
    if (t.output) continue;
    fs::path f = dir / (t.name + ".npy");
    if (!fs::exists(f)) throw std::invalid_argument(fmt::format("input '{}' missing: expected {}", t.name, f.string()));
    npy::Array a = npy::read(f);
    if (a.shape.size() != t.shape.size())
      throw std::invalid_argument(fmt::format("{}: {} dimensions, the spec of '{}' has {} ({})", f.string(),
                                              a.shape.size(), t.name, t.shape.size(), fmt::join(t.shape, ", ")));
    dims[t.name] = a.shape;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const std::string& e = t.shape[d];
      if (std::find(op.symbols.begin(), op.symbols.end(), e) == op.symbols.end()) continue;
      auto [it, fresh] = shape.symbols.emplace(e, a.shape[d]);
      if (!fresh && it->second != a.shape[d])
        throw std::invalid_argument(fmt::format("{}: dimension {} is {}, but {} = {} from another input", f.string(), d,
                                                a.shape[d], e, it->second));
    }
    if (t.init.dist == "cu_seqlens") {
      auto v = npy::to_f64(a);
      for (size_t i = 1; i < v.size(); ++i) shape.seqlens.push_back(static_cast<long long>(v[i] - v[i - 1]));
      if (v.empty() || v[0] != 0) throw std::invalid_argument(f.string() + ": cu_seqlens must start at 0");
    }
  }
  for (auto& s : op.symbols)
    if (!shape.symbols.count(s))
      throw std::invalid_argument(fmt::format("symbol {} cannot be inferred from the inputs' shapes", s));
  spec::Bindings b = op.bindings(shape);
  for (auto& [name, d] : dims) {
    const spec::Tensor* t = op.tensor(name);
    for (size_t i = 0; i < d.size(); ++i)
      if (spec::eval_int(t->shape[i], b) != d[i])
        throw std::invalid_argument(fmt::format("input '{}': dimension {} is {}, the spec says {} = {}", name, i, d[i],
                                                t->shape[i], spec::eval_int(t->shape[i], b)));
  }
  shape.name = "inputs";
  return shape;
}

// The program to run and its source: a stored candidate (with its template and
// parameters), or the spec's reference or baseline. 0, or the exit code once said why not.
int choose_program(const RunOptions& o, const spec::Operator& op, std::string* source, std::string* tpl_name,
                   json* params) {
  if (o.role == "candidate") {
    if (!fs::exists(o.db)) {
      std::cerr << fmt::format("tessera: no database at {}\n", o.db);
      return 1;
    }
    store::Store st(o.db);
    auto c = st.candidate(o.candidate);
    if (!c || c->op != o.op) {
      std::cerr << fmt::format("tessera: no candidate #{} of '{}' in {}\n", o.candidate, o.op, o.db);
      return 1;
    }
    *source = st.source(c->source_hash).value_or("");
    *tpl_name = c->template_name;
    *params = json::parse(c->params_json.empty() ? "{}" : c->params_json);
    if (const spec::Program* t = op.find_template(*tpl_name))  // (parameters the template gained since)
      *params = spec::complete_params(*t, params->get<std::map<std::string, long long>>());
  } else if (o.role == "reference" || o.role == "baseline") {
    const spec::Program& p = o.role == "reference" ? op.reference : op.baseline;
    if (p.builtin.empty() && p.python.empty()) *source = codegen::read_file(p.source.string());
  } else {
    std::cerr << "tessera: role must be candidate, reference or baseline\n";
    return 2;
  }
  return 0;
}

// The worker's "run" request: reference, baseline and the program compiled for `arch`
// (in that order), the inputs' paths and where the outputs go.
json run_request(const RunOptions& o, const spec::Operator& op, const spec::Shape& shape, const std::string& arch,
                 const std::string& source, const std::string& tpl_name, const json& params) {
  codegen::Compiler compiler;
  std::vector<fs::path> includes = {op.dir, spec::targets_dir() / "common"};
  auto cubin_of = [&](const std::string& src, const std::string& what) -> std::string {
    if (src.empty()) return "";
    auto r = compiler.compile({src, what, arch, includes, {}});
    if (!r.ok) throw std::runtime_error(what + " does not compile for " + arch + ":\n" + r.log);
    return compiler.cubin_path(r.key).string();
  };
  auto source_of = [](const spec::Program& p) {
    return p.source.empty() ? std::string() : codegen::read_file(p.source.string());
  };
  std::string ref_src = source_of(op.reference), base_src = source_of(op.baseline);
  json inputs = json::object();
  for (auto& t : op.tensors)
    if (!t.output) inputs[t.name] = fs::absolute(fs::path(o.inputs_dir) / (t.name + ".npy")).string();
  json req = {
      {"type", "run"},
      {"operator_dir", op.spec_dir.string()},
      {"reference_cubin", cubin_of(ref_src, "reference")},
      {"baseline_cubin", cubin_of(base_src, "baseline")},
      {"candidate",
       {{"role", o.role}, {"cubin", cubin_of(source, "candidate")}, {"template", tpl_name}, {"params", params}}},
      {"symbols", shape.symbols},
      {"seqlens", shape.seqlens},
      {"inputs", inputs},
      {"outputs_dir", fs::absolute(o.outputs_dir).string()},
      {"repeat", o.repeat}};
  return req;
}

// The worker's answer in text: the outputs written and, when timed, the median.
void print_run_result(json& body) {
  for (auto& f : body["outputs"])
    std::cout << fmt::format("wrote {} ({})\n", f["path"].get<std::string>(), f["dtype"].get<std::string>());
  if (body.contains("median_ms"))
    std::cout << fmt::format("median {:.4f} ms over {} cold-L2 launches (min {:.4f})\n",
                             body["median_ms"].get<double>(), body["samples"].get<int>(), body["min_ms"].get<double>());
}

}  // namespace

int run_candidate(const RunOptions& o) {
  fs::path dir = spec::targets_dir() / o.op;
  if (!fs::exists(dir / "spec.json")) {
    std::cerr << fmt::format("tessera: unknown operator '{}'\n", o.op);
    return 2;
  }
  spec::Operator op = spec::load_operator(dir);
  spec::Shape shape;
  try {
    shape = infer_shape(op, o.inputs_dir);
  } catch (npy::Error& e) {
    std::cerr << "tessera: " << e.what() << "\n";
    return 1;
  }
  // The program and its source.
  std::string source, tpl_name;
  json params = json::object();
  if (int rc = choose_program(o, op, &source, &tpl_name, &params); rc != 0) return rc;
  fs::create_directories(o.outputs_dir);
  fs::path logdir = fs::path(o.db).parent_path() / "logs";
  fs::create_directories(logdir);
  evaluator::WorkerClient worker(evaluator::self_exe(), o.gpu, (logdir / "run-worker.log").string());
  auto hello = worker.request({{"type", "hello"}}, 120);
  if (hello.kind != evaluator::WorkerReply::Kind::ok || !hello.body.value("ok", false)) {
    std::cerr << "tessera: cannot run: "
              << (hello.kind == evaluator::WorkerReply::Kind::ok ? hello.body.value("error", "") : hello.detail)
              << "\n";
    return 1;
  }
  std::string arch = hello.body["device"].value("arch", "sm_90a");
  auto r = worker.request(run_request(o, op, shape, arch, source, tpl_name, params), 600);
  if (r.kind != evaluator::WorkerReply::Kind::ok || !r.body.value("ok", false)) {
    std::cerr << "tessera: run failed: "
              << (r.kind == evaluator::WorkerReply::Kind::ok ? r.body.value("error", "") : r.detail) << "\n";
    return 1;
  }
  r.body.erase("ok");
  r.body["symbols"] = shape.symbols;
  if (o.json) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  print_run_result(r.body);
  return 0;
}

}  // namespace tessera::agent
