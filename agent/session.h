// agent/session.h — one optimize (or re-check) session: the workers, the
// compile pipeline, the store bookkeeping, progress and the summary. Used by
// agent/optimize.cpp (the loop), agent/proposer_llm.cpp (through Loop) and the
// nightly re-check. Internal to agent/.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/optimize.h"
#include "agent/proposer_llm.h"
#include "agent/recheck.h"
#include "agent/speculator.h"
#include "codegen/compiler.h"
#include "evaluator/worker_client.h"
#include "search/cost.h"
#include "search/space.h"
#include "spec/spec.h"
#include "store/store.h"

namespace tessera::agent {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Worker {
  std::unique_ptr<evaluator::WorkerClient> client;
  json device;
  double busy_s = 0;
  double waiting_s = 0;  // idle while every candidate in hand was still compiling
  double tail_s = 0;     // idle at the end of batches while other GPUs still judged theirs
  int evaluated = 0;
};

// One {"gpu", "name", "evaluated", "busy", "waited_s", "tail_s"} per worker, for runs.settings.
json per_gpu_figures(const std::vector<std::unique_ptr<Worker>>& workers, double wall_s);

// A compile's row in the store: spill bytes (stores and loads) summed over the kernels,
// the largest static shared memory of one.
store::CompileInfo compile_info(const codegen::CompileResult& r);

// Hash of what makes results comparable: the spec, its reference and baseline.
std::string spec_hash(const spec::Operator& op);

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
  Judged reject(const std::string& name, const std::string& source, const std::string& plan_json, const Lineage& lin,
                const std::string& status, const std::string& message) override;
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
  // The steps of start(), in order.
  bool choose_gpus(std::vector<int>* ordinals, std::string* err);
  bool start_workers(const std::vector<int>& ordinals, std::string* err);
  bool choose_arch(std::string* err);
  bool check_python_reference(std::string* err) const;
  bool compile_reference_and_baseline(std::string* err);
  void load_ceilings(const std::string& device, const std::string& driver);
  void start_speculator();
  void begin_run(const std::string& device);
  // The device name verdicts are recorded under: the first GPU's, "(no GPU)" without one.
  std::string device_name() const;
  // A verdict of this run on `device` under this spec version, from this host; the
  // judge's figures (timings, clocks, driver) are the caller's to add.
  store::EvaluationInfo verdict(long long id, const std::string& device, const std::string& status,
                                const std::string& message) const;
  // A verdict stored for candidate `id` on `device` under this spec version stands for
  // this run's (a timeout, crash or protocol error is judged again): true, and *out set.
  bool resume(long long id, const spec::Program& tpl, const search::Config& c, const std::string& device,
              search::Outcome* out);
  void speculate_around_best(const spec::Program& tpl);
  // Marks the run finished with its GPU-busy fraction and per-GPU figures; returns its wall time (s).
  double close_run();
  std::optional<Pending> after_compile(long long id, size_t i, const codegen::CompileResult& r,
                                       const std::map<std::string, long long>& params, const std::string& device,
                                       std::vector<search::Outcome>& out);
  // batch: the configurations behind `out` (template search), so that the best and
  // near-best ones can be speculated around; null for re-judging stored candidates.
  void judge_on_workers(const spec::Program& tpl, WorkQueue& queue, std::vector<search::Outcome>& out,
                        const std::vector<search::Config>* batch = nullptr);
  // Offers the neighbours of `at` (the moves local search makes next) to the speculator.
  void speculate_around(const spec::Program& tpl, const search::Config& at);
  void speculate_around_or_throw(const spec::Program& tpl, const search::Config& at);
  // Remembers c as the template's best when its cost beats it; true when c is the
  // best or within Speculator::kNearBest of it (worth speculating around).
  bool note_best(const spec::Program& tpl, const search::Config& c, double cost);
  search::Outcome record_report(long long id, const json& reply_or_error, Worker& w, bool* retry_impossible);
  void progress(long long id, const std::string& status, double speedup, const std::string& note);
  // The wall-clock allowance of a request until the worker's first step.
  static constexpr double kStartAllowanceS = 60;
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
  std::map<std::string, double> baseline_prior_;  // the baseline's usual median per shape (store)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::filesystem::path> includes_;
  long long run_id_ = 0;
  double copy_bw_ = 0, tc_flops_ = 0;
  Clock::time_point t0_;
  std::mutex mu_;
  size_t done_ = 0, total_budget_ = 0;
  size_t resumed_ = 0;  // candidates answered from stored verdicts (free)
  double best_ = 0;
  long long best_id_ = 0;
  std::map<std::string, int> status_counts_;
  bool tty_ = isatty(2);
  std::vector<long long> recorded_ids_;  // every candidate run_batch recorded, in order
  std::map<std::string, std::pair<double, search::Config>> template_best_;  // cost, config
  std::map<std::string, search::Space> spaces_;                             // per template (speculation)
  size_t cache_hits_ = 0, compiles_ = 0;    // real compiles answered by the on-disk cache, of all
  std::unique_ptr<Speculator> speculator_;  // declared after compiler_: stops before it goes
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

}  // namespace tessera::agent
