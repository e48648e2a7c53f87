// agent/session.cpp — a session's life: start (workers, reference and baseline
// cubins, ceilings, the run row), one batch of template configurations through the
// compile pipeline, progress, the Loop interface for proposers, and the summary.
#include "agent/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "agent/ceilings.h"
#include "agent/recorded.h"
#include "agent/template_space.h"
#include "codegen/render.h"
#include "evaluator/driver.h"
#include "evaluator/python_reference.h"
#include "evaluator/report.h"
#include "evaluator/worker.h"
#include "search/neighbourhood.h"
#include "search/strategy.h"
#include "store/report_queries.h"

namespace tessera::agent {

// Per template (name and source file: an LLM program may reuse a spec template's name).
static std::string template_key(const spec::Program& tpl) {
  return tpl.name + '\n' + tpl.source.string();
}

namespace fs = std::filesystem;
namespace st = evaluator::status;

std::string spec_hash(const spec::Operator& op) {
  std::string all = codegen::read_file((op.spec_dir / "spec.json").string());
  if (op.spec_dir != op.dir) all += codegen::read_file((op.dir / "spec.json").string());  // a suite's base
  if (!op.reference.source.empty()) all += codegen::read_file(op.reference.source.string());
  if (!op.baseline.source.empty()) all += codegen::read_file(op.baseline.source.string());
  for (auto* py : {&op.reference.python, &op.baseline.python})
    if (!py->empty()) all += codegen::read_file(py->string());
  return codegen::content_hash(all);
}

// Test seam: $TESSERA_WORKER_CMD replaces the worker executable and
// $TESSERA_WORKER_GPUS says how many GPUs it serves, so the agent's GPU path
// (pipeline, timeouts, crashes, several workers) is tested without a GPU.
static std::string fake_worker_cmd() {
  const char* fake = std::getenv("TESSERA_WORKER_CMD");
  return fake && *fake ? fake : "";
}

// The GPUs there are, counted without a context (kernels only ever run in workers);
// *why says why there are none.
static int count_gpus(std::string* why) {
  if (!fake_worker_cmd().empty()) {
    const char* g = std::getenv("TESSERA_WORKER_GPUS");
    return g ? std::atoi(g) : 1;
  }
  auto drv = evaluator::Driver::load(why);
  if (!drv) return 0;
  int n = 0;
  try {
    n = evaluator::device_count(*drv);
  } catch (std::exception& e) {
    *why = e.what();
  }
  if (n == 0 && why->empty()) *why = "the driver sees no GPU";
  return n;
}

// The ordinals --gpus names, each checked against the GPUs there are; sets
// no_gpu_reason_ when there are none to use.
bool Session::choose_gpus(std::vector<int>* ordinals, std::string* err) {
  if (o_.gpus.kind == GpuSelection::Kind::none) {
    no_gpu_reason_ = "--gpus none";
    return true;
  }
  std::string why;
  int n = count_gpus(&why);
  if (o_.gpus.kind == GpuSelection::Kind::all) {
    for (int i = 0; i < n; ++i) ordinals->push_back(i);
  } else {
    for (int k : o_.gpus.ordinals) {
      if (k >= n) {
        *err = fmt::format("--gpus: GPU {} does not exist ({} found{})", k, n, why.empty() ? "" : ": " + why);
        return false;
      }
      ordinals->push_back(k);
    }
  }
  if (ordinals->empty()) no_gpu_reason_ = why.empty() ? "no GPU found" : why;
  return true;
}

// One worker process per ordinal, each greeted once (its device description).
bool Session::start_workers(const std::vector<int>& ordinals, std::string* err) {
  std::string fake = fake_worker_cmd();
  std::string worker_exe = fake.empty() ? evaluator::self_exe() : fake;
  fs::path logdir = fs::path(o_.db).parent_path() / "logs";
  std::error_code ec;
  fs::create_directories(logdir, ec);
  for (int g : ordinals) {
    auto w = std::make_unique<Worker>();
    w->client = std::make_unique<evaluator::WorkerClient>(worker_exe, g,
                                                          (logdir / fmt::format("worker-gpu{}.log", g)).string());
    auto r = w->client->request({{"type", "hello"}}, 120);
    if (r.kind != evaluator::WorkerReply::Kind::ok || !r.body.value("ok", false)) {
      *err = fmt::format("worker for GPU {} did not start: {}", g,
                         r.kind == evaluator::WorkerReply::Kind::ok ? r.body.value("error", "?") : r.detail);
      return false;
    }
    w->device = r.body.at("device");
    workers_.push_back(std::move(w));
  }
  return true;
}

// --arch, else the first GPU's, else sm_90a; the workers go when it is not the GPU's.
bool Session::choose_arch(std::string* err) {
  arch_ = o_.arch;
  if (arch_.empty()) arch_ = workers_.empty() ? "sm_90a" : workers_[0]->device.value("arch", "sm_90a");
  if (!codegen::arch_supported(arch_)) {
    *err = fmt::format("--arch {}: not an architecture NVRTC targets (try sm_90a, sm_100a, sm_103a)", arch_);
    return false;
  }
  if (!workers_.empty() && arch_ != workers_[0]->device.value("arch", "")) {
    no_gpu_reason_ =
        fmt::format("--arch {} is not the GPU's architecture ({})", arch_, workers_[0]->device.value("arch", "?"));
    workers_.clear();
  }
  return true;
}

// A Python reference (an imported operator): says now, not once per candidate, when the
// workers' reference process cannot start (no Python, no torch, no CUDA in torch).
bool Session::check_python_reference(std::string* err) const {
  if (op_.reference.python.empty() || workers_.empty() || !fake_worker_cmd().empty()) return true;
  std::string why;
  int ordinal = workers_[0]->device.value("ordinal", 0);
  if (evaluator::PythonReference::start(fmt::format("cuda:{}", ordinal), &why)) return true;
  *err = fmt::format("{} is judged by its definition's Python run ({}), and the reference process cannot start: {}",
                     op_.name, op_.reference.python.string(), why);
  return false;
}

// The reference's and the baseline's cubins for this architecture (none for a
// builtin or a Python one: the worker's reference process runs that).
bool Session::compile_reference_and_baseline(std::string* err) {
  for (auto* p : {&op_.reference, &op_.baseline}) {
    if (!p->builtin.empty() || !p->python.empty()) continue;
    codegen::CompileRequest req{
        codegen::read_file(p->source.string()), p->source.filename().string(), arch_, includes_, {}};
    auto res = compiler_.compile(req);
    if (!res.ok) {
      *err = fmt::format("{} of {} does not compile for {}:\n{}",
                         p == &op_.reference ? "the reference" : "the baseline", op_.name, arch_, res.log);
      return false;
    }
    (p == &op_.reference ? ref_cubin_ : base_cubin_) = compiler_.cubin_path(res.key).string();
  }
  return true;
}

// The device's ceilings (copy bandwidth, bf16 tensor-core rate): stored ones, else
// measured by the first worker and stored; none when that fails.
void Session::load_ceilings(const std::string& device, const std::string& driver) {
  auto c = db_.ceilings(device, driver);
  if (!c) {
    if (!o_.quiet) std::cerr << "measuring the device's ceilings (copy bandwidth, bf16 tensor-core rate)...\n";
    c = measure_ceilings(*workers_[0]->client, db_, device, driver);
  }
  if (c) copy_bw_ = c->copy_bytes_per_s, tc_flops_ = c->bf16_flops_per_s;
}

// Idle cores compile what the search will probably ask for next (speculator.h);
// TESSERA_SPECULATE=0 turns it off (to measure what it gives).
void Session::start_speculator() {
  const char* spec_env = std::getenv("TESSERA_SPECULATE");
  if (spec_env && std::string(spec_env) == "0") return;
  speculator_ = std::make_unique<Speculator>([this](const codegen::CompileRequest& r) { compiler_.compile(r); },
                                             std::max(1u, std::thread::hardware_concurrency() / 2));
}

// The run's row: what was asked for and where it runs.
void Session::begin_run(const std::string& device) {
  store::RunInfo ri{op_.name,
                    o_.strategy.empty() ? default_strategy() : o_.strategy,
                    proposer_name(o_.proposer),
                    arch_,
                    workers_.empty() ? "(no GPU)" : device,
                    store::hostname(),
                    json{{"seed", o_.seed},
                         {"gpus", gpu_selection_name(o_.gpus)},
                         {"template", o_.template_name},
                         {"proposer", proposer_name(o_.proposer)},
                         {"stopping_rule", evaluator::stopping_criterion_name(o_.stopping_rule)}}
                        .dump(),
                    static_cast<long long>(o_.budget)};
  run_id_ = db_.begin_run(ri);
  total_budget_ = o_.budget;
}

store::CompileInfo compile_info(const codegen::CompileResult& r) {
  store::CompileInfo ci{r.ok, r.seconds, r.log, r.max_registers(), 0, 0, r.key};
  for (auto& [_, kr] : r.kernels)
    ci.spill_bytes += kr.spill_stores + kr.spill_loads, ci.smem = std::max(ci.smem, kr.static_smem);
  return ci;
}

bool Session::start(std::string* err) {
  spec_hash_ = spec_hash(op_);
  includes_ = {op_.dir, spec::targets_dir() / "common"};
  std::vector<int> ordinals;
  if (!choose_gpus(&ordinals, err) || !start_workers(ordinals, err) || !choose_arch(err)) return false;
  if (!check_python_reference(err) || !compile_reference_and_baseline(err)) return false;
  std::string device = workers_.empty() ? "" : workers_[0]->device.value("name", "");
  if (!workers_.empty()) {
    std::string driver = std::to_string(workers_[0]->device.value("driver", 0));
    load_ceilings(device, driver);
    baseline_prior_ = db_.baseline_medians(op_.name, device, spec_hash_);
    start_speculator();
  }
  begin_run(device);
  return true;
}

std::string Session::device_name() const {
  return workers_.empty() ? "(no GPU)" : workers_[0]->device.value("name", "");
}

store::EvaluationInfo Session::verdict(long long id, const std::string& device, const std::string& status,
                                       const std::string& message) const {
  store::EvaluationInfo e;
  e.candidate_id = id;
  e.run_id = run_id_;
  e.device = device;
  e.host = store::hostname();
  e.status = status;
  e.message = message;
  e.spec_hash = spec_hash_;
  return e;
}

// Until the worker announces its first step (operator, reference and baseline
// loaded, with the worker's start when it was just restarted): nothing of the
// candidate's runs yet. Each step then brings its own limit (docs/statuses.md).
double Session::timeout_for_next() const {
  if (o_.request_timeout_s > 0) return o_.request_timeout_s;
  return kStartAllowanceS;
}

void Session::progress(long long id, const std::string& status, double speedup, const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  if (note == "resumed") ++resumed_;
  ++status_counts_[status];
  if (status == st::ok && speedup > best_) best_ = speedup, best_id_ = id;
  if (o_.quiet) return;
  double el = std::chrono::duration<double>(Clock::now() - t0_).count();
  // Verdicts answered from stored history cost no budget, so they are not counted
  // against it on the line either ("[9/8]" read as overspending).
  std::string count =
      note == "resumed" ? std::string("resumed") : fmt::format("{}/{}", done_ - resumed_, total_budget_);
  std::string line = fmt::format("[{}] #{} {}{}{} | best {} | {:.0f}s", count, id, status,
                                 status == st::ok ? fmt::format(" {:.3f}x", speedup) : "",
                                 note.empty() || note == "resumed" ? "" : " (" + note.substr(0, 60) + ")",
                                 best_id_ ? fmt::format("#{} {:.3f}x", best_id_, best_) : "-", el);
  if (tty_)
    std::cerr << "\r\033[K" << line << std::flush;
  else
    std::cerr << line << "\n";
}

std::vector<search::Outcome> Session::run_batch(const spec::Program& tpl, const std::vector<search::Config>& batch,
                                                const Lineage& lin, std::vector<long long>* ids_out) {
  std::vector<search::Outcome> out(batch.size());
  std::string tsrc = codegen::read_file(tpl.source.string());
  bool applicable = tpl.arch.empty() || std::count(tpl.arch.begin(), tpl.arch.end(), arch_) > 0;
  std::string device = device_name();
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
    // the plan it is judged with travels with it (a re-check or an export after the
    // template's plan changed launches it as judged); a proposed program's whole plan
    ci.plan_json = from_spec(tpl) ? spec::judged_plan(tpl, params[i]).dump() : spec::program_to_json(tpl).dump();
    ci.run_id = run_id_;
    ids[i] = db_.add_candidate(ci, src);
    recorded_ids_.push_back(ids[i]);
    if (!applicable) {
      db_.add_evaluation(verdict(ids[i], device, st::not_applicable,
                                 fmt::format("template '{}' does not support {}", tpl.name, arch_)));
      out[i] = {false, 0, st::not_applicable, 0};
      progress(ids[i], st::not_applicable, 0, "");
      continue;
    }
    if (!workers_.empty() && resume(ids[i], tpl, batch[i], device, &out[i])) continue;
    reqs.push_back({src, fmt::format("{}_{}.cu", op_.name, tpl.name), arch_, includes_, {}});
    to_compile.push_back({i, ids[i]});
  }
  speculate_around_best(tpl);
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
  unsigned compilers =
      std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(reqs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < compilers && !reqs.empty(); ++t) pool.emplace_back(compile_loop);
  if (!workers_.empty()) judge_on_workers(tpl, queue, out, &batch);
  for (auto& t : pool) t.join();
  if (ids_out) *ids_out = ids;
  return out;
}

