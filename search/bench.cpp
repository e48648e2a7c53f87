// search/bench.cpp — runs strategies on recorded spaces and prints their scores.
#include "search/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>

#include "search/kt_cache.h"
#include "search/scoring.h"

namespace tessera::search {
namespace {

RandomBaseline baseline_of(const Simulation& sim) {
  return RandomBaseline(sim.sorted_costs(), sim.failed());
}

size_t share_of(size_t size, double fraction) {
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction * static_cast<double>(size))));
}

constexpr double kWithin3 = 1.0 / 1.03;  // optimum / best of a run within 3% of the optimum

struct RunCost {
  double cpu_ms = 0;       // the strategy's own time
  double simulated_s = 0;  // the recorded evaluations' time
};

// One run of `strategy` on a fresh replay of `sim`: the best cost after each evaluation.
std::vector<double> run_once(const Simulation& sim, const std::string& strategy, size_t budget, uint64_t seed,
                             double nothing_found, RunCost& cost, size_t parallel,
                             const std::shared_ptr<const Prior>& prior) {
  Simulation replay = sim;  // fresh call counter, shared records
  Tuning tuning(replay.space(), replay, Budget{budget, 1e30, parallel});
  tuning.set_prior(prior);
  auto start = std::chrono::steady_clock::now();
  make_strategy(strategy)->run(tuning, seed);
  cost.cpu_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  cost.simulated_s += tuning.seconds() - tuning.strategy_seconds();
  return best_so_far(tuning.history(), nothing_found);
}

// Evaluations until the best is within 3% of the optimum; budget + 1 if never.
double evals_to_within3(const std::vector<double>& best, double optimum, size_t budget) {
  for (size_t n = 0; n < best.size(); ++n)
    if (optimum / best[n] >= kWithin3) return static_cast<double>(n + 1);
  return static_cast<double>(budget + 1);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

SpaceSummary summarize(const std::string& name, const Simulation& sim) {
  RandomBaseline b = baseline_of(sim);
  SpaceSummary s;
  s.name = name;
  s.size = b.size();
  s.failed = sim.failed();
  s.cutoff = b.cutoff();
  s.budget = std::max(s.cutoff, share_of(s.size, 0.10));
  s.optimum = b.optimum();
  s.median = b.median();
  return s;
}

std::vector<StrategyScore> score_strategies(const std::string& space_name, const Simulation& sim,
                                            const std::vector<std::string>& strategies, int repeats,
                                            uint64_t first_seed, size_t parallel, std::shared_ptr<const Prior> prior) {
  RandomBaseline baseline = baseline_of(sim);
  SpaceSummary summary = summarize(space_name, sim);
  std::vector<double> curve = baseline.curve(summary.cutoff);
  std::vector<StrategyScore> rows;
  for (const std::string& name : strategies) {
    StrategyScore row;
    row.space = space_name;
    row.strategy = name;
    if (prior) row.strategy += " + warm start";
    std::vector<double> scores, to_within3;
    RunCost cost;
    size_t tenth = share_of(summary.size, 0.10);
    for (int r = 0; r < repeats; ++r) {
      uint64_t seed = first_seed + static_cast<uint64_t>(r);
      std::vector<double> best = run_once(sim, name, summary.budget, seed, baseline.worst(), cost, parallel, prior);
      scores.push_back(run_score(best, curve, baseline.optimum()));
      to_within3.push_back(evals_to_within3(best, baseline.optimum(), summary.budget));
      row.at_1pct += fraction_of_optimum(best, share_of(summary.size, 0.01), baseline);
      row.at_2pct += fraction_of_optimum(best, share_of(summary.size, 0.02), baseline);
      row.at_5pct += fraction_of_optimum(best, share_of(summary.size, 0.05), baseline);
      double f10 = fraction_of_optimum(best, share_of(summary.size, 0.10), baseline);
      row.at_10pct += f10;
      row.within3_at_10pct += f10 >= kWithin3 ? 1 : 0;
      RunCost ignored;
      std::vector<double> short_run =
          tenth == summary.budget ? best : run_once(sim, name, tenth, seed, baseline.worst(), ignored, parallel, prior);
      row.within3_budget_10pct += fraction_of_optimum(short_run, tenth, baseline) >= kWithin3 ? 1 : 0;
    }
    row.runs = repeats;
    double n = std::max(1, repeats);
    for (double s : scores) row.score += s / n;
    for (double s : scores) row.score_sd += (s - row.score) * (s - row.score) / n;
    row.score_sd = std::sqrt(row.score_sd);
    row.at_1pct /= n;
    row.at_2pct /= n;
    row.at_5pct /= n;
    row.at_10pct /= n;
    row.within3_at_10pct /= n;
    row.within3_budget_10pct /= n;
    row.ms_per_run = cost.cpu_ms / n;
    row.strategy_share = cost.cpu_ms / 1000 / std::max(1e-12, cost.cpu_ms / 1000 + cost.simulated_s);
    row.evals_to_within3 = median(to_within3);
    row.scores = std::move(scores);
    rows.push_back(row);
  }
  return rows;
}

void print_markdown(const SpaceSummary& s, const std::vector<StrategyScore>& rows, std::ostream& out) {
  out << fmt::format(
      "### {}\n\n{} configurations ({} failed), optimum {:.4g}, median {:.4g}; score averaged over "
      "budgets 1..{} (random search reaches 95% of median→optimum there); runs of {} evaluations.\n\n",
      s.name, s.size, s.failed, s.optimum, s.median, s.cutoff, s.budget);
  out << "| strategy | runs | score | ± sd | optimum/best at 1% | at 2% | at 5% | at 10% | within 3% at 10% "
         "| within 3%, budget 10% | evaluations to within 3% (median) | ms/run | strategy's share of the time |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  auto cell = [](double v, const char* f, bool known) { return known ? fmt::format(fmt::runtime(f), v) : "—"; };
  for (const StrategyScore& r : rows) {
    bool ours = !r.peer;  // kt_peer.py's runs last max(cutoff, 5%) and do not report the rest
    std::string to3 = !ours                                                ? "—"
                      : r.evals_to_within3 > static_cast<double>(s.budget) ? fmt::format("> {}", s.budget)
                                                                           : fmt::format("{:.0f}", r.evals_to_within3);
    out << fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} | {} | {} | {} | {:.0f} | {} |\n",
                       r.strategy, r.runs, r.score, r.score_sd, r.at_1pct, r.at_2pct, r.at_5pct,
                       cell(r.at_10pct, "{:.3f}", ours), cell(100 * r.within3_at_10pct, "{:.0f}%", ours),
                       cell(100 * r.within3_budget_10pct, "{:.0f}%", ours), to3, r.ms_per_run,
                       cell(100 * r.strategy_share, "{:.2f}%", ours));
  }
  out << "\n";
}

