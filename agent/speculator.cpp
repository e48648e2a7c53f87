// agent/speculator.cpp — see speculator.h.
#include "agent/speculator.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "codegen/render.h"

namespace tessera::agent {

Speculator::Speculator(CompileFn compile, unsigned threads, size_t max_queued)
    : compile_(std::move(compile)), max_queued_(max_queued) {
  for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { loop(); });
}

Speculator::~Speculator() {
  {
    std::lock_guard<std::mutex> l(m_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::string Speculator::key(const codegen::CompileRequest& r) {
  return codegen::content_hash(r.arch + '\n' + r.name + '\n' + r.source);
}

void Speculator::offer(const std::vector<codegen::CompileRequest>& reqs) {
  if (threads_.empty()) return;
  {
    std::lock_guard<std::mutex> l(m_);
    // In reverse, so that the batch keeps its order at the front of the queue.
    for (auto it = reqs.rbegin(); it != reqs.rend(); ++it)
      if (seen_.insert(key(*it)).second) queue_.push_front(*it);
    while (queue_.size() > max_queued_) queue_.pop_back();
  }
  cv_.notify_all();
}

void Speculator::wait_idle() {
  std::unique_lock<std::mutex> l(m_);
  idle_cv_.wait(l, [&] { return queue_.empty() && running_ == 0; });
}

size_t Speculator::compiled() const {
  std::lock_guard<std::mutex> l(m_);
  return compiled_;
}

size_t Speculator::offered() const {
  std::lock_guard<std::mutex> l(m_);
  return seen_.size();
}

void Speculator::loop() {
  // Linux: the nice value of one thread (its tid), not the process's.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  while (true) {
    codegen::CompileRequest r;
    {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      r = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    try {
      compile_(r);
    } catch (...) {  // a speculative compile that fails costs nothing: the real one reports it
    }
    {
      std::lock_guard<std::mutex> l(m_);
      --running_;
      ++compiled_;
    }
    idle_cv_.notify_all();
  }
}

}  // namespace tessera::agent
