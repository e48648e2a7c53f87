// benchmarks/search/search_bench.cpp — stand-alone `search-bench` until the CLI wires it.
//
// Usage: tessera_search_bench [--repeats R] [--only s1,s2] FILE...  (Kernel Tuner caches)
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "search/bench.h"

int main(int argc, char** argv) {
  std::vector<std::string> caches;
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (a == "--cache" && i + 1 < argc) caches.push_back(argv[++i]);
    else caches.push_back(a);
  }
  return tessera::search::search_bench_main(caches, repeats, std::cout);
}
