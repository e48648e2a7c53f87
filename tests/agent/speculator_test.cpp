// tests/agent/speculator_test.cpp — the speculative compile queue (agent/speculator.h)
// with a stand-in compile function: newest offers first, each request compiled once,
// queued work dropped on shutdown, threads at low priority.
#include "agent/speculator.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::agent {
namespace {

codegen::CompileRequest req(const std::string& src) {
  return {src, "t.cu", "sm_90a", {}, {}};
}

std::vector<codegen::CompileRequest> reqs(std::initializer_list<const char*> names) {
  std::vector<codegen::CompileRequest> out;
  for (auto* n : names) out.push_back(req(n));
  return out;
}

TEST(Speculator, NewestOffersGoFirstAndEachRequestCompilesOnce) {
  std::promise<void> release, started;
  std::shared_future<void> gate = release.get_future().share();
  std::mutex m;
  std::vector<std::string> order;
  Speculator s(
      [&](const codegen::CompileRequest& r) {
        if (r.source == "a") {  // hold the only thread while more is offered
          started.set_value();
          gate.wait();
        }
        std::lock_guard<std::mutex> l(m);
        order.push_back(r.source);
      },
      1);
  s.offer(reqs({"a"}));
  started.get_future().wait();  // "a" is running, the queue is empty
  s.offer(reqs({"a"}));         // already offered: not queued again
  s.offer(reqs({"b", "c"}));
  s.offer(reqs({"d", "b", "e"}));  // b is not compiled twice
  release.set_value();
  s.wait_idle();
  EXPECT_EQ(s.compiled(), 5u);
  EXPECT_EQ(s.offered(), 5u);
  // The later offer (d, e; b was offered before) goes before the earlier one (b, c),
  // each in its own order.
  EXPECT_EQ(order, (std::vector<std::string>{"a", "d", "e", "b", "c"}));
}

TEST(Speculator, QueueIsBoundedKeepingTheNewest) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::mutex m;
  std::vector<std::string> done;
  Speculator s(
      [&](const codegen::CompileRequest& r) {
        gate.wait();
        std::lock_guard<std::mutex> l(m);
        done.push_back(r.source);
      },
      1, 2);
  s.offer(reqs({"x"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // x is taken (or still queued: then dropped below)
  s.offer(reqs({"old1", "old2"}));
  s.offer(reqs({"new1", "new2"}));
  release.set_value();
  s.wait_idle();
  for (auto& d : done) EXPECT_TRUE(d != "old1" && d != "old2") << "kept an old request over newer ones: " << d;
  EXPECT_NE(std::find(done.begin(), done.end(), "new1"), done.end());
  EXPECT_NE(std::find(done.begin(), done.end(), "new2"), done.end());
}

TEST(Speculator, ShutdownDropsQueuedWork) {
  std::atomic<int> calls{0};
  {
    Speculator s(
        [&](const codegen::CompileRequest&) {
          ++calls;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        },
        1);
    std::vector<codegen::CompileRequest> many;
    for (int i = 0; i < 50; ++i) {
      std::string name = "v";  // (not "v" + to_string: GCC 12's -Wrestrict false positive)
      name += std::to_string(i);
      many.push_back(req(name));
    }
    s.offer(many);
  }  // must not compile all 50 (a run's end would wait for them)
  EXPECT_LT(calls.load(), 50);
}

TEST(Speculator, CompilesAtLowPriorityAndSurvivesFailures) {
  std::atomic<int> prio{-100};
  Speculator s(
      [&](const codegen::CompileRequest& r) {
        if (r.source == "bad") throw std::runtime_error("does not compile");
        prio = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
      },
      1);
  s.offer(reqs({"bad", "good"}));
  s.wait_idle();
  EXPECT_EQ(s.compiled(), 2u);
  EXPECT_GE(prio.load(), 10) << "speculative compiles must yield the cores to the real ones";
}

TEST(Speculator, WithoutThreadsOffersAreIgnored) {
  int calls = 0;
  Speculator s([&](const codegen::CompileRequest&) { ++calls; }, 0);
  s.offer(reqs({"a", "b"}));
  s.wait_idle();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(s.offered(), 0u);
}

}  // namespace
}  // namespace tessera::agent
