// agent/optimize.cpp — the optimize loop and its real-GPU cost function.
//
// Flow of one batch: render each configuration, record the candidate (source
// deduplicated by hash), reuse a stored evaluation when the same source was
// already judged on this device for this spec version (resume), compile the
// rest on all cores, reject statically what cannot run, then deal the
// survivors to the workers, one per GPU, and store each verdict in its own
// transaction.
#include "agent/optimize.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/recheck.h"
#include "agent/template_space.h"
#include "codegen/compiler.h"
#include "codegen/render.h"
#include "evaluator/driver.h"
#include "evaluator/report.h"
#include "evaluator/worker.h"
#include "evaluator/worker_client.h"
#include "search/strategy.h"
#include "spec/spec.h"
#include "store/store.h"

namespace tessera::agent {

namespace fs = std::filesystem;
using nlohmann::json;
namespace st = evaluator::status;

std::string default_strategy() { return search::default_strategy(); }

namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
  std::unique_ptr<evaluator::WorkerClient> client;
  json device;
  double busy_s = 0;
  double waiting_s = 0;  // idle while every candidate in hand was still compiling
  int evaluated = 0;
};

std::string spec_hash(const spec::Operator& op) {
  std::string all = codegen::read_file((op.dir / "spec.json").string());
  if (!op.reference.source.empty()) all += codegen::read_file(op.reference.source.string());
  if (!op.baseline.source.empty()) all += codegen::read_file(op.baseline.source.string());
  return codegen::content_hash(all);
}

class Session final : public Loop {
 public:
  Session(const OptimizeOptions& o, spec::Operator op, store::Store& db)
      : o_(o), op_(std::move(op)), db_(db), t0_(Clock::now()) {}

  bool start(std::string* err);
  void run_template(const spec::Program& tpl, size_t budget, const std::string& strategy, Lineage lin = {});
  int finish();
  // Nightly re-check (agent/recheck.cpp): stored candidates judged again, nothing resumed.
  void rejudge(const detail::Chooser& choose, detail::RejudgeRun* out);

  // search::CostFunction for one template; the ids recorded go to *ids_out.
  std::vector<search::Outcome> run_batch(const spec::Program& tpl, const std::vector<search::Config>& batch,
                                         const Lineage& lin, std::vector<long long>* ids_out = nullptr);

  // Loop: what a proposer (agent/proposer_llm.h) may ask.
  std::vector<Judged> evaluate(const spec::Program& prog, const std::vector<search::Config>& batch,
                               const Lineage& lin) override;
  Judged reject(const std::string& name, const std::string& source, const std::string& plan_json,
                const Lineage& lin, const std::string& status, const std::string& message) override;
  std::vector<Judged> tune(const spec::Program& tpl, size_t budget, const Lineage& lin) override;
  size_t evaluated() const override { return done_; }
  double seconds_left() const override {
    return o_.time_limit_s - std::chrono::duration<double>(Clock::now() - t0_).count();
  }
  long long run_id() const override { return run_id_; }
  const std::string& arch() const override { return arch_; }
  bool timing() const override { return !workers_.empty(); }
  std::string device_summary() const override;
  std::string strategy() const override { return o_.strategy.empty() ? default_strategy() : o_.strategy; }

 private:
  struct Pending {
    long long id;
    std::map<std::string, long long> params;
    std::string cubin_path;
    size_t slot;
  };
  // Compiled candidates waiting for a worker; `producing` counts compiles not yet finished.
  struct WorkQueue {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Pending> items;
    size_t producing = 0;
  };
  std::optional<Pending> after_compile(long long id, size_t i, const codegen::CompileResult& r,
                                       const std::map<std::string, long long>& params, const std::string& device,
                                       std::vector<search::Outcome>& out);
  void judge_on_workers(const spec::Program& tpl, WorkQueue& queue, std::vector<search::Outcome>& out);
  search::Outcome record_report(long long id, const json& reply_or_error, Worker& w, bool* retry_impossible);
  void progress(long long id, const std::string& status, double speedup, const std::string& note);
  double timeout_for_next() const;
  // A program that is not one of spec.json's templates (an LLM proposal) travels
  // to the workers as JSON and is stored with its plan.
  bool from_spec(const spec::Program& p) const {
    const spec::Program* t = op_.find_template(p.name);
    return t && t->source == p.source;
  }
  std::vector<Judged> judged(const std::vector<long long>& ids);

