// evaluator/channel.h — the private channel between the agent and a worker.
//
// A worker's standard output and error are not the channel: device printf, the
// driver, NVRTC and the CUDA runtime all write there. The agent starts each worker
// with two extra pipes, requests on fd 3 and replies on fd 4, and with fd 1 and 2
// joined to a third pipe that the agent reads as the output of whatever request is
// running ("what the kernel printed"). Nothing a kernel or the CUDA stack can write
// reaches fds 3 and 4.
//
// Every line on the reply pipe is one JSON object that carries the request's `id`
// and the per-worker `secret` the agent chose at spawn (passed in the environment
// variable below, which the worker removes before anything else runs):
//   {"id": N, "secret": S, "step": {"what": "...", "limit_s": L}}   progress
//   {"id": N, "secret": S, "reply": {...}}                          the answer
// A step says what the worker starts now and how long it may take (the request's
// deadline becomes now + L; docs/statuses.md says how L is computed). Anything else
// on the channel (a line that is not JSON, a wrong id or secret, a second reply, a
// line cut off) ends the worker; no verdict is ever taken from such a channel.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::evaluator {

inline constexpr int kRequestFd = 3;
inline constexpr int kReplyFd = 4;
inline constexpr const char* kSecretEnv = "TESSERA_WORKER_SECRET";

// What one line read from the reply pipe is, for the request `id` of a worker
// whose secret is `secret`.
struct ChannelMessage {
  enum class Kind { reply, step, invalid } kind = Kind::invalid;
  nlohmann::json body;  // the reply object (reply) or {"what", "limit_s"} (step)
  std::string why;      // invalid: what was wrong, for the candidate's message
};
ChannelMessage read_channel_line(const std::string& line, const std::string& secret, long long id);

// A fresh secret: 32 hex digits from the system's random source.
std::string make_channel_secret();

// The worker's end: writes whole lines to kReplyFd. Before a reply it flushes the
// C and C++ standard streams, so what a request printed is in the output pipe
// before its reply is on the channel (the agent drains the output after the reply).
class ReplyChannel {
 public:
  ReplyChannel(int fd, std::string secret) : fd_(fd), secret_(std::move(secret)) {}
  void reply(long long id, const nlohmann::json& body);
  void step(long long id, const std::string& what, double limit_s);

 private:
  void write_line(const nlohmann::json& msg);
  int fd_;
  std::string secret_;
};

}  // namespace tessera::evaluator
