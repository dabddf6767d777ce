// ParseJsonInput(): JSON that came from outside the process — an HTTP body, a pool frame,
// a store record — parsed with bounds on its size and on how deeply it nests.
//
// Why a bound on depth: nlohmann's parser keeps its own stack and accepts any depth, but
// copying, comparing, dumping and destroying parts of a value recurse once per level, so a
// body of a few hundred kilobytes nesting 100,000 arrays overflows the thread's stack and
// ends the process for every other tenant. The check runs as a SAX pass over the text
// before the document is built; no document deeper than the bound ever exists.
// Header + .cc; any process, any thread.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "base/result.h"

namespace corral {

struct JsonInputLimits {
  // Deeper than any request corral takes (a sandbox spec nests about six levels).
  std::size_t max_depth = 64;
  // Callers with their own body limit (the HTTP server's) may lower it further.
  std::size_t max_bytes = std::size_t{64} << 20;
};

// For an HTTP body: its size is already bounded by the server (server.max_body_bytes,
// 140 MiB by default: a 100 MiB file as base64 inside JSON), so only the depth is.
inline constexpr JsonInputLimits kHttpBodyJsonLimits{64, static_cast<std::size_t>(-1)};

// Why a parse failed, for callers that answer each kind differently.
enum class JsonInputProblem { kTooLarge, kTooDeep, kSyntax };

struct JsonInputError {
  JsonInputProblem problem;
  std::size_t byte;     // where a syntax error was found (0 for the other problems)
  std::string message;  // one line, e.g. "JSON nests deeper than 64 levels (at byte 70)"
};

// The parsed document, or why it was refused. Never throws.
std::variant<nlohmann::json, JsonInputError> ParseJsonInput(std::string_view text,
                                                            const JsonInputLimits& limits = {});

// The same as a Result, for callers that only pass the message on (kInvalidArgument).
Result<nlohmann::json> ParseJsonInputOrError(std::string_view text,
                                             const JsonInputLimits& limits = {});

// The document, or a discarded value (is_discarded()) when it was refused: the drop-in for
// json::parse(text, nullptr, false) where the caller treats every failure alike.
nlohmann::json ParseJsonInputOrDiscarded(std::string_view text, const JsonInputLimits& limits = {});

}  // namespace corral