std::vector<std::string> bench_strategies(const std::vector<std::string>& only) {
  std::vector<std::string> out;
  if (only.size() == 1 && only[0] == "none") return out;  // print rows measured before (--rows)
  for (auto& n : strategy_names())
    if (only.empty() ? n != "exhaustive" : std::find(only.begin(), only.end(), n) != only.end()) out.push_back(n);
  for (auto& n : only)
    if (std::find(out.begin(), out.end(), n) == out.end()) make_strategy(n);  // throws, naming the known ones
  return out;
}

int search_bench_main(const std::vector<std::string>& caches, int repeats, std::ostream& out,
                      const std::vector<std::string>& only, size_t parallel) {
  SearchBenchOptions o;
  o.caches = caches;
  o.repeats = repeats;
  o.only = only;
  o.parallel = parallel;
  return search_bench_main(o, out);
}

int search_bench_main(const SearchBenchOptions& o, std::ostream& out) {
  if (o.caches.empty()) {
    out << "search-bench: give at least one Kernel Tuner cache file (--cache FILE)\n";
    return 1;
  }
  if (o.repeats < 1) {
    out << "search-bench: --repeats must be at least 1\n";
    return 1;
  }
  std::vector<std::string> strategies;
  std::vector<StrategyScore> every;
  try {
    strategies = bench_strategies(o.only);
    std::optional<KtCache> warm;
    if (!o.warm_from.empty()) warm = read_kt_cache(o.warm_from);
    for (const std::string& path : o.caches) {
      KtCache cache = read_kt_cache(path);
      Simulation sim = Simulation::from_kt_cache(cache);
      std::string name = path.substr(path.find_last_of('/') + 1);
      SpaceSummary summary = summarize(name, sim);
      std::vector<StrategyScore> rows;
      if (!o.rows.empty()) rows = peer_rows(o.rows, name);
      for (auto& r : score_strategies(name, sim, strategies, o.repeats, 1, o.parallel)) rows.push_back(r);
      if (warm) {
        auto prior = prior_from_kt_cache(sim.space(), *warm);
        summary.name +=
            " — warm start from " + warm->path.substr(warm->path.find_last_of('/') + 1) + ", " + prior->source();
        for (auto& r : score_strategies(name, sim, strategies, o.repeats, 1, o.parallel, prior)) rows.push_back(r);
      }
      if (!o.json.empty()) {
        std::ofstream js(o.json, std::ios::app);
        for (auto& r : rows)
          if (!r.peer) js << row_json(r) << "\n";
        if (!js) throw std::runtime_error("cannot write " + o.json);
      }
      for (auto& r : rows)
        if (r.strategy.find(" + warm start") == std::string::npos) every.push_back(r);
      if (!o.peer.empty())
        for (auto& r : peer_rows(o.peer, name)) rows.push_back(r);
      print_markdown(summary, rows, out);
      out.flush();
    }
  } catch (const std::exception& e) {
    out << "search-bench: " << e.what() << "\n";
    return 1;
  }
  if (o.leave_one_out) print_leave_one_out(every, out);
  return 0;
}

}  // namespace tessera::search
