// evaluator/worker.cpp — the worker's request loop.
#include "evaluator/worker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "codegen/render.h"
#include "evaluator/ceilings.h"
#include "evaluator/channel.h"
#include "evaluator/npy.h"
#include "evaluator/worker_profile.h"

namespace tessera::evaluator {

using nlohmann::json;

json settings_json(const JudgeSettings& s) {
  return {{"seeds", s.seeds},
          {"seed_base", s.seed_base},
          {"bench_seed", s.bench_seed},
          {"validate", s.validate},
          {"benchmark", s.benchmark},
          {"min_samples", s.min_samples},
          {"max_samples", s.max_samples},
          {"target_rse", s.target_rse},
          {"max_seconds_per_shape", s.max_seconds_per_shape},
          {"stopping_rule", stopping_criterion_name(s.stopping_rule)},
          {"graph_below_ms", s.graph_below_ms},
          {"graph_rounds", s.graph_rounds},
          {"l2_flush", l2_flush_name(s.l2_flush)},
          {"baseline_prior_ms", s.baseline_prior_ms},
          {"step_floor_s", s.step_floor_s},
          {"step_factor", s.step_factor},
          {"trusted_step_s", s.trusted_step_s}};
}

JudgeSettings settings_from_json(const json& j) {
  JudgeSettings s;
  s.seeds = j.value("seeds", s.seeds);
  s.seed_base = j.value("seed_base", s.seed_base);
  s.bench_seed = j.value("bench_seed", s.bench_seed);
  s.validate = j.value("validate", s.validate);
  s.benchmark = j.value("benchmark", s.benchmark);
  s.min_samples = j.value("min_samples", s.min_samples);
  s.max_samples = j.value("max_samples", s.max_samples);
  s.target_rse = j.value("target_rse", s.target_rse);
  s.max_seconds_per_shape = j.value("max_seconds_per_shape", s.max_seconds_per_shape);
  s.stopping_rule =
      parse_stopping_criterion(j.value("stopping_rule", std::string(stopping_criterion_name(s.stopping_rule))));
  s.graph_below_ms = j.value("graph_below_ms", s.graph_below_ms);
  s.graph_rounds = j.value("graph_rounds", s.graph_rounds);
  s.l2_flush = parse_l2_flush(j.value("l2_flush", std::string(l2_flush_name(s.l2_flush))));
  s.step_floor_s = j.value("step_floor_s", s.step_floor_s);
  s.step_factor = j.value("step_factor", s.step_factor);
  s.trusted_step_s = j.value("trusted_step_s", s.trusted_step_s);
  if (j.contains("baseline_prior_ms"))
    s.baseline_prior_ms = j.at("baseline_prior_ms").get<std::map<std::string, double>>();
  return s;
}

namespace {

json device_json(const DeviceInfo& i) {
  return {{"ordinal", i.ordinal},       {"name", i.name},
          {"arch", i.arch()},           {"sm_count", i.sm_count},
          {"l2_bytes", i.l2_bytes},     {"total_mem", i.total_mem},
          {"driver", i.driver_version}, {"max_smem_optin", i.max_smem_optin}};
}

// Keeps the operator, its reference and baseline loaded between requests.
struct Session {
  std::string key;
  std::unique_ptr<spec::Operator> op;
  std::unique_ptr<Judge> judge;
};

LoadedProgram load_program(Device& dev, const spec::Program& p, const std::string& cubin_path) {
  LoadedProgram lp;
  lp.program = p;
  if (p.builtin.empty() && p.python.empty())
    lp.module = std::make_shared<Module>(dev.driver(), codegen::read_file(cubin_path));
  return lp;
}

// Loads (or keeps) the operator, its reference and baseline for this request.
Judge& session_judge(Device& dev, Session& s, const json& req) {
  std::string dir = req.at("operator_dir");
  std::string ref = req.value("reference_cubin", "");
  std::string base = req.value("baseline_cubin", "");
  std::string key = dir + "|" + ref + "|" + base;
  if (s.key != key) {
    s.judge.reset();
    s.op = std::make_unique<spec::Operator>(spec::load_operator(dir));
    s.judge = std::make_unique<Judge>(dev, *s.op, load_program(dev, s.op->reference, ref),
                                      load_program(dev, s.op->baseline, base));
    s.key = key;
  }
  return *s.judge;
}

// The program a request names: the operator's reference or baseline, a
// template of its spec, or a program carried in the request.
spec::Program requested_program(const Session& s, const json& c) {
  std::string role = c.value("role", "candidate");
  if (role == "reference") return s.op->reference;
  if (role == "baseline") return s.op->baseline;
  const spec::Program* tpl = s.op->find_template(c.value("template", ""));
  if (c.contains("program")) return spec::program_from_json(c.at("program"), s.op->dir);
  if (tpl) return *tpl;
  throw std::runtime_error("candidate names no known template and carries no program");
}

json handle_evaluate(Device& dev, Session& s, const json& req, ReplyChannel& channel) {
  session_judge(dev, s, req);
  const long long id = req.at("id").get<long long>();
  s.judge->set_watch([&channel, id](const std::string& what, double limit_s) { channel.step(id, what, limit_s); });
  const json& c = req.at("candidate");
  LoadedProgram cand = load_program(dev, requested_program(s, c), c.at("cubin"));
  const json params = c.value("params", json::object());  // a named copy: items() must not outlive it
  for (auto& [k, v] : params.items()) cand.params[k] = v.get<long long>();
  EvalReport rep = s.judge->evaluate(cand, settings_from_json(req.value("settings", json::object())));
  return {{"ok", true}, {"report", rep}};
}

npy::DType npy_dtype(spec::DType t) {
  switch (t) {
    case spec::DType::bf16:
      return npy::DType::BF16;
    case spec::DType::f16:
      return npy::DType::F16;
    case spec::DType::f32:
      return npy::DType::F32;
    case spec::DType::f64:
      return npy::DType::F64;
    case spec::DType::i32:
      return npy::DType::I32;
    case spec::DType::i64:
      return npy::DType::I64;
  }
  return npy::DType::F32;
}

// `tessera run`: the named program on inputs read from .npy files.
json handle_run(Device& dev, Session& s, const json& req) {
  Judge& judge = session_judge(dev, s, req);
  const json& c = req.at("candidate");
  spec::Program prog = requested_program(s, c);
  LoadedProgram lp = load_program(dev, prog, c.value("cubin", ""));
  const json params = c.value("params", json::object());
  for (auto& [k, v] : params.items()) lp.params[k] = v.get<long long>();
  spec::Shape shape;
  const json symbols = req.at("symbols");
  for (auto& [k, v] : symbols.items()) shape.symbols[k] = v.get<long long>();
  shape.seqlens = req.value("seqlens", std::vector<long long>{});
  std::map<std::string, std::vector<unsigned char>> inputs;
  const json files = req.at("inputs");
  for (auto& t : s.op->tensors) {
    if (t.output) continue;
    if (!files.contains(t.name)) throw std::runtime_error("no file for input '" + t.name + "'");
    auto bytes = npy::read_as(files.at(t.name).get<std::string>(), npy_dtype(t.dtype));
    inputs[t.name].assign(bytes.begin(), bytes.end());
  }
  json out = judge.run_inputs(lp, shape, inputs, c.value("role", "") == "reference", req.value("repeat", 0),
                              req.at("outputs_dir"));
  out["ok"] = true;
  return out;
}

// The channel's ends (evaluator/channel.h) and its secret, taken before anything
// else runs; false when this process was not started by a WorkerClient.
bool open_channel(std::string* secret) {
  const char* sec = std::getenv(kSecretEnv);
  if (!sec || !*sec || fcntl(kRequestFd, F_GETFD) < 0 || fcntl(kReplyFd, F_GETFD) < 0) return false;
  *secret = sec;
  unsetenv(kSecretEnv);
  fcntl(kRequestFd, F_SETFD, FD_CLOEXEC);
  fcntl(kReplyFd, F_SETFD, FD_CLOEXEC);
  return true;
}

json dispatch(Device* dev, const std::string& why, Session& session, const json& req, ReplyChannel& channel) {
  std::string type = req.value("type", "");
  if (!dev) return {{"ok", false}, {"error", "no GPU: " + why}};
  if (type == "hello") return {{"ok", true}, {"device", device_json(dev->info())}};
  if (type == "ceilings") {
    Ceilings c = measure_ceilings(*dev);
    return {{"ok", true},
            {"copy_bytes_per_s", c.copy_bytes_per_s},
            {"bf16_flops_per_s", c.bf16_flops_per_s},
            {"note", c.note}};
  }
  if (type == "evaluate") return handle_evaluate(*dev, session, req, channel);
  if (type == "run") return handle_run(*dev, session, req);
  if (type == "profile") return handle_profile(*dev, req);
  return {{"ok", false}, {"error", "unknown request type '" + type + "'"}};
}

}  // namespace

int worker_main(int gpu) {
  std::string secret;
  if (!open_channel(&secret)) {
    std::cerr << "tessera worker: an internal command, started by tessera (optimize, run, doctor) with its "
                 "channel on file descriptors 3 and 4\n";
    return 2;
  }
  ReplyChannel channel(kReplyFd, secret);
  std::string why;
  auto drv = Driver::load(&why);
  std::unique_ptr<Device> dev;
  if (drv) {
    try {
      if (gpu >= device_count(*drv))
        why = fmt::format("GPU {} does not exist", gpu);
      else
        dev = std::make_unique<Device>(drv, gpu);
    } catch (std::exception& e) {
      why = e.what();
    }
  }
  Session session;
  FILE* requests = fdopen(kRequestFd, "r");
  char* raw = nullptr;
  size_t cap = 0;
  for (ssize_t n; requests && (n = getline(&raw, &cap, requests)) > 0;) {
    std::string line(raw, static_cast<size_t>(n));
    if (line.find_first_not_of(" \r\n") == std::string::npos) continue;
    json reply;
    long long id = -1;
    int exit_code = -1;
    try {
      json req = json::parse(line);
      id = req.value("id", -1LL);
      reply = dispatch(dev.get(), why, session, req, channel);
    } catch (ContextLost& e) {
      reply = {{"ok", true}, {"report", e.report}, {"context_lost", true}};
      exit_code = 3;
    } catch (DriverError& e) {
      reply = {{"ok", false}, {"error", e.what()}};
      if (is_sticky(e.code)) exit_code = 3;
    } catch (std::exception& e) {
      reply = {{"ok", false}, {"error", e.what()}};
    }
    if (session.judge) session.judge->set_watch(nullptr);
    channel.reply(id, reply);
    if (exit_code >= 0) {
      std::free(raw);
      return exit_code;
    }
  }
  std::free(raw);
  return 0;
}

}  // namespace tessera::evaluator
