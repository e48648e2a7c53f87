// evaluator/worker_client.cpp — child-process management for workers: the spawn
// with the private channel, the request loop (replies, steps, output, deadlines),
// and what is said when a worker dies, hangs or breaks the channel's rules.
#include "evaluator/worker_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "evaluator/channel.h"

extern char** environ;

namespace tessera::evaluator {

namespace {

constexpr size_t kTailKeep = 1500;                  // last words of a dead worker
constexpr size_t kMaxLineBytes = size_t{64} << 20;  // a reply line longer than this is a flood

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;  // a dead worker: the reply pipe's end of file says so
    off += static_cast<size_t>(n);
  }
}

// The child's environment: the parent's, with the channel's secret set.
std::vector<std::string> child_environment(const std::string& secret) {
  std::vector<std::string> env;
  std::string key = std::string(kSecretEnv) + "=";
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, key.c_str(), key.size()) != 0) env.emplace_back(*e);
  env.push_back(key + secret);
  return env;
}

}  // namespace

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "tessera";
  buf[n] = 0;
  return buf;
}

WorkerClient::WorkerClient(std::string exe, int gpu, std::string log_path, std::vector<std::string> launcher)
    : exe_(std::move(exe)), launcher_(std::move(launcher)), gpu_(gpu), log_path_(std::move(log_path)) {
  signal(SIGPIPE, SIG_IGN);
  log_fd_ = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  start();
}

WorkerClient::~WorkerClient() {
  stop(false);
  if (log_fd_ >= 0) close(log_fd_);
}

