// agent/session_judging.cpp — handing compiled candidates to the workers (one
// thread per GPU, fed by the compile pipeline) and turning their reports into
// stored evaluations: roofline fractions, the impossible-speed rule, timeouts and crashes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <thread>

#include "agent/session.h"
#include "agent/template_space.h"
#include "codegen/render.h"
#include "evaluator/driver.h"
#include "evaluator/report.h"
#include "evaluator/worker.h"
#include "search/strategy.h"

namespace tessera::agent {

namespace fs = std::filesystem;
namespace st = evaluator::status;

namespace {

// The report a worker's answer stands for; only a well-formed reply carries the judge's.
json report_of(const evaluator::WorkerReply& r) {
  using Kind = evaluator::WorkerReply::Kind;
  if (r.kind == Kind::timeout) return {{"status", st::timeout}, {"message", r.detail}};
  if (r.kind == Kind::crashed) return {{"status", st::crashed}, {"message", r.detail}};
  if (r.kind == Kind::protocol_error) return {{"status", st::protocol_error}, {"message", r.detail}};
  if (!r.body.value("ok", false) || !r.body.contains("report") || !r.body.at("report").is_object())
    return {{"status", st::launch_error}, {"message", r.body.value("error", "the worker's reply holds no report")}};
  return r.body.at("report");
}

}  // namespace

void Session::judge_on_workers(const spec::Program& tpl, WorkQueue& queue, std::vector<search::Outcome>& out,
                               const std::vector<search::Config>* batch) {
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
      js.graph_below_ms = o_.graph_below_ms;
      js.l2_flush = o_.l2_flush;
      js.stopping_rule = o_.stopping_rule;
      js.baseline_prior_ms = baseline_prior_;
      json req = {{"type", "evaluate"},
                  {"operator_dir", op_.spec_dir.string()},
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
        auto r = w.client->request(req, timeout, /*follow_steps=*/true, o_.request_timeout_s);
        double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        w.busy_s += secs;
        json body = report_of(r);
        body["__seconds"] = secs;
        body["__printed"] = r.printed;
        body["__printed_bytes"] = r.printed_bytes;
        bool retry = false;
        search::Outcome oc = record_report(p.id, body, w, attempt == 0 ? &retry : nullptr);
        if (retry) continue;  // faster than the floor allows: measure once more
        oc.seconds = secs;
        out[p.slot] = oc;
        // A new best, or close to it: its neighbours are what local search may ask
        // for next; compile them while the rest of this batch is judged.
        if (batch && oc.ok && note_best(tpl, (*batch)[p.slot], oc.cost)) speculate_around(tpl, (*batch)[p.slot]);
        break;
      }
    }
  };
  // Each worker's end of the batch, to count how long it then waited for the others.
  std::vector<Clock::time_point> ended(workers_.size(), Clock::now());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < workers_.size(); ++k)
    threads.emplace_back([&, k] {
      loop(*workers_[k]);
      ended[k] = Clock::now();
    });
  for (auto& t : threads) t.join();
  auto all_done = Clock::now();
  for (size_t k = 0; k < workers_.size(); ++k)
    workers_[k]->tail_s += std::chrono::duration<double>(all_done - ended[k]).count();
}

search::Outcome Session::record_report(long long id, const json& body, Worker& w, bool* retry_impossible) {
  evaluator::EvalReport rep = body.get<evaluator::EvalReport>();
  store::EvaluationInfo e = verdict(id, w.device.value("name", ""), rep.status, rep.message);
  e.driver = std::to_string(w.device.value("driver", 0));
  e.max_rel_l2 = rep.max_rel_l2;
  e.seconds = body.value("__seconds", rep.seconds);
  e.printed = body.value("__printed", "");
  e.printed_bytes = body.value("__printed_bytes", 0LL);
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
    ++w.evaluated;
  }
  progress(id, e.status, e.geomean_speedup, e.status == st::ok ? "" : e.message);
  search::Outcome oc;
  oc.ok = e.status == st::ok;
  oc.cost = oc.ok ? 1.0 / std::max(e.geomean_speedup, 1e-12) : 0;
  oc.failure = oc.ok ? "" : e.status;
  return oc;
}

}  // namespace tessera::agent
