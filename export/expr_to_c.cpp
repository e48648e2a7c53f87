// export/expr_to_c.cpp — a recursive-descent translator from spec expressions to C++.
#include "export/expr_to_c.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

namespace tessera::exporter {

namespace {

class Translator {
 public:
  Translator(const std::string& text, const std::function<std::string(const std::string&)>& name)
      : s_(text), name_(name) {}

  std::string run() {
    std::string out = ternary();
    skip();
    if (pos_ != s_.size()) fail(fmt::format("unexpected '{}'", s_.substr(pos_, 10)));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("expression '{}': {} (at character {})", s_, what, pos_ + 1));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    // '<' must not eat the first half of '<=', '=' is only ever '=='.
    if (n == 1 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=' && std::string("<>!").find(tok[0]) != std::string::npos)
      return false;
    pos_ += n;
    return true;
  }
  static std::string truth(const std::string& e) { return fmt::format("({} != 0.0)", e); }
  static std::string boolean(const std::string& cond) { return fmt::format("({} ? 1.0 : 0.0)", cond); }

  std::string ternary() {
    std::string c = logical_or();
    if (!eat("?")) return c;
    std::string a = ternary();
    if (!eat(":")) fail("'?' without ':'");
    std::string b = ternary();
    return fmt::format("({} ? {} : {})", truth(c), a, b);
  }
  std::string logical_or() {
    std::string a = logical_and();
    while (eat("||")) a = boolean(fmt::format("{} || {}", truth(a), truth(logical_and())));
    return a;
  }
  std::string logical_and() {
    std::string a = comparison();
    while (eat("&&")) a = boolean(fmt::format("{} && {}", truth(a), truth(comparison())));
    return a;
  }
  std::string comparison() {
    std::string a = additive();
    for (;;) {
      const char* op = nullptr;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"})
        if (eat(o)) {
          op = o;
          break;
        }
      if (!op) return a;
      a = boolean(fmt::format("{} {} {}", a, op, additive()));
    }
  }
  std::string additive() {
    std::string a = multiplicative();
    for (;;) {
      if (eat("+"))
        a = fmt::format("({} + {})", a, multiplicative());
      else if (eat("-"))
        a = fmt::format("({} - {})", a, multiplicative());
      else
        return a;
    }
  }
  std::string multiplicative() {
    std::string a = unary();
    for (;;) {
      if (eat("*"))
        a = fmt::format("({} * {})", a, unary());
      else if (eat("/"))
        a = fmt::format("({} / {})", a, unary());
      else if (eat("%"))
        a = fmt::format("std::fmod({}, {})", a, unary());
      else
        return a;
    }
  }
  std::string unary() {
    if (eat("-")) return fmt::format("(-{})", unary());
    if (eat("+")) return unary();
    return power();
  }
  std::string power() {
    std::string a = primary();
    if (eat("^")) return fmt::format("std::pow({}, {})", a, unary());  // right-associative
    return a;
  }
  std::string primary() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    char ch = s_[pos_];
    if (eat("(")) {
      std::string e = ternary();
      if (!eat(")")) fail("missing ')'");
      return fmt::format("({})", e);
    }
    if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') return identifier();
    fail(fmt::format("unexpected '{}'", ch));
  }
  std::string number() {
    const char* start = s_.c_str() + pos_;
    char* end = nullptr;
    double v = std::strtod(start, &end);
    if (end == start) fail("bad number");
    pos_ += static_cast<size_t>(end - start);
    std::string t = fmt::format("{}", v);
    if (t.find_first_of(".en") == std::string::npos) t += ".0";
    return t;
  }
  std::string identifier() {
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string id = s_.substr(b, pos_ - b);
    if (!eat("(")) return fmt::format("({})", name_(id));
    std::vector<std::string> args;
    if (!eat(")")) {
      do args.push_back(ternary());
      while (eat(","));
      if (!eat(")")) fail("missing ')' after the arguments of " + id);
    }
    return call(id, args);
  }
  std::string call(const std::string& f, const std::vector<std::string>& a) {
    static const std::map<std::string, std::pair<const char*, int>> fns = {
        {"cdiv", {"tessera_cdiv", 2}}, {"floor", {"std::floor", 1}}, {"ceil", {"std::ceil", 1}},
        {"mod", {"std::fmod", 2}},     {"sqrt", {"std::sqrt", 1}},   {"abs", {"std::fabs", 1}},
        {"exp", {"std::exp", 1}},      {"ln", {"std::log", 1}},      {"log2", {"std::log2", 1}},
        {"log10", {"std::log10", 1}},  {"rint", {"std::rint", 1}},   {"sign", {"tessera_sign", 1}},
        {"min", {"tessera_min", -1}},  {"max", {"tessera_max", -1}}};
    auto it = fns.find(f);
    if (it == fns.end()) fail("function '" + f + "' cannot be exported");
    int arity = it->second.second;
    if ((arity >= 0 && static_cast<int>(a.size()) != arity) || a.empty())
      fail(fmt::format("{} takes {} argument(s), got {}", f, arity < 0 ? 1 : arity, a.size()));
    if (arity < 0) {  // min/max are variadic in muParser: fold them
      std::string acc = a[0];
      for (size_t i = 1; i < a.size(); ++i) acc = fmt::format("{}({}, {})", it->second.first, acc, a[i]);
      return a.size() == 1 ? a[0] : acc;
    }
    return fmt::format("{}({})", it->second.first, fmt::join(a, ", "));
  }

  const std::string& s_;
  const std::function<std::string(const std::string&)>& name_;
  size_t pos_ = 0;
};

}  // namespace

std::string expr_to_c(const std::string& expr, const std::function<std::string(const std::string&)>& name) {
  return Translator(expr, name).run();
}

const char* expr_helpers_source() {
  // (shipped code, formatted by hand: clang-format would format the raw string as C++)
  // clang-format off
  return R"CPP(static inline double tessera_cdiv(double a, double b) { return std::ceil(a / b); }
static inline double tessera_min(double a, double b) { return a < b ? a : b; }
static inline double tessera_max(double a, double b) { return a > b ? a : b; }
static inline double tessera_sign(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0; }
)CPP";
  // clang-format on
}

}  // namespace tessera::exporter
