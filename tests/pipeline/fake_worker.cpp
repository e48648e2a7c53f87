// tests/pipeline/fake_worker.cpp — a stand-in for `tessera worker` that speaks
// the worker protocol (requests on fd 3, replies on fd 4 with the id and the
// secret, evaluator/channel.h) without a GPU, so the agent's GPU path can be
// tested on any machine. Its verdicts depend on the hostile fixture's KIND:
//   0, 16, 19  fast and right               5  faster than physics
//   11  loses its context                   12  dies without a word
//   13  hangs                               17  prints debug lines (and a JSON-looking one) on stdout, right
//   18  floods stdout with replies forged with the real id and secret, then answers honestly (slower)
// and, for the channel tests, kinds that break the channel itself:
//   20  a line that is not JSON on the channel     21  a reply cut off, then exits
//   22  a reply with a wrong secret                 23  a reply to another request id
//   24  its reply, then a second one                25  announces a 0.5 s step, then hangs
// the rest are wrong. Each evaluate announces a 10 s validation step first.
// $FAKE_WORKER_SLOWER (kinds separated by commas) makes those of 0, 16 and 19 twice as slow,
// as a champion found slower when judged again.
// Every evaluate request is appended to $FAKE_WORKER_LOG as "gpu kind", and its candidate
// (template, params and the program it carries, if any; not the cubin's path), with the
// request's operator_dir, to $FAKE_WORKER_REQUEST_LOG as one JSON line. A profile request
// (`tessera profile`) is answered as the real worker answers it, with the plan's kernel
// "hostile" (KIND 4, which writes past its output, as written outside "y"), and appended
// to $FAKE_WORKER_PROFILE_LOG as one JSON line.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "evaluator/channel.h"

using nlohmann::json;
namespace ev = tessera::evaluator;

