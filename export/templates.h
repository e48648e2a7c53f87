// export/templates.h — the fixed text of the generated packages' files (the torch
// package's Python and build files, the FlashInfer Solution's binding), kept as files
// under export/templates/ and embedded into the binary when it is built
// (export/embed_templates.cmake), so that `tessera export` needs no source tree.
#pragma once

#include <map>
#include <string>

namespace tessera::exporter {

// The file export/templates/<path> as it was at build time; throws std::runtime_error
// naming the path when there is none.
const std::string& template_text(const std::string& path);

// The template with every @@KEY@@ replaced by values[KEY]; throws naming the template
// and the key when a placeholder has no value.
std::string fill_template(const std::string& path, const std::map<std::string, std::string>& values);

}  // namespace tessera::exporter