bool Session::resume(long long id, const spec::Program& tpl, const search::Config& c, const std::string& device,
                     search::Outcome* out) {
  auto prev = db_.last_evaluation(id, device, spec_hash_);
  if (!prev || prev->status == st::timeout || prev->status == st::crashed || prev->status == st::protocol_error)
    return false;
  *out = {prev->status == st::ok, prev->status == st::ok ? 1.0 / prev->geomean_speedup : 0,
          prev->status == st::ok ? "" : prev->status, 0, true};
  progress(id, prev->status, prev->geomean_speedup, "resumed");
  if (prev->status == st::ok) note_best(tpl, c, out->cost);
  return true;
}

// The rest of the current best's neighbourhood is the likeliest next batch when
// this one brings no improvement: have it compiled while this one is judged.
void Session::speculate_around_best(const spec::Program& tpl) {
  if (!speculator_) return;
  std::optional<search::Config> best;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = template_best_.find(template_key(tpl)); it != template_best_.end()) best = it->second.second;
  }
  if (best) speculate_around(tpl, *best);
}

std::optional<Session::Pending> Session::after_compile(long long id, size_t i, const codegen::CompileResult& r,
                                                       const std::map<std::string, long long>& params,
                                                       const std::string& device, std::vector<search::Outcome>& out) {
  {
    std::lock_guard<std::mutex> l(mu_);
    ++compiles_;
    cache_hits_ += r.cache_hit ? 1 : 0;
  }
  store::CompileInfo ci = compile_info(r);
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
    db_.add_evaluation(verdict(id, device, status, msg));
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
  return Pending{id, params, compiler_.cubin_path(r.key).string(), i};
}

