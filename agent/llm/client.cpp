// agent/llm/client.cpp — names of error kinds and the conversation fingerprint
// (FNV-1a over the roles and contents, length-prefixed so that no two different
// conversations concatenate to the same bytes).
#include "agent/llm/client.h"

#include <cstdint>
#include <cstdio>

namespace tessera::llm {

const char* to_string(LlmErrorKind kind) {
  switch (kind) {
    case LlmErrorKind::Config:
      return "config";
    case LlmErrorKind::MissingKey:
      return "missing_key";
    case LlmErrorKind::BudgetExceeded:
      return "budget_exceeded";
    case LlmErrorKind::Timeout:
      return "timeout";
    case LlmErrorKind::Connection:
      return "connection";
    case LlmErrorKind::RateLimited:
      return "rate_limited";
    case LlmErrorKind::Http:
      return "http";
    case LlmErrorKind::BadResponse:
      return "bad_response";
    case LlmErrorKind::ReplayExhausted:
      return "replay_exhausted";
  }
  return "?";
}

namespace {

struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void add(const void* data, size_t n) {
    auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  }
  void add_string(const std::string& s) {
    uint64_t n = s.size();
    add(&n, sizeof n);
    add(s.data(), s.size());
  }
};

}  // namespace

std::string conversation_fingerprint(const Conversation& c) {
  Fnv1a f;
  f.add_string(c.system);
  for (const auto& m : c.messages) {
    char role = m.role == Role::Assistant ? 'a' : 'u';
    f.add(&role, 1);
    f.add_string(m.content);
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(f.h));
  return out;
}

}  // namespace tessera::llm
