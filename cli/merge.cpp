// cli/merge.cpp — `tessera merge OUT.db SHARD.db...`: merges database shards
// (one per node of a Slurm job array) into one history; idempotent. See
// store/merge.h for what is deduplicated and what is kept.
#include "store/merge.h"

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/reporting.h"

namespace tessera::cli {

int cmd_merge(const std::string& out, const std::vector<std::string>& shards, bool as_json) {
  store::Store db(out);
  int rc = 0;
  nlohmann::json report = nlohmann::json::array();
  for (auto& shard : shards) {
    try {
      auto st = store::merge_shard(db, shard);
      nlohmann::json tables = nlohmann::json::object();
      std::string line;
      for (const char* t :
           {"runs", "candidates", "sources", "compiles", "evaluations", "shape_results", "exchanges", "devices"}) {
        auto it = st.tables.find(t);
        if (it == st.tables.end()) continue;
        tables[t] = {{"added", it->second.added}, {"present", it->second.present}};
        line += fmt::format("{}{} {}+{}", line.empty() ? "" : ", ", t, it->second.added, it->second.present);
      }
      for (auto& [t, c] : st.tables)
        if (!tables.contains(t)) tables[t] = {{"added", c.added}, {"present", c.present}};
      report.push_back({{"shard", shard}, {"tables", tables}, {"warnings", st.warnings}});
      if (!as_json) {
        std::cout << fmt::format("{}: {} (added+already present)\n", shard, line);
        for (auto& w : st.warnings) std::cout << "  warning: " << w << "\n";
      }
    } catch (store::StoreError& e) {
      rc = 1;
      report.push_back({{"shard", shard}, {"error", e.what()}});
      std::cerr << "tessera merge: " << e.what() << "\n";
    }
  }
  if (as_json)
    std::cout << report.dump(2) << "\n";
  else {
    size_t failed = 0;
    for (auto& r : report) failed += r.contains("error");
    std::cout << fmt::format("merged {} of {} shard(s) into {}\n", shards.size() - failed, shards.size(), out);
  }
  return rc;
}

}  // namespace tessera::cli
