#include "runtime/spec/utf8_text.h"

#include <nlohmann/json.hpp>

namespace corral::runtime {

namespace {

// nlohmann's serializer validates UTF-8 as it escapes a string and throws at a bad byte.
bool IsUtf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace

Status CheckUtf8Text(const std::string& text, const std::string& origin) {
  if (IsUtf8(text)) return Ok();
  // '\n' never occurs inside a multi-byte sequence, so lines can be checked one by one.
  size_t line = 1;
  for (size_t start = 0; start <= text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (!IsUtf8(text.substr(start, end - start))) break;
    start = end + 1;
  }
  return Error(ErrorCode::kInvalidArgument,
               origin + ":" + std::to_string(line) +
                   ": not valid UTF-8 (config files are UTF-8 text; every value ends up in JSON)");
}

}  // namespace corral::runtime