bool Session::note_best(const spec::Program& tpl, const search::Config& c, double cost) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = template_best_.find(template_key(tpl));
  if (it == template_best_.end() || cost < it->second.first) {
    template_best_[template_key(tpl)] = {cost, c};
    return true;
  }
  return cost < it->second.first * Speculator::kNearBest;
}

void Session::speculate_around(const spec::Program& tpl, const search::Config& at) {
  if (!speculator_) return;
  try {  // a guess must never take a run down (this runs on the judging threads)
    speculate_around_or_throw(tpl, at);
  } catch (const std::exception&) {
  }
}

void Session::speculate_around_or_throw(const spec::Program& tpl, const search::Config& at) {
  const search::Space* space;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = spaces_.find(template_key(tpl));
    if (it == spaces_.end()) it = spaces_.emplace(template_key(tpl), template_space(tpl)).first;
    space = &it->second;
  }
  // Greedy local search's tiers, in its order: adjacent steps and exchanges, then
  // the rest of the hamming neighbourhood.
  std::vector<search::Config> near = search::neighbours(*space, at, search::Neighbourhood::adjacent);
  for (auto& c : search::exchanges(*space, at)) near.push_back(std::move(c));
  for (auto& c : search::neighbours(*space, at, search::Neighbourhood::hamming))
    if (std::find(near.begin(), near.end(), c) == near.end()) near.push_back(std::move(c));
  std::string tsrc = codegen::read_file(tpl.source.string());
  std::vector<codegen::CompileRequest> reqs;
  for (auto& c : near)
    reqs.push_back({codegen::render(tsrc, config_params(tpl, c)),
                    fmt::format("{}_{}.cu", op_.name, tpl.name),
                    arch_,
                    includes_,
                    {}});
  speculator_->offer(reqs);
}

