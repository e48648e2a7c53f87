// agent/llm/compile_log.cpp — log scrubbing (diagnostic blocks and quoted paths)
// and message shortening.
#include "agent/llm/compile_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "agent/llm/redact.h"

namespace tessera::llm {

namespace {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

bool indented(const std::string& line) {
  return line.empty() || line[0] == ' ' || line[0] == '\t';
}

bool has_parent_segment(std::string_view path) {
  return path == ".." || path.substr(0, 3) == "../" || path.find("/../") != std::string_view::npos ||
         (path.size() >= 3 && path.substr(path.size() - 3) == "/..");
}

// Paths quoted inside a line: "quoted absolute paths", and bare tokens that look
// like /a/b (at least two segments, so `x /y` in a source excerpt is not a path).
std::vector<std::string> quoted_paths(const std::string& line) {
  static const std::regex quoted(R"re("((?:/|~|\.\./)[^"]*)")re");
  static const std::regex bare(R"re((?:^|[\s'(<=,:\[])((?:~|\.\.)?/[^\s"'()<>,:/]+/[^\s"'()<>,:]*))re");
  std::vector<std::string> out;
  for (const auto* re : {&quoted, &bare})
    for (auto it = std::sregex_iterator(line.begin(), line.end(), *re); it != std::sregex_iterator(); ++it)
      out.push_back((*it)[1].str());
  return out;
}

}  // namespace

bool log_path_allowed(std::string_view path, const std::vector<std::string>& allowed_prefixes) {
  if (path.empty()) return true;
  if (has_parent_segment(path) || path.find('\\') != std::string_view::npos) return false;
  if (path[0] == '~') return false;
  if (path[0] != '/') return path.find(':') == std::string_view::npos;  // relative name
  if (path.find("/./") != std::string_view::npos || path.find("//") != std::string_view::npos) return false;
  for (std::string prefix : allowed_prefixes) {
    if (prefix.empty()) continue;
    if (prefix.back() != '/') prefix += '/';
    if (path.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string scrub_compile_log(std::string_view log, const std::vector<std::string>& allowed_prefixes) {
  // NVRTC: "file(12): error: ..."; GCC/Clang style: "file:12:3: error: ...".
  static const std::regex header(
      R"(^(.+?)(?:\((\d+)\)|:(\d+)(?::\d+)?):\s*(?:catastrophic |fatal )?(error|warning|remark|note|message)\b)");
  static const std::regex included_from(R"(^\s*(?:In file included from|from)\s+(.+?)[:,]?\s*$)");
  std::vector<std::string> lines = split_lines(log);
  std::string out;
  auto emit = [&](const std::string& line) {
    out += line;
    out += '\n';
  };
  auto marker = [&](size_t n) {
    emit(
        fmt::format("[tessera: {} line{} quoting a file outside the allowed include "
                    "directories removed]",
                    n, n == 1 ? "" : "s"));
  };
  for (size_t i = 0; i < lines.size();) {
    const std::string& line = lines[i];
    std::smatch m;
    bool block_bad = false;
    if (!indented(line) && std::regex_search(line, m, header))
      block_bad = !log_path_allowed(m[1].str(), allowed_prefixes);
    if (!block_bad && std::regex_search(line, m, included_from))
      block_bad = !log_path_allowed(m[1].str(), allowed_prefixes);
    if (block_bad) {
      size_t j = i + 1;
      while (j < lines.size() && indented(lines[j]) && !lines[j].empty()) ++j;
      marker(j - i);
      i = j;
      continue;
    }
    auto paths = quoted_paths(line);
    bool line_bad = std::any_of(paths.begin(), paths.end(),
                                [&](const std::string& p) { return !log_path_allowed(p, allowed_prefixes); });
    if (line_bad)
      marker(1);
    else
      emit(line);
    ++i;
  }
  if (!log.empty() && log.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

std::string shorten_message(std::string_view message, size_t max_lines, size_t max_chars) {
  std::vector<std::string> lines = split_lines(message);
  while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos) lines.pop_back();
  if (lines.size() > max_lines) {
    std::vector<bool> keep(lines.size(), false);
    size_t kept = 0;
    auto mark = [&](size_t k) {
      if (k < lines.size() && !keep[k] && kept < max_lines) {
        keep[k] = true;
        ++kept;
      }
    };
    for (size_t k = 0; k < lines.size(); ++k) {
      std::string lower = lines[k];
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      if (lower.find("error") != std::string::npos || lower.find("fail") != std::string::npos) {
        mark(k);
        mark(k + 1);
        mark(k + 2);
      }
    }
    for (size_t k = 0; k < lines.size(); ++k) mark(k);
    std::vector<std::string> shorter;
    for (size_t k = 0; k < lines.size(); ++k)
      if (keep[k]) shorter.push_back(lines[k]);
    shorter.push_back(fmt::format("[... {} more lines]", lines.size() - kept));
    lines = std::move(shorter);
  }
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
  return truncate_text(out, max_chars);
}

}  // namespace tessera::llm
