// Text shaping of tool output, as DeerFlow does it (docs/deerflow-contract.md).
// Lengths count Unicode code points (Python's len()), and cuts never split a UTF-8
// sequence.
#pragma once

#include <string>
#include <vector>

namespace corral::tools {

// Code points in `s` (invalid bytes count one each).
size_t CharCount(const std::string& s);

// bash: keeps head and tail (50/50) with "\n... [middle truncated: N chars skipped] ...\n"
// between; the result is at most max_chars. max_chars 0 disables.
std::string MiddleTruncate(const std::string& s, int max_chars);

// read_file / ls: keeps the head and appends
// "\n\n... [truncated: showing first K of T chars. <hint>] ...". max_chars 0 disables.
std::string HeadTruncate(const std::string& s, int max_chars, const std::string& hint);

inline constexpr const char* kReadFileHint = "Use start_line/end_line to read a specific range";
inline constexpr const char* kLsHint = "Use a more specific path to see fewer results";

}  // namespace corral::tools
