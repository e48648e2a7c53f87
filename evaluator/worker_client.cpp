// evaluator/worker_client.cpp — child-process management for workers.
#include "evaluator/worker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::evaluator {

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "tessera";
  buf[n] = 0;
  return buf;
}

WorkerClient::WorkerClient(std::string exe, int gpu, std::string log_path)
    : exe_(std::move(exe)), gpu_(gpu), log_path_(std::move(log_path)) {
  signal(SIGPIPE, SIG_IGN);
  start();
}

WorkerClient::~WorkerClient() { stop(false); }

void WorkerClient::start() {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe() failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int err = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) dup2(err, 2);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    setpgid(0, 0);  // its own process group, so a kill reaches what it started
    std::string g = std::to_string(gpu_);
    execl(exe_.c_str(), exe_.c_str(), "worker", "--gpu", g.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  fcntl(from_child_, F_SETFD, FD_CLOEXEC);
  fcntl(to_child_, F_SETFD, FD_CLOEXEC);
  pid_ = pid;
  buffer_.clear();
  ++restarts_;
}

void WorkerClient::stop(bool kill_now) {
  if (pid_ <= 0) return;
  if (to_child_ >= 0) close(to_child_);
  to_child_ = -1;
  if (kill_now) kill(-pid_, SIGKILL), kill(pid_, SIGKILL);
  int st = 0;
  // A polite exit first (stdin closed), then the hard way.
  for (int i = 0; i < 50 && waitpid(pid_, &st, WNOHANG) == 0; ++i) usleep(20000);
  if (waitpid(pid_, &st, WNOHANG) == 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
  }
  if (from_child_ >= 0) close(from_child_);
  from_child_ = -1;
  pid_ = -1;
}

std::string WorkerClient::stderr_tail() const {
  std::ifstream in(log_path_);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() > 1500) all = all.substr(all.size() - 1500);
  return all;
}

WorkerReply WorkerClient::request(const nlohmann::json& req, double timeout_s) {
  WorkerReply r;
  if (pid_ <= 0) start();
  std::string line = req.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = write(to_child_, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string reply = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      try {
        r.body = nlohmann::json::parse(reply);
      } catch (std::exception& e) {
        r.kind = WorkerReply::Kind::crashed;
        r.detail = "worker sent an unreadable reply";
        stop(true);
        return r;
      }
      // The worker exits after reporting a fault that killed its context.
      if (r.body.value("context_lost", false)) stop(false);
      return r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      stop(true);
      r.kind = WorkerReply::Kind::timeout;
      r.detail = fmt::format("no answer within {:.1f} s; worker killed", timeout_s);
      return r;
    }
    pollfd p{from_child_, POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr > 0) {
      char buf[65536];
      ssize_t n = read(from_child_, buf, sizeof buf);
      if (n > 0) {
        buffer_.append(buf, static_cast<size_t>(n));
        continue;
      }
      // EOF: the worker died.
      int st = 0;
      close(to_child_);
      to_child_ = -1;
      waitpid(pid_, &st, 0);
      pid_ = -1;
      close(from_child_);
      from_child_ = -1;
      r.kind = WorkerReply::Kind::crashed;
      if (WIFSIGNALED(st)) r.detail = fmt::format("worker killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)));
      else r.detail = fmt::format("worker exited with status {}", WEXITSTATUS(st));
      std::string tail = stderr_tail();
      if (!tail.empty()) r.detail += "; its last words: " + tail;
      return r;
    }
  }
}

}  // namespace tessera::evaluator
