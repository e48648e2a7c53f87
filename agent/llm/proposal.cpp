// agent/llm/proposal.cpp — fenced-block extraction, pairing of source and plan
// blocks, and validation of launch plans and parameter spaces.
#include "agent/llm/proposal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>

#include "agent/llm/redact.h"

namespace tessera::llm {

using nlohmann::json;

namespace {

enum class BlockKind { Source, Json, Other };

struct Block {
  BlockKind kind;
  std::string text;
  int line;            // the opening fence, 1-based
  std::string before;  // prose between the previous block and this one
};

struct Invalid {
  std::string message;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

BlockKind classify(const std::string& info, const std::string& text) {
  static const std::set<std::string> source = {"cuda", "cu", "cuh", "c++", "cpp", "cxx", "c", "cc"};
  static const std::set<std::string> json_tags = {"json", "jsonc", "json5"};
  std::string tag = lower(info.substr(0, info.find_first_of(" \t{")));
  if (source.count(tag)) return BlockKind::Source;
  if (json_tags.count(tag)) return BlockKind::Json;
  if (!tag.empty()) return BlockKind::Other;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) return BlockKind::Json;
  return text.find("__global__") != std::string::npos ? BlockKind::Source : BlockKind::Other;
}

// Fenced blocks (``` or longer, up to 3 spaces of indent). An unclosed block is
// reported, not returned.
std::vector<Block> extract_blocks(std::string_view text, std::vector<std::string>& errors,
                                  const std::string& finish_reason) {
  std::vector<Block> blocks;
  std::string prose;
  size_t pos = 0;
  int line_no = 0;
  std::optional<Block> open;
  std::string info;
  size_t fence_len = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++line_no;
    size_t indent = line.find_first_not_of(' ');
    bool fence = indent != std::string::npos && indent <= 3 && line.compare(indent, 3, "```") == 0;
    size_t ticks = 0;
    if (fence)
      while (indent + ticks < line.size() && line[indent + ticks] == '`') ++ticks;
    if (!open && fence) {
      info = line.substr(indent + ticks);
      info.erase(0, info.find_first_not_of(" \t"));
      open = Block{BlockKind::Other, "", line_no, prose};
      fence_len = ticks;
      prose.clear();
    } else if (open && fence && ticks >= fence_len && line.find_first_not_of(" `\t") == std::string::npos) {
      open->kind = classify(info, open->text);
      blocks.push_back(std::move(*open));
      open.reset();
    } else if (open) {
      open->text += line + "\n";
    } else {
      prose += line + "\n";
    }
    if (end == text.size()) break;
    pos = end + 1;
  }
  if (open) {
    bool truncated = finish_reason == "length" || finish_reason == "max_tokens";
    errors.push_back(
        fmt::format("the answer ended inside the ```{} block opened at line {}{}; close every block "
                    "with ```",
                    info, open->line,
                    truncated ? " (the reply hit the output token limit: write shorter "
                                "proposals or fewer of them)"
                              : ""));
  }
  return blocks;
}

std::string as_expr(const json& v, const std::string& where) {
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  throw Invalid{
      fmt::format("{} must be an expression string or an integer, got {}", where, truncate_text(v.dump(), 80))};
}

bool identifier(const std::string& s) {
  static const std::regex id(R"([A-Za-z_][A-Za-z0-9_]*)");
  return std::regex_match(s, id);
}

// The form of a tensor-map argument, tmap:NAME:B0xB1x..:SWIZZLE (docs/spec-format.md); what
// it names is checked against the operator later, with the rest of the plan.
bool tensor_map_form(const std::string& s) {
  static const std::regex tm(R"(tmap:[A-Za-z_][A-Za-z0-9_]*:[0-9]{1,3}(x[0-9]{1,3}){0,4}:(0|32|64|128))");
  return std::regex_match(s, tm);
}

json normalize_dims(const json& v, const std::string& where) {
  json dims = v.is_array() ? v : json::array({v});
  if (dims.empty() || dims.size() > 3) throw Invalid{fmt::format("{} must list 1 to 3 dimensions", where)};
  json out = json::array();
  for (size_t i = 0; i < 3; ++i)
    out.push_back(i < dims.size() ? as_expr(dims[i], fmt::format("{}[{}]", where, i)) : "1");
  return out;
}

json normalize_launch(const json& launch, const std::string& source) {
  if (!launch.is_array() || launch.empty()) throw Invalid{"\"launch\" must be a non-empty array of kernel launches"};
  json out = json::array();
  for (size_t i = 0; i < launch.size(); ++i) {
    const json& step = launch[i];
    std::string where = fmt::format("launch[{}]", i);
    if (!step.is_object()) throw Invalid{where + " must be an object"};
    for (const char* field : {"kernel", "grid", "block", "args"})
      if (!step.contains(field)) throw Invalid{fmt::format("{} has no \"{}\"", where, field)};
    if (!step["kernel"].is_string() || !identifier(step["kernel"].get<std::string>()))
      throw Invalid{where + ".kernel must be the kernel's name"};
    std::string kernel = step["kernel"].get<std::string>();
    std::regex defined("__global__[^;{}]*\\b" + kernel + "\\s*\\(");
    if (!std::regex_search(source, defined))
      throw Invalid{
          fmt::format("{} names kernel '{}', but the source defines no __global__ "
                      "function of that name",
                      where, kernel)};
    json args = json::array();
    if (!step["args"].is_array()) throw Invalid{where + ".args must be an array of names"};
    for (const auto& a : step["args"]) {
      if (!a.is_string() || !(identifier(a.get<std::string>()) || tensor_map_form(a.get<std::string>())))
        throw Invalid{
            fmt::format("{}.args holds {}, which is not a tensor, scratch, symbol, "
                        "scalar or parameter name, nor a tensor map (tmap:NAME:BOX:SWIZZLE)",
                        where, truncate_text(a.dump(), 60))};
      args.push_back(a);
    }
    out.push_back({{"kernel", kernel},
                   {"grid", normalize_dims(step["grid"], where + ".grid")},
                   {"block", normalize_dims(step["block"], where + ".block")},
                   {"smem", step.contains("smem") ? as_expr(step["smem"], where + ".smem") : "0"},
                   {"args", args}});
    if (step.contains("when")) out.back()["when"] = as_expr(step["when"], where + ".when");
  }
  return out;
}

json normalize_scratch(const json& scratch) {
  static const std::set<std::string> dtypes = {"bf16", "f16", "f32", "f64", "i32", "i64"};
  if (!scratch.is_array()) throw Invalid{"\"scratch\" must be an array"};
  json out = json::array();
  for (size_t i = 0; i < scratch.size(); ++i) {
    const json& s = scratch[i];
    std::string where = fmt::format("scratch[{}]", i);
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !identifier(s["name"].get<std::string>()))
      throw Invalid{where + " needs a \"name\""};
    if (!s.contains("dtype") || !s["dtype"].is_string() || !dtypes.count(s["dtype"].get<std::string>()))
      throw Invalid{where + ".dtype must be one of bf16, f16, f32, f64, i32, i64"};
    if (!s.contains("size")) throw Invalid{where + " needs a \"size\" expression"};
    out.push_back({{"name", s["name"]}, {"dtype", s["dtype"]}, {"size", as_expr(s["size"], where + ".size")}});
  }
  return out;
}