namespace {
json timing(const std::string& shape, double cand_ms, double base_ms) {
  json t = {{"median_ms", cand_ms}, {"min_ms", cand_ms}, {"p90_ms", cand_ms},
            {"mean_ms", cand_ms},   {"rse", 0.001},      {"samples", 20}};
  json b = {{"median_ms", base_ms}, {"min_ms", base_ms}, {"p90_ms", base_ms},
            {"mean_ms", base_ms},   {"rse", 0.001},      {"samples", 20}};
  return {{"shape", shape},
          {"candidate", t},
          {"baseline", b},
          {"speedup", base_ms / cand_ms},
          {"after", {{"shape", shape}, {"pass", true}, {"status", "ok"}, {"outputs", json::array()}}}};
}
json ok_report(double cand_ms, double base_ms) {
  return {{"status", "ok"},
          {"timings", {timing("4096x4096", cand_ms, base_ms), timing("1024x8192", cand_ms, base_ms)}},
          {"geomean_speedup", base_ms / cand_ms},
          {"max_rel_l2", 1.5e-3}};
}
json ok_reply(double cand_ms, double base_ms) {
  return {{"ok", true}, {"report", ok_report(cand_ms, base_ms)}};
}

void raw(const std::string& bytes) {
  if (write(ev::kReplyFd, bytes.data(), bytes.size()) < 0) std::_Exit(1);
}
std::string line_of(long long id, const std::string& secret, const json& body) {
  return json{{"id", id}, {"secret", secret}, {"reply", body}}.dump() + "\n";
}

// 2 for a kind listed in $FAKE_WORKER_SLOWER, else 1.
double slower(int kind) {
  const char* list = std::getenv("FAKE_WORKER_SLOWER");
  std::string padded(",");
  padded.append(list ? list : "").append(",");
  std::string item(",");
  item.append(std::to_string(kind)).append(",");
  return padded.find(item) == std::string::npos ? 1.0 : 2.0;
}

// The reply of an evaluate request, after whatever the kind does to the channel;
// null when the kind has already answered (or never will).
json evaluate(int kind, long long id, const std::string& secret, ev::ReplyChannel& channel) {
  channel.step(id, "validation (fake)", 10.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  switch (kind) {
    case 0:
      return ok_reply(0.1 * slower(kind), 0.15);
    case 16:
      return ok_reply(0.1 * slower(kind), 0.12);
    case 19:
      return ok_reply(0.1 * slower(kind), 0.115);
    case 5:
      return ok_reply(1e-6, 0.1);
    case 11: {
      channel.reply(id, {{"ok", true},
                         {"report", {{"status", "crashed"}, {"message", "CUDA_ERROR_ILLEGAL_ADDRESS (fake)"}}},
                         {"context_lost", true}});
      std::_Exit(3);
    }
    case 12:
      std::fprintf(stderr, "fake worker: dying without an answer\n");
      std::_Exit(9);
    case 13:
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return ok_reply(0.1, 0.1);
    case 17:
      std::printf("debug: row 0 inv=0.5\n{\"ok\":true,\"report\":{\"status\":\"ok\",\"geomean_speedup\":1000}}\n");
      return ok_reply(0.1, 0.11);
    case 18: {
      const std::string forged = line_of(id, secret, ok_reply(1e-3, 1.0));  // 1000x
      for (int i = 0; i < 20000; ++i) std::fputs(forged.c_str(), stdout);
      return ok_reply(0.2, 0.15);
    }
    case 20:
      raw("CUDA printf: not a reply\n");
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return nullptr;
    case 21:
      raw(line_of(id, secret, ok_reply(0.1, 0.15)).substr(0, 40));
      std::_Exit(0);
    case 22:
      raw(line_of(id, "0123456789abcdef0123456789abcdef", ok_reply(1e-3, 1.0)));
      return nullptr;
    case 23:
      raw(line_of(id + 1, secret, ok_reply(1e-3, 1.0)));
      return nullptr;
    case 24:
      raw(line_of(id, secret, ok_reply(0.1, 0.15)) + line_of(id, secret, ok_reply(1e-3, 1.0)));
      return nullptr;
    case 25:
      channel.step(id, "timing (fake)", 0.5);
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return nullptr;
    default:
      return {{"ok", true},
              {"report", {{"status", "wrong_result"}, {"message", "fake: y differs"}, {"max_rel_l2", 0.5}}}};
  }
}

}  // namespace

int main(int argc, char** argv) {
  int gpu = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--gpu") gpu = std::atoi(argv[i + 1]);
  const char* sec = std::getenv(ev::kSecretEnv);
  if (!sec) {
    std::fprintf(stderr, "fake worker: no channel secret\n");
    return 2;
  }
  std::string secret = sec;
  ev::ReplyChannel channel(ev::kReplyFd, secret);
  const char* log_path = std::getenv("FAKE_WORKER_LOG");
  FILE* in = fdopen(ev::kRequestFd, "r");
  char* buf = nullptr;
  size_t cap = 0;
  while (in && getline(&buf, &cap, in) > 0) {
    json req = json::parse(buf);
    long long id = req.at("id").get<long long>();
    std::string type = req.value("type", "");
    json reply;
    if (type == "hello") {
      reply = {{"ok", true},
               {"device",
                {{"ordinal", gpu},
                 {"name", "Fake GPU"},
                 {"arch", "sm_90a"},
                 {"sm_count", 132},
                 {"l2_bytes", 62914560},
                 {"total_mem", 1LL << 37},
                 {"driver", 13000},
                 {"max_smem_optin", 232448}}}};
    } else if (type == "ceilings") {
      reply = {{"ok", true}, {"copy_bytes_per_s", 4e12}, {"bf16_flops_per_s", 8e14}, {"note", ""}};
    } else if (type == "evaluate") {
      int kind = req["candidate"]["params"].value("KIND", -1);
      if (log_path) std::ofstream(log_path, std::ios::app) << gpu << " " << kind << "\n";
      if (const char* p = std::getenv("FAKE_WORKER_REQUEST_LOG")) {
        json cand = req["candidate"];
        cand.erase("cubin");
        cand["operator_dir"] = req["operator_dir"];
        std::ofstream(p, std::ios::app) << cand.dump() << "\n";
      }
      reply = evaluate(kind, id, secret, channel);
      if (reply.is_null()) continue;
    } else if (type == "profile") {
      if (const char* p = std::getenv("FAKE_WORKER_PROFILE_LOG")) std::ofstream(p, std::ios::app) << req.dump() << "\n";
      reply = {{"ok", true},
               {"shape", req.value("shape", "")},
               {"runs", req.value("runs", 1)},
               {"kernels", {"hostile"}},
               {"outside", req["candidate"]["params"].value("KIND", -1) == 4 ? json{"y"} : json::array()}};
    } else {
      reply = {{"ok", false}, {"error", "unknown request"}};
    }
    channel.reply(id, reply);
  }
  std::free(buf);  // getline's buffer: the sanitizer build reports it otherwise, and a fake tool exits 1
  return 0;
}
