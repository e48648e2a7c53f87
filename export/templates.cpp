// export/templates.cpp — lookup and filling of the embedded templates.
#include "export/templates.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::exporter {

const std::map<std::string, std::string>& embedded_templates();  // generated: export_templates.cpp

const std::string& template_text(const std::string& path) {
  auto& all = embedded_templates();
  auto it = all.find(path);
  if (it == all.end()) throw std::runtime_error("no template export/templates/" + path + " in this build");
  return it->second;
}

std::string fill_template(const std::string& path, const std::map<std::string, std::string>& values) {
  const std::string& t = template_text(path);
  std::string out;
  out.reserve(t.size() * 2);
  size_t pos = 0;
  for (;;) {
    size_t b = t.find("@@", pos);
    if (b == std::string::npos) break;
    size_t e = t.find("@@", b + 2);
    if (e == std::string::npos) break;
    std::string key = t.substr(b + 2, e - b - 2);
    auto it = values.find(key);
    if (it == values.end())
      throw std::runtime_error(fmt::format("template export/templates/{}: no value for @@{}@@", path, key));
    out.append(t, pos, b - pos);
    out += it->second;
    pos = e + 2;
  }
  out.append(t, pos, std::string::npos);
  return out;
}

}  // namespace tessera::exporter
