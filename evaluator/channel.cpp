// evaluator/channel.cpp — reading and writing lines of the worker's private channel.
#include "evaluator/channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <random>
#include <stdexcept>

namespace tessera::evaluator {

using nlohmann::json;

namespace {

// The start of a line as a message can quote it: printable ASCII only, shortened.
std::string quoted_start(const std::string& line) {
  std::string out;
  for (char ch : line.substr(0, 80)) out += ch >= 32 && ch < 127 ? ch : '?';
  return line.size() > 80 ? out + "..." : out;
}

}  // namespace

ChannelMessage read_channel_line(const std::string& line, const std::string& secret, long long id) {
  ChannelMessage m;
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    m.why = fmt::format("the reply channel carried a line that is not a JSON object: '{}'", quoted_start(line));
    return m;
  }
  auto sec = j.find("secret");
  if (sec == j.end() || !sec->is_string() || sec->get<std::string>() != secret) {
    m.why = "the reply channel carried a message without the worker's secret";
    return m;
  }
  auto rid = j.find("id");
  if (rid == j.end() || !rid->is_number_integer() || rid->get<long long>() != id) {
    m.why = fmt::format("the reply channel carried a message for request {} while request {} ran",
                        rid == j.end() ? std::string("(none)") : rid->dump(), id);
    return m;
  }
  if (auto r = j.find("reply"); r != j.end() && r->is_object() && !j.contains("step")) {
    m.kind = ChannelMessage::Kind::reply;
    m.body = std::move(*r);
    return m;
  }
  if (auto s = j.find("step"); s != j.end() && !j.contains("reply") && s->is_object() && s->contains("limit_s") &&
                               s->at("limit_s").is_number() && s->at("limit_s").get<double>() > 0) {
    m.kind = ChannelMessage::Kind::step;
    m.body = std::move(*s);
    return m;
  }
  m.why = "the reply channel carried a message that is neither a reply nor a step";
  return m;
}

std::string make_channel_secret() {
  std::random_device rd;  // /dev/urandom on Linux
  std::string s;
  for (int i = 0; i < 4; ++i) s += fmt::format("{:08x}", rd());
  return s;
}

void ReplyChannel::reply(long long id, const json& body) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  write_line({{"id", id}, {"secret", secret_}, {"reply", body}});
}

void ReplyChannel::step(long long id, const std::string& what, double limit_s) {
  write_line({{"id", id}, {"secret", secret_}, {"step", {{"what", what}, {"limit_s", limit_s}}}});
}

void ReplyChannel::write_line(const json& msg) {
  std::string line = msg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n <= 0) throw std::runtime_error("the reply channel is closed");
    off += static_cast<size_t>(n);
  }
}

}  // namespace tessera::evaluator
