#include "server/http/request_text.h"

namespace corral::server {
namespace {

bool IsWord(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() + 0 && hex(text[i + 1]) >= 0 &&
        hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else if (plus_is_space && text[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string RouteTemplate(std::string_view rest) {
  std::string out;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t slash = rest.find('/', start);
    if (slash == std::string_view::npos) slash = rest.size();
    std::string_view seg = rest.substr(start, slash - start);
    if (!out.empty()) out += "/";
    out += (IsWord(seg) || (seg == "v1" && start == 0)) ? std::string(seg) : "{x}";
    start = slash + 1;
  }
  return out;
}

}  // namespace corral::server
