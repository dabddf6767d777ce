// Words for a POSIX shell: what corral prints for a user to paste (a fix it suggests) and
// what it hands to a shell it runs (a session's eval).
#pragma once

#include <string>
#include <string_view>

namespace corral {

// `s` in single quotes, a single quote inside written as '\''. Always quoted.
inline std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

// `s` as it is when the shell would read it as one word unchanged (letters, digits and
// / . _ - + : @ % , =), else ShellQuote(s): readable paths in a suggested command.
inline std::string ShellWord(std::string_view s) {
  if (s.empty()) return "''";
  for (char c : s) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       std::string_view("/._-+:@%,=").find(c) != std::string_view::npos;
    if (!plain) return ShellQuote(s);
  }
  return std::string(s);
}

}  // namespace corral
