// agent/llm/redact.cpp — Redactor: whole-key and key-fragment redaction, and a
// UTF-8-safe truncation used for error excerpts.
#include "agent/llm/redact.h"

#include <unordered_set>
#include <vector>

namespace tessera::llm {

namespace {
constexpr size_t kWindow = 8;  // shortest key fragment that is redacted
}

std::string Redactor::operator()(std::string_view text) const {
  if (secret_.empty() || text.empty()) return std::string(text);
  std::vector<bool> hide(text.size(), false);
  bool any = false;
  if (secret_.size() < kWindow) {
    for (size_t pos = text.find(secret_); pos != std::string_view::npos; pos = text.find(secret_, pos + 1)) {
      for (size_t i = 0; i < secret_.size(); ++i) hide[pos + i] = true;
      any = true;
    }
  } else {
    std::unordered_set<std::string_view> fragments;
    std::string_view s(secret_);
    for (size_t i = 0; i + kWindow <= s.size(); ++i) fragments.insert(s.substr(i, kWindow));
    for (size_t i = 0; i + kWindow <= text.size(); ++i) {
      if (fragments.count(text.substr(i, kWindow))) {
        for (size_t k = 0; k < kWindow; ++k) hide[i + k] = true;
        any = true;
      }
    }
  }
  if (!any) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (hide[i]) {
      out += kRedacted;
      while (i < text.size() && hide[i]) ++i;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size() && !(len == 2 && c < 0xC2) && !(len == 4 && c > 0xF4);
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {  // no overlong forms, no surrogates
      unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
    }
    if (ok && len == 4) {
      unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string truncate_text(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  size_t cut = max_chars;
  // Do not cut a UTF-8 sequence in half: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + " [... " + std::to_string(text.size() - cut) + " more bytes]";
}

}  // namespace tessera::llm
