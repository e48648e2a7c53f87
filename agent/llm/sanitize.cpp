// agent/llm/sanitize.cpp — check_source: directive checks on the comment-free
// text, token checks on the literal-free text (with object-like macros expanded),
// and a scope walk that finds variables which would persist between launches.
#include "agent/llm/sanitize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "agent/llm/source_text.h"

namespace tessera::llm {

namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

struct Checker {
  const StaticCheckOptions& options;
  std::vector<Violation> found;
  std::map<std::string, std::vector<Token>> object_macros;

  void add(int line, const char* rule, std::string message) { found.push_back({line, rule, std::move(message)}); }

  // ---- includes and directives -------------------------------------------------

  void check_header(int line, std::string_view name, const char* how) {
    if (header_allowed(name, options)) return;
    std::string why;
    if (starts_with(name, "/") || name.find(':') != std::string_view::npos)
      why = "an absolute path";
    else if (name.find("..") != std::string_view::npos)
      why = "a path with '..'";
    else if (name.find('\\') != std::string_view::npos)
      why = "a path with a backslash";
    else
      why = "not an allowed header";
    add(line, "include",
        fmt::format("{} \"{}\" is {}: only <cuda_bf16.h>, <cuda_fp16.h>, <cuda_fp8.h>, "
                    "<mma.h>, <cuda_pipeline.h>, <cooperative_groups.h>, <cuda/...>, "
                    "\"tile/...\" and files of the target folder may be included",
                    how, name, why));
  }

