// agent/llm/source_text.cpp — comment/literal blanking with line splices and a
// small tokenizer. Not a preprocessor: macros are not expanded here.
#include "agent/llm/source_text.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace tessera::llm {

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Phase 2: joins backslash-newline; the removed newlines are re-emitted at the end
// of the logical line so later line numbers do not shift.
std::string splice_lines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  int pending_newlines = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\') {
      size_t j = i + 1;
      while (j < src.size() && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r')) ++j;
      if (j < src.size() && src[j] == '\n') {
        ++pending_newlines;
        i = j;
        continue;
      }
    }
    out += src[i];
    if (src[i] == '\n') {
      out.append(pending_newlines, '\n');
      pending_newlines = 0;
    }
  }
  out.append(pending_newlines, '\n');
  return out;
}

}  // namespace

CleanSource clean_source(std::string_view source) {
  std::string s = splice_lines(source);
  CleanSource out{s, s};
  auto blank = [&](std::string& t, size_t from, size_t to) {
    for (size_t k = from; k < to && k < t.size(); ++k)
      if (t[k] != '\n') t[k] = ' ';
  };
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      blank(out.code, i, e);
      blank(out.bare, i, e);
      i = e;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      e = e == std::string::npos ? s.size() : e + 2;
      blank(out.code, i, e);
      blank(out.bare, i, e);
      i = e;
    } else if (c == '"' || c == '\'') {
      // Raw string: R"delim( ... )delim", possibly prefixed (u8R, LR, uR, UR).
      if (c == '"' && i > 0 && s[i - 1] == 'R') {
        size_t open = s.find('(', i + 1);
        if (open != std::string::npos) {
          std::string close(1, ')');  // built piecewise: GCC 12 warns (-Wrestrict) on ")" + s
          close.append(s, i + 1, open - i - 1);
          close.push_back('"');
          size_t e = s.find(close, open + 1);
          e = e == std::string::npos ? s.size() : e + close.size();
          blank(out.bare, i + 1, e - 1);
          i = e;
          continue;
        }
      }
      size_t j = i + 1;
      while (j < s.size() && s[j] != c && s[j] != '\n') j += (s[j] == '\\') ? 2 : 1;
      size_t e = std::min(j, s.size());
      blank(out.bare, i + 1, e);
      i = e + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      // pp-number, which may hold digit separators (1'000) that are not char literals.
      size_t j = i + 1;
      while (j < s.size()) {
        char d = s[j];
        if (ident_char(d) || d == '.' || (d == '\'' && j + 1 < s.size() && ident_char(s[j + 1])))
          ++j;
        else if ((d == '+' || d == '-') && std::strchr("eEpP", s[j - 1]))
          ++j;
        else
          break;
      }
      i = j;
    } else if (ident_start(c)) {
      while (i < s.size() && ident_char(s[i])) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

int line_of(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + int(std::count(text.begin(), text.begin() + long(offset), '\n'));
}

std::vector<Token> tokenize(const std::string& bare) {
  std::vector<Token> tokens;
  int line = 1;
  bool line_start = true;  // only whitespace so far on this line
  size_t i = 0;
  while (i < bare.size()) {
    char c = bare[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (line_start && (c == '#' || (c == '%' && i + 1 < bare.size() && bare[i + 1] == ':'))) {
      size_t e = bare.find('\n', i);  // a directive: skip to the end of the line
      i = e == std::string::npos ? bare.size() : e;
      continue;
    }
    line_start = false;
    size_t start = i;
    TokenKind kind = TokenKind::Punct;
    if (ident_start(c)) {
      while (i < bare.size() && ident_char(bare[i])) ++i;
      kind = TokenKind::Identifier;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < bare.size() && (ident_char(bare[i]) || bare[i] == '.' || bare[i] == '\'')) ++i;
      kind = TokenKind::Number;
    } else if (bare.compare(i, 3, "<<<") == 0) {
      i += 3;
    } else if (bare.compare(i, 2, "::") == 0) {
      i += 2;
    } else {
      ++i;
    }
    tokens.push_back({kind, bare.substr(start, i - start), line, start});
  }
  return tokens;
}

}  // namespace tessera::llm
