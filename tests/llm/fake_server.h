// tests/llm/fake_server.h — a real HTTP server on 127.0.0.1 (cpp-httplib, an
// ephemeral port) that speaks just enough of the OpenAI chat-completions and
// Anthropic Messages APIs to serve scripted answers: statuses, headers, delays and
// truncated bodies. It records every request so tests can count retries and read
// the headers tessera sent.
#pragma once

#include <httplib.h>

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tessera::llm::testing {

struct Scripted {
  int status = 200;
  std::string body;
  std::map<std::string, std::string> headers;
  double delay_s = 0;     // sleep before answering (past the client's timeout)
  bool truncate = false;  // announce the full length, send half, drop the connection
};

struct SeenRequest {
  std::string path;
  std::string body;
  std::multimap<std::string, std::string> headers;  // names as sent (case kept)
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
    return {};
  }
};

inline std::string openai_answer(const std::string& text, long long prompt_tokens = 100,
                                 long long completion_tokens = 50, const std::string& finish = "stop") {
  return nlohmann::json{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"model", "fake-gpt"},
      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", finish}}}},
      {"usage",
       {{"prompt_tokens", prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", prompt_tokens + completion_tokens}}}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline std::string anthropic_answer(const std::string& text, long long input_tokens = 100, long long output_tokens = 50,
                                    const std::string& stop = "end_turn") {
  return nlohmann::json{{"id", "msg_1"},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", "fake-claude"},
                        {"content", {{{"type", "text"}, {"text", text}}}},
                        {"stop_reason", stop},
                        {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class FakeLlmServer {
 public:
  FakeLlmServer() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); };
    server_.Post("/v1/chat/completions", handler);
    server_.Post("/chat/completions", handler);
    server_.Post("/v1/messages", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket already listens (bind_to_any_port); wait for the accept loop too.
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeLlmServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  void script(std::vector<Scripted> answers) {
    std::lock_guard lock(mutex_);
    script_.assign(answers.begin(), answers.end());
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::vector<SeenRequest> requests() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  size_t request_count() const {
    std::lock_guard lock(mutex_);
    return seen_.size();
  }

 private:
  void serve(const httplib::Request& req, httplib::Response& res) {
    Scripted answer;
    {
      std::lock_guard lock(mutex_);
      SeenRequest seen{req.path, req.body, {}};
      for (const auto& [k, v] : req.headers) seen.headers.emplace(k, v);
      seen_.push_back(std::move(seen));
      if (script_.empty()) {
        answer = {500, R"({"error":{"message":"the test script is exhausted"}})"};
      } else {
        answer = script_.front();
        script_.pop_front();
      }
    }
    if (answer.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(answer.delay_s));
    res.status = answer.status;
    for (const auto& [k, v] : answer.headers) res.set_header(k, v);
    if (answer.truncate) {
      auto body = std::make_shared<std::string>(answer.body);
      res.set_content_provider(body->size(), "application/json",
                               [body](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset > 0) return false;  // drop the connection
                                 sink.write(body->data(), body->size() / 2);
                                 return true;
                               });
    } else {
      res.set_content(answer.body, "application/json");
    }
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::deque<Scripted> script_;
  std::vector<SeenRequest> seen_;
};

}  // namespace tessera::llm::testing
