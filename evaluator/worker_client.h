// evaluator/worker_client.h — the agent's side of a worker: starts
// `tessera worker --gpu N` as a child process with its private channel
// (evaluator/channel.h), sends requests, follows the steps the worker announces,
// and enforces their wall-clock limits. What the worker prints on stdout/stderr is
// read apart, kept per request (bounded) and appended to the worker's log. A worker
// that dies, hangs or puts anything but its reply on the channel is killed and
// restarted; the caller learns which of the three happened. A launcher (a profiler
// or sanitizer command line, `tessera profile`) may stand before the worker's own
// command: the channel's descriptors and secret pass through it to the worker.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::evaluator {

struct WorkerReply {
  enum class Kind { ok, crashed, timeout, protocol_error } kind = Kind::ok;
  nlohmann::json body;  // the reply (kind ok)
  std::string detail;   // exit status / signal, last output lines, the broken rule
  std::string printed;  // what the worker wrote on stdout/stderr during the request (the first kPrintedKeep bytes)
  long long printed_bytes = 0;  // all of it, counted
  std::string step;             // the last step the worker announced (a timeout names it)
  double limit_s = 0;           // that step's limit (or the request's, before any step)
};

class WorkerClient {
 public:
  static constexpr size_t kPrintedKeep = 4096;        // per request, for the store and the LLM
  static constexpr long long kLogCapBytes = 8 << 20;  // per worker log file and worker life

  // launcher: argv words run in front of `exe worker --gpu N` (its first word a path).
  WorkerClient(std::string exe, int gpu, std::string log_path, std::vector<std::string> launcher = {});
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Sends `req` and waits for its reply at most timeout_s. With follow_steps, timeout_s
  // is the allowance until the worker's first step, and each step sets the deadline
  // to its own limit (capped by max_step_s when that is positive).
  WorkerReply request(const nlohmann::json& req, double timeout_s, bool follow_steps = false, double max_step_s = 0);
  // Closes the request pipe (the worker's cue to exit) and waits at most timeout_s for
  // the process to end, reading its output meanwhile; then kills what is left. Returns
  // the exit status, 128 + the signal of one killed by a signal, -1 when it had to be
  // killed. A worker already gone (a request found it dead): the status it left.
  int finish(double timeout_s);
  int gpu() const { return gpu_; }
  int restarts() const { return restarts_; }

 private:
  void start();
  void stop(bool kill_now);
  void take_output(const char* data, size_t n, WorkerReply& r);
  void drain_output(WorkerReply& r);
  bool reply_pipe_has_data();
  WorkerReply finish_dead(WorkerReply r);

  std::string exe_;
  std::vector<std::string> launcher_;
  int gpu_;
  std::string log_path_;
  std::string secret_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1, output_ = -1, log_fd_ = -1;
  long long logged_ = 0;
  std::string buffer_, output_tail_;
  long long next_id_ = 0;
  int restarts_ = -1;
  int last_exit_ = -1;  // the status of the last process that ended (finish)
};

// Path of the running executable (for spawning workers).
std::string self_exe();

}  // namespace tessera::evaluator