  const OptimizeOptions& o_;
  spec::Operator op_;
  store::Store& db_;
  codegen::Compiler compiler_;
  std::string arch_, spec_hash_, ref_cubin_, base_cubin_, no_gpu_reason_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<fs::path> includes_;
  long long run_id_ = 0;
  double copy_bw_ = 0, tc_flops_ = 0;
  Clock::time_point t0_;
  std::mutex mu_;
  size_t done_ = 0, total_budget_ = 0;
  double best_ = 0;
  long long best_id_ = 0;
  std::map<std::string, int> status_counts_;
  std::vector<double> eval_seconds_;
  bool first_request_ = true;
  bool tty_ = isatty(2);
  std::vector<long long> recorded_ids_;  // every candidate run_batch recorded, in order
};

class TemplateCost final : public search::CostFunction {
 public:
  TemplateCost(Session& s, const spec::Program& t, Lineage lin) : s_(s), t_(t), lin_(std::move(lin)) {}
  std::vector<search::Outcome> evaluate(const std::vector<search::Config>& batch) override {
    return s_.run_batch(t_, batch, lin_);
  }

 private:
  Session& s_;
  const spec::Program& t_;
  Lineage lin_;
};

bool Session::start(std::string* err) {
  spec_hash_ = spec_hash(op_);
  includes_ = {op_.dir, spec::targets_dir() / "common"};
  // GPUs: counted without a context; kernels only ever run in workers.
  std::vector<int> ordinals;
  if (o_.gpus != "none") {
    std::string why;
    auto drv = evaluator::Driver::load(&why);
    int n = 0;
    if (drv) {
      try {
        n = evaluator::device_count(*drv);
      } catch (std::exception& e) {
        why = e.what();
      }
      if (n == 0 && why.empty()) why = "the driver sees no GPU";
    }
    if (o_.gpus == "all") {
      for (int i = 0; i < n; ++i) ordinals.push_back(i);
    } else {
      size_t pos = 0;
      std::string g = o_.gpus;
      while (pos <= g.size()) {
        size_t c = g.find(',', pos);
        std::string tok = g.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        if (!tok.empty()) {
          int k = std::stoi(tok);
          if (k < 0 || k >= n) {
            *err = fmt::format("--gpus: GPU {} does not exist ({} found{})", k, n, why.empty() ? "" : ": " + why);
            return false;
          }
          ordinals.push_back(k);
        }
        if (c == std::string::npos) break;
        pos = c + 1;
      }
    }
    if (ordinals.empty()) no_gpu_reason_ = why.empty() ? "no GPU found" : why;
  } else {
    no_gpu_reason_ = "--gpus none";
  }
  fs::path logdir = fs::path(o_.db).parent_path() / "logs";
  std::error_code ec;
  fs::create_directories(logdir, ec);
  for (int g : ordinals) {
    auto w = std::make_unique<Worker>();
    w->client = std::make_unique<evaluator::WorkerClient>(
        evaluator::self_exe(), g, (logdir / fmt::format("worker-gpu{}.log", g)).string());
    auto r = w->client->request({{"type", "hello"}}, 120);
    if (r.kind != evaluator::WorkerReply::Kind::ok || !r.body.value("ok", false)) {
      *err = fmt::format("worker for GPU {} did not start: {}", g,
                         r.kind == evaluator::WorkerReply::Kind::ok ? r.body.value("error", "?") : r.detail);
      return false;
    }
    w->device = r.body.at("device");
    workers_.push_back(std::move(w));
  }
  arch_ = o_.arch;
  if (arch_.empty()) arch_ = workers_.empty() ? "sm_90a" : workers_[0]->device.value("arch", "sm_90a");
  if (!codegen::arch_supported(arch_)) {
    *err = fmt::format("--arch {}: not an architecture NVRTC targets (try sm_90a, sm_100a, sm_103a)", arch_);
    return false;
  }
  if (!workers_.empty() && arch_ != workers_[0]->device.value("arch", "")) {
    no_gpu_reason_ = fmt::format("--arch {} is not the GPU's architecture ({})", arch_,
                                 workers_[0]->device.value("arch", "?"));
    workers_.clear();
  }
  // Reference and baseline for this architecture.
  for (auto* p : {&op_.reference, &op_.baseline}) {
    if (!p->builtin.empty()) continue;
    codegen::CompileRequest req{codegen::read_file(p->source.string()), p->source.filename().string(), arch_, includes_, {}};
    auto res = compiler_.compile(req);
    if (!res.ok) {
      *err = fmt::format("{} of {} does not compile for {}:\n{}", p == &op_.reference ? "the reference" : "the baseline",
                         op_.name, arch_, res.log);
      return false;
    }
    (p == &op_.reference ? ref_cubin_ : base_cubin_) = (compiler_.cache_dir() / "cubin" / (res.key + ".cubin")).string();
  }
  std::string device = workers_.empty() ? "" : workers_[0]->device.value("name", "");
  std::string driver = workers_.empty() ? "" : std::to_string(workers_[0]->device.value("driver", 0));
  if (!workers_.empty()) {
    auto c = db_.ceilings(device, driver);
    if (!c) {
      if (!o_.quiet) std::cerr << "measuring the device's ceilings (copy bandwidth, bf16 tensor-core rate)...\n";
      auto r = workers_[0]->client->request({{"type", "ceilings"}}, 300);
      if (r.kind == evaluator::WorkerReply::Kind::ok && r.body.value("ok", false)) {
        store::DeviceCeilings dc{device, driver, store::hostname(), "", r.body.value("copy_bytes_per_s", 0.0),
                                 r.body.value("bf16_flops_per_s", 0.0)};
        db_.put_ceilings(dc);
        c = dc;
      }
    }
    if (c) copy_bw_ = c->copy_bytes_per_s, tc_flops_ = c->bf16_flops_per_s;
  }
  store::RunInfo ri{op_.name, o_.strategy.empty() ? default_strategy() : o_.strategy, o_.proposer, arch_,
                    workers_.empty() ? "(no GPU)" : device, store::hostname(),
                    json{{"seed", o_.seed}, {"gpus", o_.gpus}, {"template", o_.template_name}, {"proposer", o_.proposer}}.dump(),
                    static_cast<long long>(o_.budget)};
  run_id_ = db_.begin_run(ri);
  total_budget_ = o_.budget;
  return true;
}

