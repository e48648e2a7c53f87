// agent/optimize.cpp — `tessera optimize`: checks the request, opens the store,
// starts a Session (agent/session.h) and drives it: the search over each
// template, then the LLM proposer when asked for.
//
// Flow of one batch (agent/session.cpp, session_judging.cpp): render each
// configuration, record the candidate (source deduplicated by hash), reuse a
// stored evaluation when the same source was already judged on this device for
// this spec version (resume), compile on all cores while the workers (one per
// GPU) judge what is compiled, and store each verdict in its own transaction.
#include "agent/optimize.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "agent/session.h"
#include "agent/template_space.h"
#include "search/strategy.h"

namespace tessera::agent {

namespace fs = std::filesystem;

std::string default_strategy() {
  return search::default_strategy();
}

const char* proposer_name(Proposer p) {
  switch (p) {
    case Proposer::llm:
      return "llm";
    case Proposer::hybrid:
      return "hybrid";
    case Proposer::search:
      break;
  }
  return "search";
}

Proposer parse_proposer(const std::string& s) {
  for (Proposer p : {Proposer::search, Proposer::llm, Proposer::hybrid})
    if (s == proposer_name(p)) return p;
  throw std::invalid_argument("proposer '" + s + "': expected search, llm or hybrid");
}

std::vector<size_t> share_budget(size_t budget, const std::vector<size_t>& sizes) {
  std::vector<size_t> order(sizes.size()), shares(sizes.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] < sizes[b]; });
  size_t left = budget;
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = order[k];
    shares[i] = std::min(sizes[i], left / (order.size() - k));
    left -= shares[i];
  }
  return shares;
}

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
  if (op.templates.empty() && o.proposer == Proposer::search) {
    std::cerr << fmt::format(
        "tessera: operator '{}' has no template to search (an imported op_type tessera has no "
        "kernels for): give --proposer llm or hybrid, and the model writes them\n",
        o.op);
    return 2;
  }
  if (tpls.empty() && !op.templates.empty()) {
    std::cerr << fmt::format("tessera: operator '{}' has no template '{}'\n", o.op, o.template_name);
    return 2;
  }
  std::unique_ptr<LlmProposer> llm;
  if (o.proposer != Proposer::search) {
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
  // The budget is shared among templates, evenly but for what a small space cannot use
  // (share_budget); hybrid: half of it, then the model.
  size_t search_budget = o.proposer == Proposer::search ? o.budget : o.proposer == Proposer::hybrid ? o.budget / 2 : 0;
  std::vector<size_t> sizes;
  for (auto* t : tpls) sizes.push_back(template_space(*t).valid_configs().size());
  std::vector<size_t> shares = share_budget(search_budget, sizes);
  for (size_t i = 0; i < tpls.size(); ++i)
    if (shares[i] > 0 || (sizes[i] == 0 && search_budget > 0)) s.run_template(*tpls[i], shares[i], strategy);
  if (llm) llm->run(s, op, db, o.budget > s.evaluated() ? o.budget - s.evaluated() : 0, o.proposer == Proposer::hybrid);
  int rc = s.finish();
  if (llm) std::cout << llm->summary() << "\n";
  return rc;
}

}  // namespace tessera::agent
