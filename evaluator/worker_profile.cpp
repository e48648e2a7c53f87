// evaluator/worker_profile.cpp — the worker's "profile" request (worker_profile.h): the
// program's plan run once to warm up, then `runs` times inside the profiler's range.
#include "evaluator/worker_profile.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/builtin_kernels.h"
#include "evaluator/judge.h"
#include "evaluator/plan_runner.h"

namespace tessera::evaluator {

using nlohmann::json;

namespace {

// cuProfilerStart / cuProfilerStop of the driver this process has loaded (a profiler
// that was asked to wait for them, `ncu --profile-from-start off`, starts and stops
// collecting there; without a profiler they do nothing).
void profiler_range(bool start) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return;
  using Fn = int (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(lib, start ? "cuProfilerStart" : "cuProfilerStop"));
  if (fn) fn();
  dlclose(lib);
}

// The benchmark or validation shape called `name` (its label).
spec::Shape find_shape(const spec::Operator& op, const std::string& name) {
  for (auto* suite : {&op.benchmark_shapes, &op.validation_shapes})
    for (auto& s : *suite)
      if (s.label() == name) return s;
  throw std::runtime_error(fmt::format("{} has no shape '{}'", op.name, name));
}

// The candidate's program: the one it carries (a proposed plan), else its template.
spec::Program candidate_program(const spec::Operator& op, const json& c) {
  if (c.contains("program")) return spec::program_from_json(c.at("program"), op.dir);
  if (const spec::Program* tpl = op.find_template(c.value("template", ""))) return *tpl;
  throw std::runtime_error("the candidate names no known template and carries no program");
}

std::unique_ptr<Module> generator_kernels(Device& dev) {
  codegen::CompileRequest req;
  req.source = kBuiltinKernelSource;
  req.name = "tessera_builtins.cu";
  req.arch = dev.info().arch();
  auto res = codegen::Compiler().compile(req);
  if (!res.ok) throw std::runtime_error("the evaluator's own generator kernels failed to compile:\n" + res.log);
  return std::make_unique<Module>(dev.driver(), res.cubin);
}

}  // namespace

json handle_profile(Device& dev, const json& req) {
  spec::Operator op = spec::load_operator(req.at("operator_dir").get<std::string>());
  const json& c = req.at("candidate");
  LoadedProgram cand;
  cand.program = candidate_program(op, c);
  cand.module = std::make_shared<Module>(dev.driver(), codegen::read_file(c.at("cubin").get<std::string>()));
  const json params = c.value("params", json::object());  // a named copy: items() must not outlive it
  for (auto& [k, v] : params.items()) cand.params[k] = v.get<long long>();
  spec::Shape shape = find_shape(op, req.at("shape").get<std::string>());
  const int runs = std::max(1, req.value("runs", 1));

  auto builtins = generator_kernels(dev);
  auto ws = make_workspace(dev, *builtins, op, shape, req.value("seed", JudgeSettings{}.bench_seed));
  PlanRunner runner(dev, op, nullptr, nullptr);
  OutputSet outs = runner.make_outputs(cand, *ws, false);
  runner.poison(outs);
  runner.run(cand, *ws, outs);  // the warm-up: module loading, smem limits, first-touch costs
  dev.sync();
  profiler_range(true);
  for (int i = 0; i < runs; ++i) {
    runner.poison(outs);
    runner.run(cand, *ws, outs);
  }
  dev.sync();
  profiler_range(false);

  json kernels = json::array(), outside = json::array();
  spec::Bindings b = runner.bindings(cand, *ws);
  std::set<std::string> seen;
  for (auto& k : cand.program.launch)
    if (spec::launched(k, b) && seen.insert(k.kernel).second) kernels.push_back(k.kernel);
  for (auto& [name, buf] : outs.bufs)
    if (!buf.guards_intact()) outside.push_back(name);
  return {{"ok", true}, {"shape", shape.label()}, {"runs", runs}, {"kernels", kernels}, {"outside", outside}};
}

}  // namespace tessera::evaluator
