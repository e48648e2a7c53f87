// evaluator/worker_client.h — the agent's side of a worker: starts
// `tessera worker --gpu N` as a child process, sends requests over a pipe, and
// enforces a wall-clock limit on each. A worker that dies or hangs is killed
// and restarted; the caller learns which of the two happened.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::evaluator {

struct WorkerReply {
  enum class Kind { ok, crashed, timeout } kind = Kind::ok;
  nlohmann::json body;   // the reply (kind ok)
  std::string detail;    // exit status / signal, last stderr lines (crashed, timeout)
};

class WorkerClient {
 public:
  WorkerClient(std::string exe, int gpu, std::string log_path);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  WorkerReply request(const nlohmann::json& req, double timeout_s);
  int gpu() const { return gpu_; }
  int restarts() const { return restarts_; }

 private:
  void start();
  void stop(bool kill_now);
  std::string stderr_tail() const;

  std::string exe_;
  int gpu_;
  std::string log_path_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;
  int restarts_ = -1;
};

// Path of the running executable (for spawning workers).
std::string self_exe();

}  // namespace tessera::evaluator