double Session::timeout_for_next() const {
  if (o_.request_timeout_s > 0) return o_.request_timeout_s;
  if (first_request_ || eval_seconds_.empty()) return 900;  // includes the float64 references
  std::vector<double> s = eval_seconds_;
  std::sort(s.begin(), s.end());
  return std::max(60.0, 10.0 * s[s.size() / 2]);
}

void Session::progress(long long id, const std::string& status, double speedup, const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  ++status_counts_[status];
  if (status == st::ok && speedup > best_) best_ = speedup, best_id_ = id;
  if (o_.quiet) return;
  double el = std::chrono::duration<double>(Clock::now() - t0_).count();
  std::string line = fmt::format("[{}/{}] #{} {}{}{} | best {} | {:.0f}s", done_, total_budget_, id, status,
                                 status == st::ok ? fmt::format(" {:.3f}x", speedup) : "",
                                 note.empty() ? "" : " (" + note.substr(0, 60) + ")",
                                 best_id_ ? fmt::format("#{} {:.3f}x", best_id_, best_) : "-", el);
  if (tty_) std::cerr << "\r\033[K" << line << std::flush;
  else std::cerr << line << "\n";
}

std::vector<search::Outcome> Session::run_batch(const spec::Program& tpl, const std::vector<search::Config>& batch,
                                                const Lineage& lin, std::vector<long long>* ids_out) {
  std::vector<search::Outcome> out(batch.size());
  std::string tsrc = codegen::read_file(tpl.source.string());
  bool applicable = tpl.arch.empty() || std::count(tpl.arch.begin(), tpl.arch.end(), arch_) > 0;
  std::string device = workers_.empty() ? "(no GPU)" : workers_[0]->device.value("name", "");
  std::vector<codegen::CompileRequest> reqs;
  std::vector<std::pair<size_t, long long>> to_compile;
  std::vector<long long> ids(batch.size());
  std::vector<std::map<std::string, long long>> params(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    params[i] = config_params(tpl, batch[i]);
    std::string src = codegen::render(tsrc, params[i]);
    store::CandidateInfo ci;
    ci.op = op_.name;
    ci.template_name = tpl.name;
    ci.params_json = json(params[i]).dump();
    ci.source_hash = codegen::content_hash(src);
    ci.arch = arch_;
    ci.origin = lin.origin;
    ci.parent = lin.parent;
    ci.exchange_id = lin.exchange_id;
    if (!from_spec(tpl)) ci.plan_json = spec::program_to_json(tpl).dump();
    ci.run_id = run_id_;
    ids[i] = db_.add_candidate(ci, src);
    recorded_ids_.push_back(ids[i]);
    if (!applicable) {
      store::EvaluationInfo e;
      e.candidate_id = ids[i];
      e.run_id = run_id_;
      e.device = device;
      e.status = st::not_applicable;
      e.message = fmt::format("template '{}' does not support {}", tpl.name, arch_);
      e.spec_hash = spec_hash_;
      db_.add_evaluation(e);
      out[i] = {false, 0, st::not_applicable, 0};
      progress(ids[i], st::not_applicable, 0, "");
      continue;
    }
    if (!workers_.empty()) {
      if (auto prev = db_.last_evaluation(ids[i], device, spec_hash_); prev && prev->status != st::timeout &&
                                                                        prev->status != st::crashed) {
        out[i] = {prev->status == st::ok, prev->status == st::ok ? 1.0 / prev->geomean_speedup : 0,
                  prev->status == st::ok ? "" : prev->status, 0};
        progress(ids[i], prev->status, prev->geomean_speedup, "resumed");
        continue;
      }
    }
    reqs.push_back({src, fmt::format("{}_{}.cu", op_.name, tpl.name), arch_, includes_, {}});
    to_compile.push_back({i, ids[i]});
  }
  // Compile on every core and judge as the cubins arrive: the GPUs start on
  // the first variant while the rest still compile (the pipeline of issue 4).
  WorkQueue queue;
  queue.producing = reqs.size();
  std::atomic<size_t> next{0};
  auto compile_loop = [&] {
    for (size_t k; (k = next.fetch_add(1)) < reqs.size();) {
      auto [i, id] = to_compile[k];
      std::optional<Pending> ready;
      try {
        codegen::CompileResult r = compiler_.compile(reqs[k]);
        ready = after_compile(id, i, r, params[i], device, out);
      } catch (std::exception& e) {  // never let one candidate take the pool down
        out[i] = {false, 0, st::compile_error, 0};
        progress(id, st::compile_error, 0, e.what());
      }
      {
        std::lock_guard<std::mutex> l(queue.m);
        if (ready) queue.items.push_back(*ready);
        --queue.producing;
      }
      queue.cv.notify_all();
    }
  };
  unsigned compilers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(reqs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < compilers && !reqs.empty(); ++t) pool.emplace_back(compile_loop);
  if (!workers_.empty()) judge_on_workers(tpl, queue, out);
  for (auto& t : pool) t.join();
  if (ids_out) *ids_out = ids;
  return out;
}

