// Kernels named by what they compute: a layer's kernels, repeated in every layer of a model
// under other names, compile once (one NVRTC program, one C++ function) and share the caches.
#include <cctype>
#include <cstdio>
#include <string_view>

#include "toroid/codegen/kernel.h"
#include "toroid/support/hash.h"

namespace toroid::codegen {

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where the line's `//` comment starts (outside string and character literals), or npos.
size_t comment_start(std::string_view line) {
  char quote = 0;  // the literal being read: '"', '\'' or none
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string renamed_code(const std::string& code, const std::string& name, const std::string& symbol) {
  std::string out;
  out.reserve(code.size());
  size_t pos = 0;
  while (pos < code.size()) {
    size_t end = code.find('\n', pos);
    end = end == std::string::npos ? code.size() : end + 1;
    std::string_view line(code.data() + pos, end - pos);
    size_t slashes = comment_start(line);
    bool newline = line.back() == '\n';
    if (slashes != std::string_view::npos) {
      line = line.substr(0, slashes);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    }
    bool empty = line.find_first_not_of(" \t\n") == std::string_view::npos;
    for (size_t i = 0; !empty && i < line.size();) {
      bool at_name = line.compare(i, name.size(), name) == 0 && (i == 0 || !identifier_char(line[i - 1])) &&
                     (i + name.size() == line.size() || !std::isalnum(static_cast<unsigned char>(line[i + name.size()])));
      if (at_name) {
        out += symbol;
        i += name.size();
      } else {
        out += line[i++];
      }
    }
    if (!empty && newline && out.back() != '\n') out += '\n';
    pos = end;
  }
  return out;
}

std::string content_symbol(const std::string& kind, const std::string& code, const std::string& name) {
  char hex[17];  // all 64 bits: the CPU's kernels share one shared object, where names must differ
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(renamed_code(code, name, "@"))));
  return "tk_" + kind + "_" + hex;
}

}  // namespace toroid::codegen
