// evaluator/judge_python.cpp — see judge_python.h.
#include "evaluator/judge_python.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

namespace tessera::evaluator {

namespace {

nlohmann::ordered_json read_definition(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read");
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (std::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", p.string(), e.what()));
  }
}

}  // namespace

PythonSide::PythonSide(const spec::Operator& op, const DeviceInfo& dev) : op_(op), l2_bytes_(dev.l2_bytes) {
  const auto& def_path = op.reference.python;
  auto def = read_definition(def_path);
  for (auto& [name, _] : def.at("inputs").items()) inputs_.push_back(name);
  for (auto& t : op.tensors)
    if (t.output) outputs_.push_back({t.name, t.shape});
  device_ = fmt::format("cuda:{}", dev.ordinal);
  has_baseline_ = !op.baseline.python.empty();
  ensure();
}

void PythonSide::ensure() {
  if (ref_ && ref_->alive()) return;
  std::string why;
  ref_ = PythonReference::start(device_, &why);
  if (!ref_)
    throw std::runtime_error(
        fmt::format("the reference of {} is Python ({}'s run), and the reference process cannot "
                    "start: {}",
                    op_.name, op_.reference.python.string(), why));
  std::filesystem::path base_py;
  if (!op_.baseline.python.empty() && op_.baseline.python.extension() == ".py") base_py = op_.baseline.python;
  ref_->load(op_.reference.python, base_py);
}

std::vector<PythonTensor> PythonSide::tensors(const spec::Bindings& b, const std::map<std::string, Buffer>& inputs,
                                              std::vector<std::vector<unsigned char>>& storage) const {
  std::vector<PythonTensor> out;
  storage.reserve(inputs_.size());
  for (auto& name : inputs_) {
    PythonTensor pt;
    pt.name = name;
    if (const spec::Tensor* t = op_.tensor(name); t && !t->output) {
      pt.kind = "tensor";
      pt.dtype = t->dtype;
      for (auto& e : t->shape) pt.shape.push_back(spec::eval_int(e, b));
      storage.push_back(inputs.at(name).download());
      pt.data = storage.back().data();
      pt.bytes = storage.back().size();
    } else if (b.count(name)) {
      pt.kind = "scalar";
      pt.value = b.at(name);
    } else {
      pt.kind = "none";  // an optional input tessera does not give
    }
    out.push_back(std::move(pt));
  }
  return out;
}

void PythonSide::reference(const spec::Shape& s, const spec::Bindings& b, const std::map<std::string, Buffer>& inputs,
                           std::map<std::string, Buffer>& outputs) {
  std::vector<std::vector<unsigned char>> storage;
  auto in = tensors(b, inputs, storage);
  std::vector<std::pair<std::string, std::vector<long long>>> want;
  for (auto& [name, shape] : outputs_) {
    std::vector<long long> dims;
    for (auto& e : shape) dims.push_back(spec::eval_int(e, b));
    want.push_back({name, dims});
  }
  std::string key = s.label();
  bool compare = !compared_.count(key);
  ensure();  // (a process that died or timed out is started again for the next request)
  ReferenceRun r = ref_->run(in, want, compare);
  compared_.insert(key);
  if (compare && !r.cached) {
    for (auto& [name, rel] : r.as_written_rel_l2)
      std::cerr << fmt::format(
          "tessera worker: {} at {}: the reference as written (its own casts) differs from its "
          "float64 run by rel_l2 {:.3g}, max_abs {:.3g} in '{}'\n",
          op_.name, key, rel, r.as_written_max_abs[name], name);
  }
  for (auto& [name, _] : outputs_) {
    auto& v = r.outputs.at(name);
    Buffer& dst = outputs.at(name);
    if (v.size() * sizeof(double) != dst.bytes())
      throw std::runtime_error(
          fmt::format("the Python reference returned {} values for '{}', the spec's shape needs {}", v.size(), name,
                      dst.bytes() / sizeof(double)));
    dst.upload(v.data(), dst.bytes());
  }
}

const Timing& PythonSide::baseline(const std::string& key, const spec::Bindings& b,
                                   const std::map<std::string, Buffer>& inputs, int min_samples, int max_samples,
                                   double target_rse, double max_seconds) {
  auto it = baseline_ms_.find(key);
  if (it != baseline_ms_.end()) return it->second;
  std::vector<std::vector<unsigned char>> storage;
  auto in = tensors(b, inputs, storage);
  ensure();
  auto samples = ref_->time_baseline(in, l2_bytes_, min_samples, max_samples, target_rse, max_seconds, &baseline_what_);
  return baseline_ms_[key] = summarize(samples);
}

}  // namespace tessera::evaluator
