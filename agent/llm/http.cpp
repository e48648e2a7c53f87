// agent/llm/http.cpp — http_post over libcurl's easy interface, with the global
// init done once, header capture for Retry-After and a cap on the body size.
#include "agent/llm/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace tessera::llm {

namespace {

void global_init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string* body;
  size_t max_bytes;
  std::optional<double>* retry_after;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  if (sink->body->size() + n > sink->max_bytes) return 0;  // aborts the transfer
  sink->body->append(data, n);
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  std::string line(data, n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = lower(trim(line.substr(0, colon)));
    std::string value = trim(line.substr(colon + 1));
    if (name == "retry-after") {
      if (auto v = parse_retry_after(value)) *sink->retry_after = v;
    } else if (name == "retry-after-ms" && !sink->retry_after->has_value()) {
      char* end = nullptr;
      double ms = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && ms >= 0) *sink->retry_after = ms / 1000.0;
    }
  }
  return n;
}

}  // namespace

std::optional<double> parse_retry_after(const std::string& raw) {
  std::string value = trim(raw);
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && *end == '\0') {
    if (seconds < 0) return std::nullopt;
    return seconds;
  }
  time_t when = curl_getdate(value.c_str(), nullptr);  // HTTP-date form
  if (when == -1) return std::nullopt;
  double delta = std::difftime(when, std::time(nullptr));
  return delta > 0 ? delta : 0.0;
}

HttpResult http_post(const HttpRequest& request) {
  global_init_once();
  HttpResult result;
  CURL* curl = curl_easy_init();
  if (!curl) {
    result.failure = TransportFailure::Connection;
    result.failure_text = "libcurl could not create a handle";
    return result;
  }
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());

  char error_buffer[CURL_ERROR_SIZE] = {0};
  Sink sink{&result.body, request.max_response_bytes, &result.retry_after_s};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(request.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, long(request.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // any encoding curl can decode
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif

  auto start = std::chrono::steady_clock::now();
  CURLcode code = curl_easy_perform(curl);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    result.status = int(status);
  } else {
    result.failure = code == CURLE_OPERATION_TIMEDOUT ? TransportFailure::Timeout : TransportFailure::Connection;
    result.failure_text = error_buffer[0] ? std::string(error_buffer) : curl_easy_strerror(code);
    if (code == CURLE_WRITE_ERROR)
      result.failure_text = "the response was larger than " + std::to_string(request.max_response_bytes) + " bytes";
    result.body.clear();
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return result;
}

}  // namespace tessera::llm
