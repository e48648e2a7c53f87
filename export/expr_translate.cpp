// export/expr_translate.cpp — a recursive-descent translator from spec expressions to
// the language an ExprDialect describes.
#include "export/expr_translate.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

namespace tessera::exporter {

namespace {

class Translator {
 public:
  Translator(const std::string& text, const std::function<std::string(const std::string&)>& name, const ExprDialect& d)
      : s_(text), name_(name), d_(d) {}

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
  std::string truth(const std::string& e) const { return fmt::format(fmt::runtime(d_.truth), e); }
  std::string boolean(const std::string& cond) const { return fmt::format(fmt::runtime(d_.boolean), cond); }
  std::string logic(const std::string& a, const char* op, const std::string& b) const {
    return boolean(fmt::format("{} {} {}", truth(a), op, truth(b)));
  }

  std::string ternary() {
    std::string c = logical_or();
    if (!eat("?")) return c;
    std::string a = ternary();
    if (!eat(":")) fail("'?' without ':'");
    std::string b = ternary();
    return fmt::format(fmt::runtime(d_.ternary), truth(c), a, b);
  }
  std::string logical_or() {
    std::string a = logical_and();
    while (eat("||")) a = logic(a, d_.logical_or, logical_and());
    return a;
  }
  std::string logical_and() {
    std::string a = comparison();
    while (eat("&&")) a = logic(a, d_.logical_and, comparison());
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
      a = boolean(fmt::format(fmt::runtime(d_.comparison), a, op, additive()));
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
        a = fmt::format(fmt::runtime(d_.modulo), a, unary());
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
    if (eat("^")) return fmt::format(fmt::runtime(d_.power), a, unary());  // right-associative
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
    std::string t = d_.number(s_, pos_);
    if (t.empty()) fail("bad number");
    return t;
  }
  std::string identifier() {
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string id = s_.substr(b, pos_ - b);
    if (!eat("(")) return fmt::format(fmt::runtime(d_.name), name_(id));
    std::vector<std::string> args;
    if (!eat(")")) {
      do args.push_back(ternary());
      while (eat(","));
      if (!eat(")")) fail("missing ')' after the arguments of " + id);
    }
    return call(id, args);
  }
  std::string call(const std::string& f, const std::vector<std::string>& a) const {
    const ExprFunction* fn = nullptr;
    for (const ExprFunction& g : d_.functions)
      if (f == g.name) fn = &g;
    if (!fn) fail("function '" + f + "' cannot be exported");
    if ((fn->arity >= 0 && static_cast<int>(a.size()) != fn->arity) || a.empty())
      fail(fmt::format("{} takes {} argument(s), got {}", f, fn->arity < 0 ? 1 : fn->arity, a.size()));
    if (fn->arity < 0 && d_.fold_variadic) {
      std::string acc = a[0];
      for (size_t i = 1; i < a.size(); ++i) acc = fmt::format(fmt::runtime(fn->format), acc, a[i]);
      return acc;
    }
    if (fn->arity < 0) return fmt::format(fmt::runtime(fn->format), fmt::join(a, ", "));
    fmt::dynamic_format_arg_store<fmt::format_context> args;
    for (const std::string& x : a) args.push_back(x);
    return fmt::vformat(fn->format, args);
  }

  const std::string& s_;
  const std::function<std::string(const std::string&)>& name_;
  const ExprDialect& d_;
  size_t pos_ = 0;
};

}  // namespace

std::string translate_expr(const std::string& expr, const std::function<std::string(const std::string&)>& name,
                           const ExprDialect& dialect) {
  return Translator(expr, name, dialect).run();
}

}  // namespace tessera::exporter