std::vector<std::string> string_list(const json& j, const char* what) {
  std::vector<std::string> out;
  if (!j.is_array()) throw Invalid{fmt::format("\"{}\" must be an array of strings", what)};
  for (const auto& v : j) {
    if (!v.is_string()) throw Invalid{fmt::format("\"{}\" must be an array of strings", what)};
    out.push_back(v.get<std::string>());
  }
  return out;
}

Proposal make_proposal(const Block& src, const Block& plan, size_t index) {
  json j;
  try {
    j = json::parse(plan.text);
  } catch (const json::exception& e) {
    throw Invalid{fmt::format("the ```json block at line {} is not valid JSON: {}", plan.line, e.what())};
  }
  if (j.is_array()) j = json{{"launch", j}};
  if (!j.is_object())
    throw Invalid{fmt::format("the ```json block at line {} must be an object with \"launch\"", plan.line)};
  Proposal p;
  p.source = src.text;
  p.source_line = src.line;
  p.rationale = truncate_text(src.before, 2000);
  p.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>()
                                                       : fmt::format("proposal-{}", index + 1);
  if (!std::regex_search(p.source, std::regex(R"(extern\s*"C")")))
    throw Invalid{"kernels must be declared extern \"C\" __global__ so that tessera finds them by name"};
  if (!j.contains("launch")) throw Invalid{"the plan has no \"launch\" array"};
  p.launch = normalize_launch(j["launch"], p.source);
  if (j.contains("scratch")) p.scratch = normalize_scratch(j["scratch"]);
  if (j.contains("arch")) p.arch = string_list(j["arch"], "arch");
  if (j.contains("params")) {
    p.kind = ProposalKind::Template;
    const json& params = j["params"];
    if (!params.is_object() || params.empty())
      throw Invalid{"\"params\" must be an object {\"NAME\": [values, ...]} with at least one parameter"};
    for (const auto& [name, values] : params.items()) {
      if (!identifier(name)) throw Invalid{fmt::format("parameter name '{}' is not an identifier", name)};
      json list = values.is_array() ? values : json::array({values});
      if (list.empty()) throw Invalid{fmt::format("parameter {} has no values", name)};
      for (const auto& v : list) {
        if (!v.is_number_integer())
          throw Invalid{fmt::format("parameter {} must list integers, got {}", name, truncate_text(v.dump(), 40))};
        p.params[name].push_back(v.get<long long>());
      }
    }
    if (j.contains("constraints")) p.constraints = string_list(j["constraints"], "constraints");
  }
  return p;
}

}  // namespace

