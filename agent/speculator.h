// agent/speculator.h — compiles, on idle cores and at low priority, the candidates a
// search will probably ask for next, so that their real compile is a cache hit.
//
// A search is a sequence of batches: the GPUs judge batch n, the strategy reads the
// results and proposes batch n+1, which is compiled while the GPUs wait. That wait
// (one compile, 0.3 s for rmsnorm to 2.4 s for kda, at every batch start) was 17-41 %
// of the wall time of one GPU on the 2-GPU node (runs/nightly/README.md). Local strategies
// propose the neighbours of the best configuration so far; the Session offers those
// here as soon as a result comes within kNearBest of the best (a new best, or one
// close enough that local search may move there next), while the rest of the batch
// is still being judged. On the recorded spaces (tests/search, Speculation) that set
// holds 64-99 % of what the default strategy asks for after its first batch
// (48-80 % with new bests only), for about 1.5-13 offered compiles per evaluation.
// What the strategy then asks for is in the compiler's on-disk cache
// (codegen/compiler.h writes entries atomically, so a speculative and a real compile
// of the same source may race harmlessly).
//
// Requests offered later go first (the newest best is the likeliest next batch);
// a request is compiled at most once per Speculator; the queue is bounded. Threads
// run at nice +10 so that real compiles, which the GPUs wait for, win the cores.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codegen/compiler.h"

namespace tessera::agent {

class Speculator {
 public:
  // Results within this factor of the template's best cost are speculated around.
  static constexpr double kNearBest = 1.05;
  using CompileFn = std::function<void(const codegen::CompileRequest&)>;
  // threads: 0 means none (offer() then does nothing); max_queued bounds the queue.
  Speculator(CompileFn compile, unsigned threads, size_t max_queued = 256);
  ~Speculator();  // drops what is queued; waits for the compiles already running
  Speculator(const Speculator&) = delete;
  Speculator& operator=(const Speculator&) = delete;

  void offer(const std::vector<codegen::CompileRequest>& reqs);
  void wait_idle();         // until nothing is queued or running (tests, shutdown)
  size_t compiled() const;  // compiles finished
  size_t offered() const;   // distinct requests accepted

 private:
  static std::string key(const codegen::CompileRequest& r);
  void loop();

  CompileFn compile_;
  size_t max_queued_;
  mutable std::mutex m_;
  std::condition_variable cv_, idle_cv_;
  std::deque<codegen::CompileRequest> queue_;
  std::set<std::string> seen_;
  size_t running_ = 0, compiled_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera::agent