std::optional<Session::Pending> Session::after_compile(long long id, size_t i, const codegen::CompileResult& r,
                                                       const std::map<std::string, long long>& params,
                                                       const std::string& device, std::vector<search::Outcome>& out) {
  store::CompileInfo ci{r.ok, r.seconds, r.log, r.max_registers(), 0, 0, r.key};
  for (auto& [_, kr] : r.kernels) ci.spill_bytes += kr.spill_stores + kr.spill_loads, ci.smem = std::max(ci.smem, kr.static_smem);
  db_.add_compile(id, ci);
  auto record = [&](const char* status, const std::string& msg) {
    // A candidate already judged on a GPU keeps that verdict as its latest:
    // compiling it again without a GPU adds no 'compiled' row over it.
    if (std::string(status) == st::compiled) {
      std::string prev = db_.status_of(id);
      if (prev != "compiled" && prev != "proposed" && prev != st::compile_error) {
        out[i] = {false, 0, status, r.seconds};
        progress(id, status, 0, "judged before; not re-timed without a GPU");
        return;
      }
    }
    store::EvaluationInfo e;
    e.candidate_id = id;
    e.run_id = run_id_;
    e.device = device;
    e.host = store::hostname();
    e.status = status;
    e.message = msg;
    e.spec_hash = spec_hash_;
    db_.add_evaluation(e);
    out[i] = {false, 0, status, r.seconds};
    progress(id, status, 0, msg);
  };
  if (!r.ok) {
    record(st::compile_error, r.log.substr(0, 2000));
    return std::nullopt;
  }
  if (r.spills()) {
    record(st::resource_limit, fmt::format("spills {} bytes to local memory", ci.spill_bytes));
    return std::nullopt;
  }
  if (workers_.empty()) {
    record(st::compiled, "");
    return std::nullopt;
  }
  return Pending{id, params, (compiler_.cache_dir() / "cubin" / (r.key + ".cubin")).string(), i};
}

