#include "server/http/content_disposition.h"

#include <cctype>

namespace corral::server {
namespace {

// RFC 5987 attr-char: sent as it is in the extended form; every other byte is %XX.
bool IsAttrChar(unsigned char c) {
  if (std::isalnum(c) != 0 && c < 0x80) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '&':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string AttachmentDisposition(std::string_view filename) {
  std::string fallback;
  for (unsigned char c : filename) {
    bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '%';
    fallback += plain ? static_cast<char>(c) : '_';
  }
  std::string header = "attachment; filename=\"" + fallback + "\"";
  if (fallback == filename) return header;
  static constexpr char kHex[] = "0123456789ABCDEF";
  header += "; filename*=UTF-8''";
  for (unsigned char c : filename) {
    if (IsAttrChar(c)) {
      header += static_cast<char>(c);
    } else {
      header += '%';
      header += kHex[c >> 4];
      header += kHex[c & 0xf];
    }
  }
  return header;
}

}  // namespace corral::server
