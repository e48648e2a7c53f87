// search/kt_cache.cpp — Kernel Tuner cache files: gzip, repair of unclosed files, parsing.
#include "search/kt_cache.h"

#include <zlib.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tessera::search {
namespace {

using nlohmann::json;

// zlib reads plain files transparently, so one path serves both forms.
std::string read_maybe_gzipped(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open Kernel Tuner cache '" + path + "'");
  std::string text;
  char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      throw std::runtime_error("cannot read Kernel Tuner cache '" + path + "': " + msg);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return text;
}

// A tune_params value written the way Python's str() writes it, which is how
// Kernel Tuner builds its cache keys ("16,1,True,0.5").
std::string python_str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) {
      std::string s = json(static_cast<long long>(d)).dump();
      return s + ".0";
    }
  }
  return v.dump();
}

double number_or_zero(const json& e, const char* field) {
  auto it = e.find(field);
  return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

std::string close_truncated_json(const std::string& text, size_t max_depth) {
  std::string stack;  // open brackets, innermost last
  bool in_string = false, escaped = false;
  size_t safe_end = 0;
  std::string safe_stack;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    switch (ch) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        stack.push_back(ch);
        if (stack.size() <= max_depth) {  // an empty container is complete
          safe_end = i + 1;
          safe_stack = stack;
        }
        break;
      case '}':
      case ']':
        if (!stack.empty()) stack.pop_back();
        if (!stack.empty() && stack.size() <= max_depth) {
          safe_end = i + 1;
          safe_stack = stack;
        }
        break;
      case ',':
        if (stack.size() <= max_depth) {  // everything before a separator is complete
          safe_end = i;
          safe_stack = stack;
        }
        break;
      default:
        break;
    }
  }
  if (stack.empty() && !in_string) return text;
  std::string out = text.substr(0, safe_end);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n' || out.back() == '\r' || out.back() == '\t'))
    out.pop_back();
  if (!out.empty() && out.back() == ',') out.pop_back();
  for (auto it = safe_stack.rbegin(); it != safe_stack.rend(); ++it) out += (*it == '{') ? "\n}" : "]";
  return out;
}

KtCache parse_kt_cache(const std::string& text, const std::string& origin) {
  KtCache cache;
  cache.path = origin;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    doc = json::parse(close_truncated_json(text, /*max_depth=*/2), nullptr, false);
    if (doc.is_discarded())
      throw std::runtime_error("Kernel Tuner cache '" + origin + "' is not JSON, even after closing it");
    cache.repaired = true;
  }
  if (!doc.is_object() || !doc.contains("tune_params") || !doc["tune_params"].is_object())
    throw std::runtime_error("Kernel Tuner cache '" + origin + "' has no \"tune_params\" object");
  cache.device_name = doc.value("device_name", "");
  cache.kernel_name = doc.value("kernel_name", "");
  if (doc.contains("objective") && doc["objective"].is_string()) cache.objective = doc["objective"];

  const json& tp = doc["tune_params"];
  std::vector<std::string> names;
  if (doc.contains("tune_params_keys") && doc["tune_params_keys"].is_array()) {
    for (auto& k : doc["tune_params_keys"]) names.push_back(k.get<std::string>());
  } else {
    for (auto it = tp.begin(); it != tp.end(); ++it) names.push_back(it.key());
  }
  std::vector<std::map<std::string, int>> position(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (!tp.contains(names[i]) || !tp[names[i]].is_array())
      throw std::runtime_error("Kernel Tuner cache '" + origin + "': tune_params has no list for '" + names[i] + "'");
    Param p;
    p.name = names[i];
    for (auto& v : tp[names[i]]) {
      position[i][python_str(v)] = static_cast<int>(p.values.size());
      p.values.push_back(python_str(v));
    }
    cache.params.push_back(std::move(p));
  }

  if (!doc.contains("cache") || !doc["cache"].is_object()) return cache;
  for (auto it = doc["cache"].begin(); it != doc["cache"].end(); ++it) {
    const json& e = it.value();
    if (!e.is_object()) {
      ++cache.dropped;
      continue;
    }
    KtCacheEntry entry;
    bool known = true;
    for (size_t i = 0; i < names.size() && known; ++i) {
      auto f = e.find(names[i]);
      std::string v = f != e.end() ? python_str(*f) : std::string();
      known = position[i].count(v) > 0;
      entry.values.push_back(std::move(v));
    }
    if (!known) {
      ++cache.dropped;
      continue;
    }
    auto t = e.find(cache.objective);
    if (t != e.end() && t->is_number()) {
      entry.ok = true;
      entry.time_ms = t->get<double>();
    } else {
      entry.failure = (t != e.end() && t->is_string()) ? t->get<std::string>() : "missing objective";
    }
    entry.compile_ms = number_or_zero(e, "compile_time");
    entry.verification_ms = number_or_zero(e, "verification_time");
    entry.benchmark_ms = number_or_zero(e, "benchmark_time");
    cache.entries.push_back(std::move(entry));
  }
  return cache;
}

KtCache read_kt_cache(const std::string& path) {
  return parse_kt_cache(read_maybe_gzipped(path), path);
}

}  // namespace tessera::search
