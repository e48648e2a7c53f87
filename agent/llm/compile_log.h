// agent/llm/compile_log.h — making compiler and validation messages fit to send
// to a model: scrub_compile_log drops every diagnostic that quotes a file outside
// the allowed include directories (NVRTC has been seen printing the content of
// `#include "/etc/hostname"` in its log, and logs go to the provider in the next
// prompt), and shorten_message keeps the lines that matter within a size budget.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::llm {

// `allowed_prefixes` are absolute directories (the target folder, targets/common,
// the CUDA include directory). Relative file names without ".." (the candidate's own
// name) are allowed. A diagnostic whose file is elsewhere is removed with its
// indented context lines (which would quote that file's content), and any other line
// quoting such a path is removed; each removal leaves one marker line.
std::string scrub_compile_log(std::string_view log, const std::vector<std::string>& allowed_prefixes);

// True when `path` (as printed in a log) lies under an allowed prefix, or is
// relative without "..".
bool log_path_allowed(std::string_view path, const std::vector<std::string>& allowed_prefixes);

// Keeps the error lines (and the two lines after each) first, then other lines, up
// to max_lines and max_chars, noting what was cut.
std::string shorten_message(std::string_view message, size_t max_lines = 20, size_t max_chars = 1500);

}  // namespace tessera::llm