  void check_directives(const CleanSource& src) {
    static const std::set<std::string> allowed_directives = {"define", "undef",   "if",       "ifdef", "ifndef",
                                                             "elif",   "elifdef", "elifndef", "else",  "endif",
                                                             "pragma", "error",   "warning",  ""};
    size_t start = 0;
    int line = 1;
    while (start <= src.code.size()) {
      size_t end = src.code.find('\n', start);
      if (end == std::string::npos) end = src.code.size();
      std::string text = trim(std::string_view(src.code).substr(start, end - start));
      std::string bare = trim(std::string_view(src.bare).substr(start, end - start));
      if (starts_with(text, "?\?=")) {
        add(line, "preprocessor", "trigraphs (?\?=) are not allowed");
      } else if (starts_with(text, "%:")) {
        add(line, "preprocessor", "the digraph %: is not allowed; write #");
      } else if (starts_with(text, "#")) {
        check_directive(line, trim(std::string_view(text).substr(1)), trim(std::string_view(bare).substr(1)),
                        allowed_directives);
      }
      if (end == src.code.size()) break;
      start = end + 1;
      ++line;
    }
    // __has_include can probe any file, in #if lines or anywhere else.
    static const std::regex has_include(R"re(__has_include(_next)?\s*\(\s*(<([^>]*)>|"([^"]*)")?)re");
    for (auto it = std::sregex_iterator(src.code.begin(), src.code.end(), has_include); it != std::sregex_iterator();
         ++it) {
      int l = line_of(src.code, size_t(it->position()));
      if (!(*it)[2].matched)
        add(l, "preprocessor", "__has_include must name a header literally");
      else
        check_header(l, (*it)[3].matched ? (*it)[3].str() : (*it)[4].str(), "__has_include of");
    }
  }

  void check_directive(int line, const std::string& rest, const std::string& bare_rest,
                       const std::set<std::string>& allowed) {
    size_t n = 0;
    while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
    std::string name = rest.substr(0, n);
    std::string arg = trim(std::string_view(rest).substr(n));
    if (name == "include" || name == "include_next" || name == "import") {
      char open = arg.empty() ? '\0' : arg[0];
      char close = open == '<' ? '>' : open == '"' ? '"' : '\0';
      size_t e = close ? arg.find(close, 1) : std::string::npos;
      if (e == std::string::npos) {
        add(line, "include", fmt::format("#{} {} does not name a header literally (<name> or \"name\")", name, arg));
        return;
      }
      if (name != "include") add(line, "include", fmt::format("#{} is not allowed; use #include", name));
      check_header(line, std::string_view(arg).substr(1, e - 1), "#include");
    } else if (name == "define") {
      record_define(line, trim(std::string_view(bare_rest).substr(n)));
    } else if (!allowed.count(name)) {
      add(line, "preprocessor", fmt::format("the directive #{} is not allowed", name));
    }
  }

  void record_define(int line, const std::string& def) {
    size_t n = 0;
    while (n < def.size() && (std::isalnum(static_cast<unsigned char>(def[n])) || def[n] == '_')) ++n;
    std::string name = def.substr(0, n);
    bool function_like = n < def.size() && def[n] == '(';
    std::vector<Token> body = tokenize(def.substr(n));
    for (auto& t : body) t.line = line;
    // Object-like macros are checked where they are used (expanded); function-like
    // ones are not expanded, so their bodies are checked here.
    if (function_like)
      check_tokens(body);
    else if (!name.empty())
      object_macros[name] = body;
  }

  // ---- tokens ------------------------------------------------------------------

  std::vector<Token> expand(const std::vector<Token>& in, int depth = 0) const {
    std::vector<Token> out;
    for (const auto& t : in) {
      auto it = t.kind == TokenKind::Identifier ? object_macros.find(t.text) : object_macros.end();
      if (it == object_macros.end() || depth > 4) {
        out.push_back(t);
        continue;
      }
      for (Token u : expand(it->second, depth + 1)) {
        u.line = t.line;
        u.offset = t.offset;
        out.push_back(u);
      }
    }
    return out;
  }

  void check_tokens(const std::vector<Token>& toks) {
    auto text = [&](size_t i) -> std::string_view {
      return i < toks.size() ? std::string_view(toks[i].text) : std::string_view();
    };
    static const std::vector<std::pair<std::string, const char*>> forbidden_prefixes = {
        {"cudaLaunch", "launch"},         {"cudaGetParameterBuffer", "launch"},
        {"cuLaunch", "launch"},           {"cudaGraph", "launch"},
        {"cudaStream", "stream"},         {"cudaEvent", "stream"},
        {"cuStream", "stream"},           {"cudaDeviceSynchronize", "stream"},
        {"cudaMalloc", "allocation"},     {"cudaFree", "allocation"},
        {"cudaMemcpy", "allocation"},     {"cudaMemset", "allocation"},
        {"cudaHost", "allocation"},       {"cudaMemPool", "allocation"},
        {"cuMem", "allocation"},          {"cudaSetDevice", "host_code"},
        {"cudaDeviceReset", "host_code"}, {"cuCtx", "host_code"},
        {"cuModule", "host_code"}};
    static const std::set<std::string> heap_calls = {"malloc", "free", "calloc", "realloc"};
    static const std::set<std::string> host_calls = {"fopen", "fprintf", "fwrite", "fread", "fputs", "puts", "system",
                                                     "exit",  "abort",   "getenv", "popen", "scanf", "FILE"};
    for (size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.text == "<<<" || (t.text == "<" && text(i + 1) == "<" && text(i + 2) == "<")) {
        add(t.line, "launch", "kernel launch syntax <<<...>>> is not allowed in a candidate");
        continue;
      }
      if (t.kind != TokenKind::Identifier) continue;
      bool call = text(i + 1) == "(";
      if (t.text == "main" && call) {
        add(t.line, "host_code", "main() is host code; a candidate holds only device code");
      } else if (t.text == "std" && (text(i + 1) == "::" || (i > 0 && text(i - 1) == "namespace"))) {
        bool libcudacxx = i >= 2 && text(i - 1) == "::" && text(i - 2) == "cuda";
        if (!libcudacxx) add(t.line, "host_code", "the C++ standard library (std::) is host code; use cuda::std::");
      } else if (heap_calls.count(t.text) && call) {
        add(t.line, "allocation",
            fmt::format("{}() uses the device heap, whose memory persists between launches", t.text));
      } else if (host_calls.count(t.text) && (call || t.text == "FILE")) {
        add(t.line, "host_code", fmt::format("{} is a host library facility", t.text));
      } else if (t.text == "__trap" || t.text == "__brkpt") {
        add(t.line, "trap", fmt::format("{}() kills the context; return early instead", t.text));
      } else if (t.text == "__managed__" && !options.allow_all_device_globals) {
        add(t.line, "global_state", "__managed__ memory persists between launches");
      } else if (t.text == "__host__") {
        bool device = false;
        for (size_t k = i >= 3 ? i - 3 : 0; k < std::min(toks.size(), i + 4); ++k)
          device |= toks[k].text == "__device__" || toks[k].text == "__global__";
        if (!device) add(t.line, "host_code", "a __host__-only function is host code; use __device__");
      } else {
        for (const auto& [prefix, rule] : forbidden_prefixes)
          if (starts_with(t.text, prefix)) {
            add(t.line, rule,
                fmt::format("{} is a runtime/driver API call; a candidate may not launch, "
                            "synchronize, use streams or allocate",
                            t.text));
            break;
          }
      }
    }
  }

