// search/bench.cpp — runs strategies on recorded spaces and prints their scores.
#include "search/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>

#include "search/kt_cache.h"
#include "search/scoring.h"

namespace tessera::search {
namespace {

RandomBaseline baseline_of(const Simulation& sim) { return RandomBaseline(sim.sorted_costs(), sim.failed()); }

size_t share_of(size_t size, double fraction) {
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction * static_cast<double>(size))));
}

constexpr double kWithin3 = 1.0 / 1.03;  // optimum / best of a run within 3% of the optimum

// One run of `strategy` on a fresh replay of `sim`: the best cost after each evaluation.
std::vector<double> run_once(const Simulation& sim, const std::string& strategy, size_t budget, uint64_t seed,
                             double nothing_found, double& cpu_ms, size_t parallel) {
  Simulation replay = sim;  // fresh call counter, shared records
  Tuning tuning(replay.space(), replay, Budget{budget, 1e30, parallel});
  auto start = std::chrono::steady_clock::now();
  make_strategy(strategy)->run(tuning, seed);
  cpu_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return best_so_far(tuning.history(), nothing_found);
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
                                            uint64_t first_seed, size_t parallel) {
  RandomBaseline baseline = baseline_of(sim);
  SpaceSummary summary = summarize(space_name, sim);
  std::vector<double> curve = baseline.curve(summary.cutoff);
  std::vector<StrategyScore> rows;
  for (const std::string& name : strategies) {
    StrategyScore row;
    row.space = space_name;
    row.strategy = name;
    std::vector<double> scores;
    double cpu_ms = 0;
    size_t tenth = share_of(summary.size, 0.10);
    for (int r = 0; r < repeats; ++r) {
      uint64_t seed = first_seed + static_cast<uint64_t>(r);
      std::vector<double> best = run_once(sim, name, summary.budget, seed, baseline.worst(), cpu_ms, parallel);
      scores.push_back(run_score(best, curve, baseline.optimum()));
      row.at_1pct += fraction_of_optimum(best, share_of(summary.size, 0.01), baseline);
      row.at_2pct += fraction_of_optimum(best, share_of(summary.size, 0.02), baseline);
      row.at_5pct += fraction_of_optimum(best, share_of(summary.size, 0.05), baseline);
      double f10 = fraction_of_optimum(best, share_of(summary.size, 0.10), baseline);
      row.at_10pct += f10;
      row.within3_at_10pct += f10 >= kWithin3 ? 1 : 0;
      double ignored_ms = 0;
      std::vector<double> short_run =
          tenth == summary.budget ? best : run_once(sim, name, tenth, seed, baseline.worst(), ignored_ms, parallel);
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
    row.ms_per_run = cpu_ms / n;
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
         "| within 3%, budget 10% | ms/run |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const StrategyScore& r : rows)
    out << fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.0f}% | {:.0f}% | {:.0f} |\n",
                       r.strategy, r.runs, r.score, r.score_sd, r.at_1pct, r.at_2pct, r.at_5pct, r.at_10pct,
                       100 * r.within3_at_10pct, 100 * r.within3_budget_10pct, r.ms_per_run);
  out << "\n";
}

std::vector<std::string> bench_strategies(const std::vector<std::string>& only) {
  std::vector<std::string> out;
  for (auto& n : strategy_names())
    if (only.empty() ? n != "exhaustive" : std::find(only.begin(), only.end(), n) != only.end()) out.push_back(n);
  for (auto& n : only)
    if (std::find(out.begin(), out.end(), n) == out.end()) make_strategy(n);  // throws, naming the known ones
  return out;
}

int search_bench_main(const std::vector<std::string>& caches, int repeats, std::ostream& out,
                      const std::vector<std::string>& only, size_t parallel) {
  if (caches.empty()) {
    out << "search-bench: give at least one Kernel Tuner cache file (--cache FILE)\n";
    return 1;
  }
  if (repeats < 1) {
    out << "search-bench: --repeats must be at least 1\n";
    return 1;
  }
  std::vector<std::string> strategies;
  try {
    strategies = bench_strategies(only);
  } catch (const std::exception& e) {
    out << "search-bench: " << e.what() << "\n";
    return 1;
  }
  for (const std::string& path : caches) {
    try {
      KtCache cache = read_kt_cache(path);
      Simulation sim = Simulation::from_kt_cache(cache);
      std::string name = path.substr(path.find_last_of('/') + 1);
      SpaceSummary summary = summarize(name, sim);
      print_markdown(summary, score_strategies(name, sim, strategies, repeats, 1, parallel), out);
      out.flush();
    } catch (const std::exception& e) {
      out << "search-bench: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace tessera::search
