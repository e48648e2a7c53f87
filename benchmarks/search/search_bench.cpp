// benchmarks/search/search_bench.cpp — `tessera search-bench --cache` without the CLI
// (and without the GPU libraries: this builds with tessera_search alone).
//
// Usage: tessera_search_bench [--repeats R] [--strategies s1,s2] [--parallel P]
//        [--warm-from FILE] [--peer KT.jsonl] [--loso] [--json OUT] [--rows FILE] FILE...
//        (Kernel Tuner caches; `--strategies none --rows FILE` prints rows measured before)
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "search/bench.h"

int main(int argc, char** argv) {
  tessera::search::SearchBenchOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool more = i + 1 < argc;
    if (a == "--repeats" && more)
      o.repeats = std::atoi(argv[++i]);
    else if (a == "--parallel" && more)
      o.parallel = static_cast<size_t>(std::atoi(argv[++i]));
    else if (a == "--warm-from" && more)
      o.warm_from = argv[++i];
    else if (a == "--peer" && more)
      o.peer = argv[++i];
    else if (a == "--loso")
      o.leave_one_out = true;
    else if (a == "--json" && more)
      o.json = argv[++i];
    else if (a == "--rows" && more)
      o.rows = argv[++i];
    else if ((a == "--strategies" || a == "--only") && more) {
      std::stringstream list(argv[++i]);
      for (std::string s; std::getline(list, s, ',');) o.only.push_back(s);
    } else if (a == "--cache" && more)
      o.caches.push_back(argv[++i]);
    else
      o.caches.push_back(a);
  }
  return tessera::search::search_bench_main(o, std::cout);
}