std::vector<std::string> Proposal::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& step : launch) names.push_back(step.value("kernel", ""));
  return names;
}

json Proposal::plan_json() const {
  json j = {{"launch", launch}, {"scratch", scratch}};
  if (!arch.empty()) j["arch"] = arch;
  if (kind == ProposalKind::Template) {
    j["params"] = params;
    j["constraints"] = constraints;
  }
  return j;
}

ParseResult parse_proposals(std::string_view answer, const ParseOptions& options) noexcept {
  ParseResult result;
  try {
    if (answer.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      result.errors.push_back(
          "the answer was empty; reply with a ```cuda block holding the "
          "kernel source followed by a ```json block holding its launch plan");
      return result;
    }
    std::vector<Block> blocks = extract_blocks(answer, result.errors, options.finish_reason);
    const Block* pending = nullptr;
    size_t index = 0;
    auto take = [&](const Block& src, const Block& plan) {
      if (result.proposals.size() >= options.max_proposals) {
        result.errors.push_back(fmt::format("only the first {} proposals were kept", options.max_proposals));
        return;
      }
      try {
        result.proposals.push_back(make_proposal(src, plan, index));
      } catch (const Invalid& e) {
        result.errors.push_back(
            fmt::format("proposal {} (```cuda block at line {}): {}", index + 1, src.line, e.message));
      }
      ++index;
    };
    auto orphan_source = [&](const Block& b) {
      result.errors.push_back(
          fmt::format("the ```cuda block at line {} has no ```json launch plan "
                      "after it",
                      b.line));
      ++index;
    };
    for (const auto& b : blocks) {
      if (b.kind == BlockKind::Source) {
        if (pending) orphan_source(*pending);
        pending = &b;
      } else if (b.kind == BlockKind::Json) {
        if (pending) {
          take(*pending, b);
          pending = nullptr;
        } else {
          result.errors.push_back(
              fmt::format("the ```json block at line {} has no ```cuda block "
                          "before it",
                          b.line));
        }
      }
    }
    if (pending) orphan_source(*pending);
    if (result.proposals.empty() && result.errors.empty())
      result.errors.push_back(
          "no ```cuda block found; reply with a ```cuda block holding the kernel "
          "source followed by a ```json block holding its launch plan");
    // Deduplicate the "only the first N" note.
    result.errors.erase(std::unique(result.errors.begin(), result.errors.end()), result.errors.end());
  } catch (const std::exception& e) {
    result.errors.push_back(fmt::format("the answer could not be read: {}", e.what()));
  } catch (...) {
    result.errors.push_back("the answer could not be read");
  }
  return result;
}

}  // namespace tessera::llm