// Requests on the child's fd 3, replies on its fd 4, its stdout and stderr on a
// third pipe, stdin from /dev/null. Everything is prepared before fork(): the child
// only moves descriptors and calls execve.
void WorkerClient::start() {
  int req[2], rep[2], out[2];
  if (pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe() failed");
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  secret_ = make_channel_secret();
  std::vector<std::string> env = child_environment(secret_);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> words = launcher_;
  for (std::string w : {exe_, std::string("worker"), std::string("--gpu"), std::to_string(gpu_)}) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    // Above every target number first, so that no dup2 overwrites a source.
    int a = fcntl(req[0], F_DUPFD, 10), b = fcntl(rep[1], F_DUPFD, 10), c = fcntl(out[1], F_DUPFD, 10);
    int d = devnull >= 0 ? fcntl(devnull, F_DUPFD, 10) : -1;
    if (d >= 0) dup2(d, 0);
    dup2(c, 1);
    dup2(c, 2);
    dup2(a, kRequestFd);
    dup2(b, kReplyFd);
    for (int fd : {a, b, c, d})
      if (fd >= 0) close(fd);
    setpgid(0, 0);  // its own process group, so a kill reaches what it started
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(req[0]);
  close(rep[1]);
  close(out[1]);
  if (devnull >= 0) close(devnull);
  to_child_ = req[1];
  from_child_ = rep[0];
  output_ = out[0];
  fcntl(output_, F_SETFL, fcntl(output_, F_GETFL) | O_NONBLOCK);
  fcntl(from_child_, F_SETFL, fcntl(from_child_, F_GETFL) | O_NONBLOCK);
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
  // A polite exit first (its request pipe closed), then the hard way.
  for (int i = 0; i < 50 && waitpid(pid_, &st, WNOHANG) == 0; ++i) {
    WorkerReply ignored;
    drain_output(ignored);  // a worker blocked on a full output pipe could not exit
    usleep(20000);
  }
  if (waitpid(pid_, &st, WNOHANG) == 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
  }
  for (int* fd : {&from_child_, &output_})
    if (*fd >= 0) close(*fd), *fd = -1;
  pid_ = -1;
}

int WorkerClient::finish(double timeout_s) {
  if (pid_ <= 0) return last_exit_;
  if (to_child_ >= 0) close(to_child_), to_child_ = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int st = 0;
  pid_t done = 0;
  WorkerReply ignored;
  while ((done = waitpid(pid_, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    drain_output(ignored);  // a process blocked on a full output pipe could not exit
    usleep(20000);
  }
  if (done == 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
  }
  drain_output(ignored);
  for (int* fd : {&from_child_, &output_})
    if (*fd >= 0) close(*fd), *fd = -1;
  pid_ = -1;
  last_exit_ = done == 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return last_exit_;
}

void WorkerClient::take_output(const char* data, size_t n, WorkerReply& r) {
  r.printed_bytes += static_cast<long long>(n);
  if (r.printed.size() < kPrintedKeep) r.printed.append(data, std::min(n, kPrintedKeep - r.printed.size()));
  output_tail_.append(data, n);
  if (output_tail_.size() > kTailKeep) output_tail_.erase(0, output_tail_.size() - kTailKeep);
  if (log_fd_ < 0 || logged_ >= kLogCapBytes) return;
  size_t room = static_cast<size_t>(kLogCapBytes - logged_);
  write_all(log_fd_, std::string(data, std::min(n, room)));
  logged_ += static_cast<long long>(std::min(n, room));
  if (logged_ >= kLogCapBytes) write_all(log_fd_, "\n[tessera: this worker's log is full; later output is not kept]\n");
}

void WorkerClient::drain_output(WorkerReply& r) {
  char buf[65536];
  while (output_ >= 0) {
    ssize_t n = read(output_, buf, sizeof buf);
    if (n > 0) {
      take_output(buf, static_cast<size_t>(n), r);
      continue;
    }
    if (n == 0) close(output_), output_ = -1;  // every writer gone
    return;
  }
}

bool WorkerClient::reply_pipe_has_data() {
  if (!buffer_.empty()) return true;
  pollfd p{from_child_, POLLIN, 0};
  return from_child_ >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

// The reply pipe reached its end: the worker is gone. Its exit status and its last
// output say why; a reply cut off in the middle is a broken channel.
WorkerReply WorkerClient::finish_dead(WorkerReply r) {
  int st = 0;
  if (to_child_ >= 0) close(to_child_), to_child_ = -1;
  waitpid(pid_, &st, 0);
  pid_ = -1;
  last_exit_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  drain_output(r);
  for (int* fd : {&from_child_, &output_})
    if (*fd >= 0) close(*fd), *fd = -1;
  std::string how = WIFSIGNALED(st)
                        ? fmt::format("worker killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)))
                        : fmt::format("worker exited with status {}", WEXITSTATUS(st));
  if (!buffer_.empty()) {
    r.kind = WorkerReply::Kind::protocol_error;
    r.detail = fmt::format("the reply channel carried a line cut off after {} bytes; {}", buffer_.size(), how);
    buffer_.clear();
  } else {
    r.kind = WorkerReply::Kind::crashed;
    r.detail = how;
  }
  if (!output_tail_.empty()) r.detail += "; its last words: " + output_tail_;
  output_tail_.clear();
  return r;
}

WorkerReply WorkerClient::request(const nlohmann::json& req, double timeout_s, bool follow_steps, double fixed_step_s) {
  using Clock = std::chrono::steady_clock;
  WorkerReply r;
  // Nothing may arrive between requests; a worker that wrote anyway is replaced first.
  if (pid_ > 0 && reply_pipe_has_data()) {
    write_all(log_fd_, "\n[tessera: the reply channel carried data between requests; worker restarted]\n");
    stop(true);
  }
  if (pid_ <= 0) start();
  const long long id = ++next_id_;
  nlohmann::json msg = req;
  msg["id"] = id;
  write_all(to_child_, msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  r.step = "the start of the request";
  r.limit_s = timeout_s;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
      ChannelMessage m = read_channel_line(buffer_.substr(0, nl), secret_, id);
      buffer_.erase(0, nl + 1);
      if (m.kind == ChannelMessage::Kind::step) {
        if (!follow_steps) continue;  // a plain request keeps its one deadline
        r.step = m.body.value("what", "");
        r.limit_s = fixed_step_s > 0 ? fixed_step_s : m.body.at("limit_s").get<double>();
        deadline = Clock::now() + std::chrono::duration<double>(r.limit_s);
        continue;
      }
      drain_output(r);
      if (m.kind == ChannelMessage::Kind::reply && reply_pipe_has_data())
        m = {ChannelMessage::Kind::invalid, {}, "the reply channel carried more after the reply"};
      if (m.kind == ChannelMessage::Kind::invalid) {
        r.kind = WorkerReply::Kind::protocol_error;
        r.detail = m.why + "; worker killed and restarted";
        stop(true);
        return r;
      }
      r.body = std::move(m.body);
      // The worker exits after reporting a fault that killed its context.
      if (r.body.value("context_lost", false)) stop(false);
      return r;
    }
    if (buffer_.size() > kMaxLineBytes) {
      r.kind = WorkerReply::Kind::protocol_error;
      r.detail = fmt::format("the reply channel carried over {} MiB without an end of line; worker killed",
                             kMaxLineBytes >> 20);
      stop(true);
      return r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      drain_output(r);
      stop(true);
      r.kind = WorkerReply::Kind::timeout;
      r.detail = fmt::format("no answer within {:.1f} s of {}; worker killed", r.limit_s, r.step);
      return r;
    }
    pollfd p[2] = {{from_child_, POLLIN, 0}, {output_, POLLIN, 0}};
    if (poll(p, output_ >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    if (output_ >= 0 && p[1].revents) drain_output(r);
    if (!p[0].revents) continue;
    char buf[65536];
    ssize_t n = read(from_child_, buf, sizeof buf);
    if (n > 0)
      buffer_.append(buf, static_cast<size_t>(n));
    else if (n == 0)
      return finish_dead(std::move(r));
  }
}

}  // namespace tessera::evaluator
