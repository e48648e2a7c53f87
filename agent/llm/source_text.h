// agent/llm/source_text.h — a CUDA C++ source seen the way the compiler's first
// phases see it, for the static checks: line splices joined, comments removed,
// string and character literals blanked, and a token list with line numbers.
// Offsets are preserved (removed text becomes spaces; the newlines of spliced lines
// move to the end of the logical line), so a token's line is its line in the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm {

struct CleanSource {
  std::string code;  // splices joined, comments blanked, literals kept
  std::string bare;  // as `code`, with the contents of literals blanked too
};

CleanSource clean_source(std::string_view source);

enum class TokenKind { Identifier, Number, Punct };

struct Token {
  TokenKind kind;
  std::string text;
  int line;       // 1-based
  size_t offset;  // into CleanSource::bare / code
};

// Tokens of `bare`; preprocessor directive lines are skipped. Punctuators are
// single characters except "::" and "<<<" (the launch syntax) which are kept whole.
std::vector<Token> tokenize(const std::string& bare);

// 1-based line number of an offset.
int line_of(const std::string& text, size_t offset);

}  // namespace tessera::llm
