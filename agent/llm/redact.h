// agent/llm/redact.h — text hygiene before anything leaves a client: removing the
// API key from error messages, server bodies that echo it and reply text; valid
// UTF-8; bounded excerpts. Besides
// the whole key, any run of 8 or more of its consecutive characters is redacted,
// so a server that prints part of the key ("sk-proj-abc...") leaks nothing useful.
#pragma once

#include <string>
#include <string_view>

namespace tessera::llm {

inline constexpr std::string_view kRedacted = "[REDACTED]";

class Redactor {
 public:
  Redactor() = default;
  explicit Redactor(std::string secret) : secret_(std::move(secret)) {}
  std::string operator()(std::string_view text) const;
  bool empty() const { return secret_.empty(); }

 private:
  std::string secret_;
};

// Replaces invalid UTF-8 (a server body cut mid-character, a binary answer) with
// U+FFFD, so that every string a client returns can be stored as JSON or SQLite text.
std::string to_valid_utf8(std::string_view text);

// Shortens text to at most max_chars (UTF-8 safe at the cut), marking the cut.
std::string truncate_text(std::string_view text, size_t max_chars);

}  // namespace tessera::llm
