// tests/pipeline/fake_worker.cpp — a stand-in for `tessera worker` that speaks
// the worker protocol (evaluator/worker.h) without a GPU, so the agent's GPU
// path can be tested on any machine. Its verdicts depend on the hostile
// fixture's KIND parameter: 0 and 16 are fast and right, 11 loses its context,
// 12 dies without a word, 13 hangs, 5 is faster than physics, the rest are wrong.
// Every evaluate request is appended to $FAKE_WORKER_LOG as "gpu kind".
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

using nlohmann::json;

namespace {
json timing(const std::string& shape, double cand_ms, double base_ms) {
  json t = {{"median_ms", cand_ms}, {"min_ms", cand_ms}, {"p90_ms", cand_ms}, {"mean_ms", cand_ms}, {"rse", 0.001}, {"samples", 20}};
  json b = {{"median_ms", base_ms}, {"min_ms", base_ms}, {"p90_ms", base_ms}, {"mean_ms", base_ms}, {"rse", 0.001}, {"samples", 20}};
  return {{"shape", shape}, {"candidate", t}, {"baseline", b}, {"speedup", base_ms / cand_ms},
          {"after", {{"shape", shape}, {"pass", true}, {"status", "ok"}, {"outputs", json::array()}}}};
}
json ok_report(double cand_ms, double base_ms) {
  return {{"status", "ok"},
          {"timings", {timing("4096x4096", cand_ms, base_ms), timing("1024x8192", cand_ms, base_ms)}},
          {"geomean_speedup", base_ms / cand_ms},
          {"max_rel_l2", 1.5e-3}};
}
}  // namespace

int main(int argc, char** argv) {
  int gpu = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--gpu") gpu = std::atoi(argv[i + 1]);
  const char* log_path = std::getenv("FAKE_WORKER_LOG");
  std::string line;
  while (std::getline(std::cin, line)) {
    json req = json::parse(line);
    std::string type = req.value("type", "");
    json reply;
    if (type == "hello") {
      reply = {{"ok", true},
               {"device", {{"ordinal", gpu}, {"name", "Fake GPU"}, {"arch", "sm_90a"}, {"sm_count", 132},
                           {"l2_bytes", 62914560}, {"total_mem", 1LL << 37}, {"driver", 13000}, {"max_smem_optin", 232448}}}};
    } else if (type == "ceilings") {
      reply = {{"ok", true}, {"copy_bytes_per_s", 4e12}, {"bf16_flops_per_s", 8e14}, {"note", ""}};
    } else if (type == "evaluate") {
      int kind = req["candidate"]["params"].value("KIND", -1);
      if (log_path) std::ofstream(log_path, std::ios::app) << gpu << " " << kind << "\n";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (kind == 0) reply = {{"ok", true}, {"report", ok_report(0.1, 0.15)}};
      else if (kind == 16) reply = {{"ok", true}, {"report", ok_report(0.1, 0.12)}};
      else if (kind == 5) reply = {{"ok", true}, {"report", ok_report(1e-6, 0.1)}};
      else if (kind == 11) {
        reply = {{"ok", true},
                 {"report", {{"status", "crashed"}, {"message", "CUDA_ERROR_ILLEGAL_ADDRESS (fake)"}}},
                 {"context_lost", true}};
        std::cout << reply.dump() << "\n" << std::flush;
        return 3;
      } else if (kind == 12) {
        std::fprintf(stderr, "fake worker: dying without an answer\n");
        std::_Exit(9);
      } else if (kind == 13) {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        reply = {{"ok", true}, {"report", ok_report(0.1, 0.1)}};
      } else {
        reply = {{"ok", true}, {"report", {{"status", "wrong_result"}, {"message", "fake: y differs"}, {"max_rel_l2", 0.5}}}};
      }
    } else {
      reply = {{"ok", false}, {"error", "unknown request"}};
    }
    std::cout << reply.dump() << "\n" << std::flush;
  }
  return 0;
}