void Session::judge_on_workers(const spec::Program& tpl, WorkQueue& queue, std::vector<search::Outcome>& out) {
  auto loop = [&](Worker& w) {
    while (true) {
      Pending p;
      {
        std::unique_lock<std::mutex> l(queue.m);
        auto idle_from = Clock::now();
        queue.cv.wait(l, [&] { return !queue.items.empty() || queue.producing == 0; });
        w.waiting_s += std::chrono::duration<double>(Clock::now() - idle_from).count();
        if (queue.items.empty()) return;
        p = queue.items.front();
        queue.items.pop_front();
      }
      evaluator::JudgeSettings js;
      js.seeds = o_.seeds;
      js.seed_base = o_.seed * 1000003ULL + static_cast<unsigned long long>(p.id);
      js.bench_seed = 7;
      js.max_seconds_per_shape = o_.max_seconds_per_shape;
      json req = {{"type", "evaluate"},
                  {"operator_dir", op_.dir.string()},
                  {"reference_cubin", ref_cubin_},
                  {"baseline_cubin", base_cubin_},
                  {"candidate", {{"cubin", p.cubin_path}, {"template", tpl.name}, {"params", p.params}}},
                  {"settings", evaluator::settings_json(js)}};
      if (!from_spec(tpl)) req["candidate"]["program"] = spec::program_to_json(tpl);
      for (int attempt = 0; attempt < 2; ++attempt) {
        double timeout;
        {
          std::lock_guard<std::mutex> l(mu_);
          timeout = timeout_for_next();
        }
        auto t0 = Clock::now();
        auto r = w.client->request(req, timeout);
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        w.busy_s += secs;
        json body;
        if (r.kind == evaluator::WorkerReply::Kind::timeout) body = {{"status", st::timeout}, {"message", r.detail}};
        else if (r.kind == evaluator::WorkerReply::Kind::crashed) body = {{"status", st::crashed}, {"message", r.detail}};
        else if (!r.body.value("ok", false)) body = {{"status", st::launch_error}, {"message", r.body.value("error", "")}};
        else body = r.body.at("report");
        body["__seconds"] = secs;
        bool retry = false;
        search::Outcome oc = record_report(p.id, body, w, attempt == 0 ? &retry : nullptr);
        if (retry) continue;  // faster than the floor allows: measure once more
        oc.seconds = secs;
        out[p.slot] = oc;
        break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (auto& w : workers_) threads.emplace_back(loop, std::ref(*w));
  for (auto& t : threads) t.join();
}

search::Outcome Session::record_report(long long id, const json& body, Worker& w, bool* retry_impossible) {
  evaluator::EvalReport rep = body.get<evaluator::EvalReport>();
  store::EvaluationInfo e;
  e.candidate_id = id;
  e.run_id = run_id_;
  e.device = w.device.value("name", "");
  e.driver = std::to_string(w.device.value("driver", 0));
  e.host = store::hostname();
  e.spec_hash = spec_hash_;
  e.status = rep.status;
  e.message = rep.message;
  e.max_rel_l2 = rep.max_rel_l2;
  e.seconds = body.value("__seconds", rep.seconds);
  e.clock_before = rep.clock_mhz_before;
  e.clock_after = rep.clock_mhz_after;
  e.report_json = json(rep).dump();
  double worst_fraction = 0, logfrac = 0;
  for (auto& t : rep.timings) {
    const spec::Shape* shape = nullptr;
    for (auto& s : op_.benchmark_shapes)
      if (s.label() == t.shape) shape = &s;
    store::ShapeRow row;
    row.shape = t.shape;
    row.cand_median_ms = t.candidate.median_ms;
    row.cand_min_ms = t.candidate.min_ms;
    row.cand_p90_ms = t.candidate.p90_ms;
    row.cand_samples = t.candidate.samples;
    row.base_median_ms = t.baseline.median_ms;
    row.base_samples = t.baseline.samples;
    row.speedup = t.speedup;
    for (auto& oe : t.after.outputs) row.rel_l2 = std::max(row.rel_l2, oe.rel_l2);
    if (shape && (copy_bw_ > 0 || tc_flops_ > 0)) {
      double fl = tc_flops_ > 0 ? op_.flops_at(*shape) / tc_flops_ : 0;
      double by = copy_bw_ > 0 ? op_.bytes_at(*shape) / copy_bw_ : 0;
      row.floor_ms = std::max(fl, by) * 1e3;
      row.roofline_fraction = t.candidate.median_ms > 0 ? row.floor_ms / t.candidate.median_ms : 0;
      worst_fraction = std::max(worst_fraction, row.roofline_fraction);
      logfrac += std::log(std::max(row.roofline_fraction, 1e-12));
    }
    e.shapes.push_back(row);
  }
  if (!rep.timings.empty()) e.roofline_fraction = std::exp(logfrac / static_cast<double>(rep.timings.size()));
  e.geomean_speedup = rep.geomean_speedup;
  if (e.status == st::ok && worst_fraction > 1.1) {
    if (retry_impossible) {
      *retry_impossible = true;
      return {};
    }
    e.status = st::impossible_speed;
    e.message = fmt::format("{:.0f}% of the roofline floor on a shape, twice: faster than physically possible",
                            worst_fraction * 100);
  }
  db_.add_evaluation(e);
  {
    std::lock_guard<std::mutex> l(mu_);
    first_request_ = false;
    if (e.status == st::ok) eval_seconds_.push_back(e.seconds);
    ++w.evaluated;
  }
  progress(id, e.status, e.geomean_speedup, e.status == st::ok ? "" : e.message);
  search::Outcome oc;
  oc.ok = e.status == st::ok;
  oc.cost = oc.ok ? 1.0 / std::max(e.geomean_speedup, 1e-12) : 0;
  oc.failure = oc.ok ? "" : e.status;
  return oc;
}

void Session::run_template(const spec::Program& tpl, size_t budget, const std::string& strategy, Lineage lin) {
  search::Space space = template_space(tpl);
  if (lin.origin.empty()) lin.origin = "search:" + strategy;
  TemplateCost cost(*this, tpl, lin);
  double left = o_.time_limit_s - std::chrono::duration<double>(Clock::now() - t0_).count();
  search::Tuning tuning(space, cost, {budget, std::max(0.0, left)});
  if (!o_.quiet)
    std::cerr << fmt::format("template '{}': {} valid configurations of {}; strategy {}, budget {}\n", tpl.name,
                             space.valid_configs().size(), space.cartesian_size(), strategy, budget);
  search::make_strategy(strategy)->run(tuning, o_.seed);
}

std::vector<Judged> Session::judged(const std::vector<long long>& ids) {
  std::vector<Judged> out;
  for (long long id : ids) {
    Judged j{id, db_.status_of(id), "", 0};
    auto evals = db_.evaluations(id);
    if (!evals.empty()) j.message = evals.back().message, j.speedup = evals.back().geomean_speedup;
    out.push_back(j);
  }
  return out;
}

std::vector<Judged> Session::evaluate(const spec::Program& prog, const std::vector<search::Config>& batch,
                                      const Lineage& lin) {
  std::vector<long long> ids;
  run_batch(prog, batch, lin, &ids);
  return judged(ids);
}

Judged Session::reject(const std::string& name, const std::string& source, const std::string& plan_json,
                       const Lineage& lin, const std::string& status, const std::string& message) {
  store::CandidateInfo ci;
  ci.op = op_.name;
  ci.template_name = name;
  ci.params_json = "{}";
  ci.source_hash = codegen::content_hash(source);
  ci.arch = arch_;
  ci.origin = lin.origin;
  ci.parent = lin.parent;
  ci.exchange_id = lin.exchange_id;
  ci.plan_json = plan_json;
  ci.run_id = run_id_;
  long long id = db_.add_candidate(ci, source);
  store::EvaluationInfo e;
  e.candidate_id = id;
  e.run_id = run_id_;
  e.device = workers_.empty() ? "(no GPU)" : workers_[0]->device.value("name", "");
  e.status = status;
  e.message = message;
  e.spec_hash = spec_hash_;
  db_.add_evaluation(e);
  progress(id, status, 0, message);
  return {id, status, message, 0};
}

std::vector<Judged> Session::tune(const spec::Program& tpl, size_t budget, const Lineage& lin) {
  if (budget == 0 || template_space(tpl).valid_configs().empty()) return {};
  size_t before = recorded_ids_.size();
  run_template(tpl, budget, strategy(), lin);
  return judged(std::vector<long long>(recorded_ids_.begin() + static_cast<std::ptrdiff_t>(before), recorded_ids_.end()));
}

std::string Session::device_summary() const {
  if (workers_.empty())
    return fmt::format("No GPU in this run ({}): candidates are compiled for {} and checked, not timed.",
                       no_gpu_reason_, arch_);
  const json& d = workers_[0]->device;
  std::string s = fmt::format("{} ({}), {} SMs, {:.0f} MiB L2, {:.0f} KiB shared memory per block (opt-in)",
                              d.value("name", "?"), arch_, d.value("sm_count", 0),
                              d.value("l2_bytes", 0.0) / 1048576.0, d.value("max_smem_optin", 0.0) / 1024.0);
  if (copy_bw_ > 0) s += fmt::format("; measured copy bandwidth {:.2f} TB/s", copy_bw_ / 1e12);
  if (tc_flops_ > 0) s += fmt::format("; bf16 tensor-core rate {:.0f} TFLOP/s", tc_flops_ / 1e12);
  return s;
}

int Session::finish() {
  double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
  double busy = 0;
  for (auto& w : workers_) busy += w->busy_s;
  double frac = workers_.empty() ? 0 : busy / (wall * static_cast<double>(workers_.size()));
  db_.finish_run(run_id_, "finished", frac);
  if (tty_ && !o_.quiet) std::cerr << "\n";
  std::string counts;
  for (auto& [k, v] : status_counts_) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v, k);
  std::cout << fmt::format("{}: {} candidates in {:.0f} s ({})\n", op_.name, done_, wall, counts);
  if (workers_.empty()) {
    std::cout << fmt::format("nothing was timed: {}. Candidates were compiled for {} and recorded as 'compiled'.\n",
                             no_gpu_reason_, arch_);
    return 0;
  }
  for (auto& w : workers_)
    std::cout << fmt::format(
        "GPU {} ({}): {} evaluated, busy {:.0f}% of wall time, waited {:.1f} s for the compiler, {} worker restarts\n",
        w->client->gpu(), w->device.value("name", ""), w->evaluated, 100.0 * w->busy_s / std::max(wall, 1e-9),
        w->waiting_s, w->client->restarts());
  if (best_id_) std::cout << fmt::format("best: candidate #{} at {:.3f}x the baseline (geomean)\n", best_id_, best_);
  else std::cout << "no candidate passed validation\n";
  return 0;
}

}  // namespace

int optimize(const OptimizeOptions& o) {
  spec::Operator op;
  fs::path dir = spec::targets_dir() / o.op;
  if (!fs::exists(dir / "spec.json")) {
    std::string known;
    for (auto& n : spec::list_operators(spec::targets_dir())) known += (known.empty() ? "" : ", ") + n;
    std::cerr << fmt::format("tessera: unknown operator '{}' (known: {})\n", o.op, known);
    return 2;
  }
  op = spec::load_operator(dir);
  std::string strategy = o.strategy.empty() ? default_strategy() : o.strategy;
  search::make_strategy(strategy);  // throws on an unknown name
  std::vector<const spec::Program*> tpls;
  for (auto& t : op.templates)
    if (o.template_name.empty() || t.name == o.template_name) tpls.push_back(&t);
  if (tpls.empty()) {
    std::cerr << fmt::format("tessera: operator '{}' has no template '{}'\n", o.op, o.template_name);
    return 2;
  }
  if (o.proposer != "search" && o.proposer != "llm" && o.proposer != "hybrid") {
    std::cerr << fmt::format("tessera: unknown proposer '{}' (search, llm, hybrid)\n", o.proposer);
    return 2;
  }
  std::unique_ptr<LlmProposer> llm;
  if (o.proposer != "search") {
    LlmOptions lo = o.llm;
    lo.quiet = lo.quiet || o.quiet;
    std::string why;
    llm = LlmProposer::create(lo, o.db, &why);
    if (!llm) {
      std::cerr << "tessera: " << why << "\n";
      return 2;
    }
  }
  store::Store db(o.db);
  Session s(o, op, db);
  std::string err;
  if (!s.start(&err)) {
    std::cerr << "tessera: " << err << "\n";
    return 1;
  }
  // The budget is shared evenly among templates (hybrid: half of it, then the model).
  size_t left = o.proposer == "search" ? o.budget : o.proposer == "hybrid" ? o.budget / 2 : 0;
  for (size_t i = 0; i < tpls.size() && left > 0; ++i) {
    size_t share = left / (tpls.size() - i);
    s.run_template(*tpls[i], share, strategy);
    left -= share;
  }
  if (llm) llm->run(s, op, db, o.budget > s.evaluated() ? o.budget - s.evaluated() : 0, o.proposer == "hybrid");
  int rc = s.finish();
  if (llm) std::cout << llm->summary() << "\n";
  return rc;
}

// --- nightly re-check (declared in agent/recheck.h) ---

void Session::rejudge(const detail::Chooser& choose, detail::RejudgeRun* res) {
  std::string device = workers_.empty() ? "(no GPU)" : workers_[0]->device.value("name", "");
  res->run_id = run_id_;
  res->device = device;
  res->no_gpu_reason = workers_.empty() ? no_gpu_reason_ : "";
  std::vector<long long> ids = choose(run_id_, device);
  total_budget_ = ids.size();
  std::vector<search::Outcome> out(ids.size());
  std::vector<codegen::CompileRequest> reqs;
  std::vector<size_t> slots;
  std::vector<const spec::Program*> tpls(ids.size(), nullptr);
  std::vector<std::map<std::string, long long>> params(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    res->items.push_back({ids[i], "", ""});
    auto c = db_.candidate(ids[i]);
    auto src = c ? db_.source(c->source_hash) : std::nullopt;
    if (!c || !src) {
      res->items[i].note = "not in the database";
      continue;
    }
    for (auto& t : op_.templates)
      if (t.name == c->template_name) tpls[i] = &t;
    if (!tpls[i]) {
      res->items[i].note = fmt::format("template '{}' is not in the spec", c->template_name);
      continue;
    }
    if (c->arch != arch_) {
      res->items[i].note = fmt::format("built for {}, this machine targets {}", c->arch, arch_);
      continue;
    }
    if (!c->params_json.empty()) params[i] = json::parse(c->params_json).get<std::map<std::string, long long>>();
    reqs.push_back({*src, fmt::format("{}_{}.cu", op_.name, tpls[i]->name), arch_, includes_, {}});
    slots.push_back(i);
  }
  auto results = compiler_.compile_many(reqs);
  std::map<const spec::Program*, std::vector<Pending>> work;
  for (size_t k = 0; k < results.size(); ++k) {
    size_t i = slots[k];
    auto& r = results[k];
    store::CompileInfo ci{r.ok, r.seconds, r.log, r.max_registers(), 0, 0, r.key};
    for (auto& [_, kr] : r.kernels) ci.spill_bytes += kr.spill_stores + kr.spill_loads, ci.smem = std::max(ci.smem, kr.static_smem);
    db_.add_compile(ids[i], ci);
    res->items[i].status = r.ok ? st::compiled : st::compile_error;
    if (!r.ok) res->items[i].note = r.log.substr(0, 2000);
    if (workers_.empty()) {
      progress(ids[i], res->items[i].status, 0, "compiled again, not timed");
      continue;  // only the compile is recorded: a stored timing is not replaced by "compiled"
    }
    if (!r.ok) {
      store::EvaluationInfo e;
      e.candidate_id = ids[i];
      e.run_id = run_id_;
      e.device = device;
      e.status = st::compile_error;
      e.message = res->items[i].note;
      e.spec_hash = spec_hash_;
      db_.add_evaluation(e);
      progress(ids[i], st::compile_error, 0, "");
      continue;
    }
    work[tpls[i]].push_back({ids[i], params[i], (compiler_.cache_dir() / "cubin" / (r.key + ".cubin")).string(), i});
  }
  for (auto& [tpl, pending] : work) {
    WorkQueue queue;  // everything is compiled already: the queue is full and closed
    queue.items.assign(pending.begin(), pending.end());
    judge_on_workers(*tpl, queue, out);
    for (auto& p : pending) res->items[p.slot].status = out[p.slot].ok ? std::string(st::ok) : out[p.slot].failure;
  }
  double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
  double busy = 0;
  for (auto& w : workers_) busy += w->busy_s;
  db_.finish_run(run_id_, "finished", workers_.empty() ? 0 : busy / (wall * static_cast<double>(workers_.size())));
  if (tty_ && !o_.quiet) std::cerr << "\n";
  for (auto& w : workers_)
    if (!o_.quiet)
      std::cerr << fmt::format("GPU {} ({}): {} re-checked, busy {:.0f}% of wall time\n", w->client->gpu(),
                               w->device.value("name", ""), w->evaluated, 100.0 * w->busy_s / std::max(wall, 1e-9));
}

int detail::rejudge_stored(const OptimizeOptions& o, const detail::Chooser& choose, detail::RejudgeRun* out,
                           std::string* err) {
  fs::path dir = spec::targets_dir() / o.op;
  if (!fs::exists(dir / "spec.json")) {
    *err = fmt::format("unknown operator '{}'", o.op);
    return 2;
  }
  store::Store db(o.db);
  Session s(o, spec::load_operator(dir), db);
  if (!s.start(err)) return 1;
  s.rejudge(choose, out);
  return 0;
}

}  // namespace tessera::agent