  // ---- asm ---------------------------------------------------------------------

  void check_asm(const CleanSource& src, const std::vector<Token>& toks) {
    static const std::regex trap_word(R"(\b(trap|brkpt)\b)");
    for (const auto& t : toks) {
      if (t.text != "asm" && t.text != "__asm__" && t.text != "__asm") continue;
      size_t open = src.bare.find('(', t.offset);
      if (open == std::string::npos) continue;
      int depth = 0;
      size_t e = open;
      for (; e < src.bare.size(); ++e) {
        if (src.bare[e] == '(') ++depth;
        if (src.bare[e] == ')' && --depth == 0) break;
      }
      std::string body = src.code.substr(open, e - open);
      if (std::regex_search(body, trap_word))
        add(t.line, "trap", "inline PTX with trap/brkpt kills the context; return early instead");
    }
  }

  // ---- state that persists between launches ------------------------------------

  enum class Scope { Transparent, Class, Function };

  static bool has(const std::vector<const Token*>& stmt, std::string_view word) {
    return std::any_of(stmt.begin(), stmt.end(), [&](const Token* t) { return t->text == word; });
  }

  // True when a '(' appears before any '=' (a function), ignoring the parentheses
  // of attributes such as __align__(16).
  static bool function_like(const std::vector<const Token*>& stmt) {
    static const std::set<std::string> attrs = {"__align__", "alignas", "__attribute__", "__declspec",
                                                "__launch_bounds__"};
    for (size_t i = 0; i < stmt.size(); ++i) {
      const std::string& s = stmt[i]->text;
      if (s == "=") return false;
      if (s == "(") {
        if (i > 0 && attrs.count(stmt[i - 1]->text)) {
          for (int depth = 0; i < stmt.size(); ++i) {
            if (stmt[i]->text == "(") ++depth;
            if (stmt[i]->text == ")" && --depth == 0) break;
          }
          continue;
        }
        return true;
      }
    }
    return false;
  }

  static std::string declared_name(const std::vector<const Token*>& stmt) {
    std::string name;
    for (const Token* t : stmt) {
      if (t->text == "=" || t->text == "[" || t->text == "{") break;
      if (t->kind == TokenKind::Identifier) name = t->text;
    }
    return name;
  }

