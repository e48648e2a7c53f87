// agent/llm/http.h — one HTTPS POST over libcurl, nothing more: no retries, no
// JSON, no logging. Redirects are never followed (a redirect would carry the key's
// header to another host) and only http/https are allowed. Safe to call from
// several threads at once (one curl handle per call).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may hold the key: never log
  std::string body;
  double timeout_s = 60;
  double connect_timeout_s = 10;
  size_t max_response_bytes = 64u << 20;
};

enum class TransportFailure { None, Timeout, Connection };

struct HttpResult {
  TransportFailure failure = TransportFailure::None;
  std::string failure_text;  // libcurl's description when failure != None
  int status = 0;            // 0 when no complete response arrived
  std::string body;
  std::optional<double> retry_after_s;  // Retry-After (seconds) or retry-after-ms
  double seconds = 0;
};

HttpResult http_post(const HttpRequest& request);

// Parses a Retry-After value: delta-seconds (also fractional) or an HTTP date.
std::optional<double> parse_retry_after(const std::string& value);

}  // namespace tessera::llm
