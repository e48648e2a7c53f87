// search/bench_report.cpp — what search-bench prints beside the per-space tables:
// Kernel Tuner's rows (read from kt_peer.py --json) and the leave-one-space-out choice.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <stdexcept>

#include "search/bench.h"
#include "search/strategy.h"

namespace tessera::search {

using nlohmann::json;

std::vector<StrategyScore> peer_rows(const std::string& peer_jsonl, const std::string& space_name) {
  std::ifstream in(peer_jsonl);
  if (!in) throw std::runtime_error("cannot read Kernel Tuner results " + peer_jsonl);
  std::map<std::string, StrategyScore> latest;  // a strategy measured again: the later line wins
  std::vector<std::string> order;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: not a kt_peer.py --json line ({})", peer_jsonl, n, e.what()));
    }
    if (j.value("space", "") != space_name) continue;
    StrategyScore r;
    r.space = space_name;
    r.peer = j.value("tool", "") != "tessera";
    r.strategy =
        r.peer ? "Kernel Tuner " + j.value("kernel_tuner", std::string("?")) + " " + j.at("strategy").get<std::string>()
               : j.at("strategy").get<std::string>();
    r.scores = j.at("scores").get<std::vector<double>>();
    r.runs = static_cast<int>(r.scores.size());
    double m = static_cast<double>(std::max<size_t>(1, r.scores.size()));
    for (double s : r.scores) r.score += s / m;
    for (double s : r.scores) r.score_sd += (s - r.score) * (s - r.score) / m;
    r.score_sd = std::sqrt(r.score_sd);
    r.at_1pct = j.value("at_1pct", 0.0);
    r.at_2pct = j.value("at_2pct", 0.0);
    r.at_5pct = j.value("at_5pct", 0.0);
    r.ms_per_run = j.value("ms_per_run", 0.0);
    r.at_10pct = j.value("at_10pct", 0.0);
    r.within3_at_10pct = j.value("within3_at_10pct", 0.0);
    r.within3_budget_10pct = j.value("within3_budget_10pct", 0.0);
    r.evals_to_within3 = j.value("evals_to_within3", 0.0);
    r.strategy_share = j.value("strategy_share", 0.0);
    if (!latest.count(r.strategy)) order.push_back(r.strategy);
    latest[r.strategy] = r;
  }
  std::vector<StrategyScore> out;
  for (auto& s : order) out.push_back(latest[s]);
  return out;
}

std::string row_json(const StrategyScore& r) {
  return json{{"tool", "tessera"},
              {"space", r.space},
              {"strategy", r.strategy},
              {"scores", r.scores},
              {"at_1pct", r.at_1pct},
              {"at_2pct", r.at_2pct},
              {"at_5pct", r.at_5pct},
              {"at_10pct", r.at_10pct},
              {"within3_at_10pct", r.within3_at_10pct},
              {"within3_budget_10pct", r.within3_budget_10pct},
              {"evals_to_within3", r.evals_to_within3},
              {"ms_per_run", r.ms_per_run},
              {"strategy_share", r.strategy_share}}
      .dump();
}

void print_leave_one_out(const std::vector<StrategyScore>& rows, std::ostream& out) {
  std::vector<std::string> spaces, strategies;
  std::map<std::pair<std::string, std::string>, double> score;
  for (const StrategyScore& r : rows) {
    if (r.peer) continue;
    if (std::find(spaces.begin(), spaces.end(), r.space) == spaces.end()) spaces.push_back(r.space);
    if (std::find(strategies.begin(), strategies.end(), r.strategy) == strategies.end())
      strategies.push_back(r.strategy);
    score[{r.space, r.strategy}] = r.score;
  }
  if (spaces.size() < 2 || strategies.empty()) return;
  auto mean_without = [&](const std::string& strategy, const std::string& left_out) {
    double sum = 0;
    int n = 0;
    for (auto& sp : spaces)
      if (sp != left_out && score.count({sp, strategy})) sum += score[{sp, strategy}], ++n;
    return n ? sum / n : -1e9;
  };
  out << "### Leave one space out\n\n"
         "For each space, the strategy with the highest mean score on the other spaces, and its score on the one "
         "left out (the choice never sees the space it is judged on).\n\n"
         "| left out | chosen on the others (their mean) | its score here | best here, in hindsight | default ("
      << default_strategy() << ") here |\n|---|---|---:|---|---:|\n";
  std::map<std::string, int> chosen_count;
  for (auto& sp : spaces) {
    std::string chosen, best;
    for (auto& st : strategies) {
      if (chosen.empty() || mean_without(st, sp) > mean_without(chosen, sp)) chosen = st;
      if (score.count({sp, st}) && (best.empty() || score[{sp, st}] > score[{sp, best}])) best = st;
    }
    ++chosen_count[chosen];
    std::string def =
        score.count({sp, default_strategy()}) ? fmt::format("{:.3f}", score[{sp, default_strategy()}]) : "—";
    out << fmt::format("| {} | {} ({:.3f}) | {:.3f} | {} ({:.3f}) | {} |\n", sp, chosen, mean_without(chosen, sp),
                       score[{sp, chosen}], best, score[{sp, best}], def);
  }
  out << "\n| strategy | mean score | lowest score (space) | chosen when left out |\n|---|---:|---|---:|\n";
  for (auto& st : strategies) {
    double sum = 0, low = 1e9;
    std::string at;
    int n = 0;
    for (auto& sp : spaces)
      if (score.count({sp, st})) {
        double v = score[{sp, st}];
        sum += v, ++n;
        if (v < low) low = v, at = sp;
      }
    if (n)
      out << fmt::format("| {} | {:.3f} | {:.3f} ({}) | {} of {} |\n", st, sum / n, low, at, chosen_count[st],
                         spaces.size());
  }
  out << "\n";
}

}  // namespace tessera::search