  void check_statement(const std::vector<const Token*>& stmt, Scope scope) {
    if (stmt.empty() || options.allow_all_device_globals) return;
    if (has(stmt, "typedef") || has(stmt, "using") || has(stmt, "__global__") || has(stmt, "const") ||
        has(stmt, "constexpr") || has(stmt, "__constant__") || has(stmt, "__shared__") || has(stmt, "extern") ||
        function_like(stmt))
      return;
    // At namespace scope a __device__ variable persists; inside a class or a function
    // a static one does (a __device__ inside a function body marks a lambda).
    bool persistent =
        scope == Scope::Transparent ? has(stmt, "__device__") || has(stmt, "__managed__") : has(stmt, "static");
    if (!persistent) return;
    std::string name = declared_name(stmt);
    if (std::find(options.allowed_device_globals.begin(), options.allowed_device_globals.end(), name) !=
        options.allowed_device_globals.end())
      return;
    add(stmt.front()->line, "global_state",
        fmt::format("'{}' is a non-const {} variable: it persists between launches (the "
                    "spec does not declare it); make it const, __shared__, or a local",
                    name, scope == Scope::Transparent ? "__device__" : "static"));
  }

  void check_scopes(const std::vector<Token>& toks) {
    std::vector<Scope> scopes{Scope::Transparent};
    std::vector<std::vector<const Token*>> stmts(1);
    for (size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      auto& stmt = stmts.back();
      if (t.text == ";") {
        check_statement(stmt, scopes.back());
        stmt.clear();
      } else if (t.text == "{") {
        bool is_init = !function_like(stmt) && (has(stmt, "=") || has(stmt, "enum") ||
                                                (!has(stmt, "namespace") && !has(stmt, "struct") &&
                                                 !has(stmt, "class") && !has(stmt, "union") && !has(stmt, "extern") &&
                                                 !stmt.empty() && scopes.back() != Scope::Function));
        if (is_init) {  // a braced initializer: skip it, the statement goes on
          for (int depth = 0; i < toks.size(); ++i) {
            if (toks[i].text == "{") ++depth;
            if (toks[i].text == "}" && --depth == 0) break;
          }
          stmt.push_back(&t);
          continue;
        }
        Scope inner = Scope::Function;
        if (has(stmt, "namespace") || (has(stmt, "extern") && !function_like(stmt)))
          inner = Scope::Transparent;
        else if ((has(stmt, "struct") || has(stmt, "class") || has(stmt, "union")) && !function_like(stmt))
          inner = Scope::Class;
        stmt.clear();
        scopes.push_back(inner);
        stmts.emplace_back();
      } else if (t.text == "}") {
        if (scopes.size() > 1) {
          scopes.pop_back();
          stmts.pop_back();
        }
        stmts.back().clear();
      } else {
        stmt.push_back(&t);
      }
    }
  }
};

}  // namespace

bool header_allowed(std::string_view name, const StaticCheckOptions& options) {
  if (name.empty() || starts_with(name, "/") || name.find("..") != std::string_view::npos ||
      name.find('\\') != std::string_view::npos || name.find(':') != std::string_view::npos ||
      name.find("//") != std::string_view::npos)
    return false;
  auto in = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (in(options.allowed_headers) || in(options.target_files)) return true;
  for (const auto& prefix : options.allowed_header_prefixes)
    if (starts_with(name, prefix) && name.size() > prefix.size()) return true;
  return false;
}

std::vector<Violation> check_source(std::string_view source, const StaticCheckOptions& options) {
  Checker checker{options, {}, {}};
  CleanSource src = clean_source(source);
  checker.check_directives(src);
  std::vector<Token> raw = tokenize(src.bare);
  std::vector<Token> toks = checker.expand(raw);
  checker.check_tokens(toks);
  checker.check_asm(src, raw);
  checker.check_scopes(toks);
  std::stable_sort(checker.found.begin(), checker.found.end(),
                   [](const Violation& a, const Violation& b) { return a.line < b.line; });
  checker.found.erase(std::unique(checker.found.begin(), checker.found.end()), checker.found.end());
  return checker.found;
}

std::string format_violations(const std::vector<Violation>& violations) {
  std::string out;
  for (const auto& v : violations) {
    if (!out.empty()) out += '\n';
    out += fmt::format("line {}: [{}] {}", v.line, v.rule, v.message);
  }
  return out;
}

}  // namespace tessera::llm
