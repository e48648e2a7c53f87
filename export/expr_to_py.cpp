// export/expr_to_py.cpp — a recursive-descent translator from spec expressions to Python.
#include "export/expr_to_py.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <stdexcept>
#include <vector>

namespace tessera::exporter {

namespace {

class PyTranslator {
 public:
  PyTranslator(const std::string& text, const std::function<std::string(const std::string&)>& name)
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
    if (n == 1 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=' && std::string("<>!").find(tok[0]) != std::string::npos)
      return false;
    pos_ += n;
    return true;
  }
  static std::string truth(const std::string& e) { return "(" + e + " != 0)"; }
  static std::string boolean(const std::string& cond) { return "(1.0 if " + cond + " else 0.0)"; }

  std::string ternary() {
    std::string c = logical_or();
    if (!eat("?")) return c;
    std::string a = ternary();
    if (!eat(":")) fail("'?' without ':'");
    std::string b = ternary();
    return "(" + a + " if " + truth(c) + " else " + b + ")";
  }
  std::string logical_or() {
    std::string a = logical_and();
    while (eat("||")) a = boolean(truth(a) + " or " + truth(logical_and()));
    return a;
  }
  std::string logical_and() {
    std::string a = comparison();
    while (eat("&&")) a = boolean(truth(a) + " and " + truth(comparison()));
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
      a = boolean("(" + a + " " + op + " " + additive() + ")");
    }
  }
  std::string additive() {
    std::string a = multiplicative();
    for (;;) {
      if (eat("+"))
        a = "(" + a + " + " + multiplicative() + ")";
      else if (eat("-"))
        a = "(" + a + " - " + multiplicative() + ")";
      else
        return a;
    }
  }
  std::string multiplicative() {
    std::string a = unary();
    for (;;) {
      if (eat("*"))
        a = "(" + a + " * " + unary() + ")";
      else if (eat("/"))
        a = "(" + a + " / " + unary() + ")";
      else if (eat("%"))
        a = "math.fmod(" + a + ", " + unary() + ")";
      else
        return a;
    }
  }
  std::string unary() {
    if (eat("-")) return "(-" + unary() + ")";
    if (eat("+")) return unary();
    return power();
  }
  std::string power() {
    std::string a = primary();
    if (eat("^")) return "(" + a + " ** " + unary() + ")";
    return a;
  }
  std::string primary() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    char ch = s_[pos_];
    if (eat("(")) {
      std::string e = ternary();
      if (!eat(")")) fail("missing ')'");
      return "(" + e + ")";
    }
    if (std::isdigit(static_cast<unsigned char>(ch)) || ch == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') return identifier();
    fail(fmt::format("unexpected '{}'", ch));
  }
  // The literal as written: "128" stays an int, "1e-6" and "0.5" are floats in Python too.
  std::string number() {
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t e = pos_ + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
        pos_ = e;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      }
    }
    std::string t = s_.substr(b, pos_ - b);
    if (t == "." || t.find_first_of("0123456789") == std::string::npos) fail("bad number");
    if (t.front() == '.') t = "0" + t;
    if (t.back() == '.') t += "0";
    return t;
  }
  std::string identifier() {
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string id = s_.substr(b, pos_ - b);
    if (!eat("(")) return name_(id);
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
        {"floor", {"math.floor", 1}}, {"ceil", {"math.ceil", 1}}, {"mod", {"math.fmod", 2}}, {"sqrt", {"math.sqrt", 1}},
        {"abs", {"abs", 1}},          {"exp", {"math.exp", 1}},   {"ln", {"math.log", 1}},   {"log2", {"math.log2", 1}},
        {"log10", {"math.log10", 1}}, {"rint", {"round", 1}},     {"min", {"min", -1}},      {"max", {"max", -1}},
        {"cdiv", {nullptr, 2}},       {"sign", {nullptr, 1}}};
    auto it = fns.find(f);
    if (it == fns.end()) fail("function '" + f + "' cannot be exported");
    int arity = it->second.second;
    if ((arity >= 0 && static_cast<int>(a.size()) != arity) || a.empty())
      fail(fmt::format("{} takes {} argument(s), got {}", f, arity < 0 ? 1 : arity, a.size()));
    if (f == "cdiv") return "math.ceil(" + a[0] + " / " + a[1] + ")";
    if (f == "sign") return "((" + a[0] + " > 0) - (" + a[0] + " < 0))";
    std::string out = std::string(it->second.first) + "(";
    for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + a[i];
    return out + ")";
  }

  const std::string& s_;
  const std::function<std::string(const std::string&)>& name_;
  size_t pos_ = 0;
};

}  // namespace

std::string expr_to_py(const std::string& expr, const std::function<std::string(const std::string&)>& name) {
  return PyTranslator(expr, name).run();
}

}  // namespace tessera::exporter