void Session::run_template(const spec::Program& tpl, size_t budget, const std::string& strategy, Lineage lin) {
  search::Space space = template_space(tpl);
  if (lin.origin.empty()) lin.origin = "search:" + strategy;
  TemplateCost cost(*this, tpl, lin);
  double left = o_.time_limit_s - std::chrono::duration<double>(Clock::now() - t0_).count();
  search::Tuning tuning(space, cost, {budget, std::max(0.0, left), std::max<size_t>(1, workers_.size())});
  if (o_.warm_start && !workers_.empty())  // history of other GPU models orders the first candidates
    tuning.set_prior(warm_start_prior(db_, op_.name, tpl, space, workers_[0]->device.value("name", ""), o_.quiet));
  if (!o_.quiet)
    std::cerr << fmt::format("template '{}': {} valid configurations of {}; strategy {}, budget {}\n", tpl.name,
                             space.valid_configs().size(), space.cartesian_size(), strategy, budget);
  search::make_strategy(strategy)->run(tuning, o_.seed);
}

std::vector<Judged> Session::judged(const std::vector<long long>& ids) {
  std::vector<Judged> out;
  for (long long id : ids) {
    Judged j{id, db_.status_of(id), "", 0, ""};
    auto evals = db_.evaluations(id);
    if (!evals.empty()) {
      j.message = evals.back().message, j.speedup = evals.back().geomean_speedup;
      j.printed = evals.back().printed;
    }
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
  db_.add_evaluation(verdict(id, device_name(), status, message));
  progress(id, status, 0, message);
  return {id, status, message, 0};
}

std::vector<Judged> Session::tune(const spec::Program& tpl, size_t budget, const Lineage& lin) {
  if (budget == 0 || template_space(tpl).valid_configs().empty()) return {};
  size_t before = recorded_ids_.size();
  run_template(tpl, budget, strategy(), lin);
  return judged(
      std::vector<long long>(recorded_ids_.begin() + static_cast<std::ptrdiff_t>(before), recorded_ids_.end()));
}

std::string Session::device_summary() const {
  if (workers_.empty())
    return fmt::format("No GPU in this run ({}): candidates are compiled for {} and checked, not timed.",
                       no_gpu_reason_, arch_);
  const json& d = workers_[0]->device;
  std::string s = fmt::format("{} ({}), {} SMs, {:.0f} MiB L2, {:.0f} KiB shared memory per block (opt-in)",
                              d.value("name", "?"), arch_, d.value("sm_count", 0), d.value("l2_bytes", 0.0) / 1048576.0,
                              d.value("max_smem_optin", 0.0) / 1024.0);
  if (copy_bw_ > 0) s += fmt::format("; measured copy bandwidth {:.2f} TB/s", copy_bw_ / 1e12);
  if (tc_flops_ > 0) s += fmt::format("; bf16 tensor-core rate {:.0f} TFLOP/s", tc_flops_ / 1e12);
  return s;
}

json per_gpu_figures(const std::vector<std::unique_ptr<Worker>>& workers, double wall_s) {
  json out = json::array();
  for (auto& w : workers)
    out.push_back({{"gpu", w->client->gpu()},
                   {"name", w->device.value("name", "")},
                   {"evaluated", w->evaluated},
                   {"busy", wall_s > 0 ? w->busy_s / wall_s : 0.0},
                   {"waited_s", w->waiting_s},
                   {"tail_s", w->tail_s}});
  return out;
}

double Session::close_run() {
  double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
  double busy = 0;
  for (auto& w : workers_) busy += w->busy_s;
  double frac = workers_.empty() ? 0 : busy / (wall * static_cast<double>(workers_.size()));
  db_.finish_run(run_id_, "finished", frac);
  if (!workers_.empty()) db_.set_run_per_gpu(run_id_, per_gpu_figures(workers_, wall));
  if (tty_ && !o_.quiet) std::cerr << "\n";
  return wall;
}

static size_t distinct_candidates(const std::vector<store::ShapeChampion>& champions) {
  std::set<long long> ids;
  for (const auto& c : champions) ids.insert(c.candidate_id);
  return ids.size();
}

int Session::finish() {
  double wall = close_run();
  std::string counts;
  for (auto& [k, v] : status_counts_) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", v, k);
  std::cout << fmt::format(
      "{}: {} candidates in {:.0f} s ({}){}\n", op_.name, done_, wall, counts,
      resumed_ ? fmt::format("; {} of them resumed from stored verdicts, not counted in the budget", resumed_) : "");
  if (workers_.empty()) {
    std::cout << fmt::format("nothing was timed: {}. Candidates were compiled for {} and recorded as 'compiled'.\n",
                             no_gpu_reason_, arch_);
    return 0;
  }
  for (auto& w : workers_)
    std::cout << fmt::format(
        "GPU {} ({}): {} evaluated, busy {:.0f}% of wall time, waited {:.1f} s for the compiler{}, {} worker "
        "restarts\n",
        w->client->gpu(), w->device.value("name", ""), w->evaluated, 100.0 * w->busy_s / std::max(wall, 1e-9),
        w->waiting_s,
        workers_.size() > 1 ? fmt::format(" and {:.1f} s for the other GPUs at batch ends", w->tail_s) : "",
        w->client->restarts());
  if (compiles_)
    std::cout << fmt::format("compiler: {} of {} compiles were cache hits{}\n", cache_hits_, compiles_,
                             speculator_ ? fmt::format(" ({} compiled ahead by the speculator, {} offered)",
                                                       speculator_->compiled(), speculator_->offered())
                                         : std::string(" (speculator off)"));
  if (best_id_) {
    std::cout << fmt::format("best: candidate #{} at {:.3f}x the baseline (geomean)\n", best_id_, best_);
    // Both figures (issue 33): a shape's champion may not be the best over all shapes, and
    // `export --per-shape` serves each shape by its own (over every run in the database).
    // (on the GPU model of the latest evaluation, this run's, where the history has several)
    const auto champions = store::per_shape_champions(
        db_.leaderboard(op_.name, "ok", 1 << 30, store::leaderboard_device(db_, op_.name, "", nullptr)));
    if (champions.size() > 1)
      std::cout << fmt::format(
          "per-shape champions: {:.3f}x geomean over {} shapes, from {} candidates of this database "
          "(`leaderboard --per-shape`; served by `export --per-shape`)\n",
          store::per_shape_geomean(champions), champions.size(), distinct_candidates(champions));
  } else
    std::cout << "no candidate passed validation\n";
  return 0;
}

}  // namespace tessera::agent
