// Pure matching helpers shared by the providers' list/glob/grep (no I/O): DeerFlow's
// ignore patterns, glob matching of relative paths, and the grep line matcher.
#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <string>

#include "tools/providers/sandbox.h"

namespace corral::runtime {

// True when one path segment (a file or directory name) matches DeerFlow's
// IGNORE_PATTERNS (.git, node_modules, *.log, ...).
bool IsIgnoredName(const std::string& name);

// True when the relative path `rel` ("src/a/b.py") matches `pattern`. Segments match with
// fnmatch; "**" matches zero or more segments. Like Python's PurePosixPath.match, a
// pattern is anchored at the right end only ("*.py" matches "a/b.py").
bool GlobMatches(const std::string& pattern, const std::string& rel);

// Grep limits (DeerFlow sandbox/search.py).
inline constexpr int64_t kGrepMaxFileBytes = 1000000;
inline constexpr size_t kGrepBinaryProbeBytes = 8192;
inline constexpr size_t kGrepMaxLineChars = 2000;
inline constexpr size_t kGrepSummaryChars = 200;
inline constexpr int kGrepMaxResults = 500;
inline constexpr int kGlobMaxResults = 1000;

// One compiled grep pattern.
class LineMatcher {
 public:
  // kInvalidRegex with the regex library's explanation when `pattern` does not compile.
  static SbResult<LineMatcher> Create(const std::string& pattern, bool literal,
                                      bool case_sensitive);
  bool Matches(const std::string& line) const;

 private:
  std::string literal_;  // lowercased when !case_sensitive_
  bool is_literal_ = false;
  bool case_sensitive_ = false;
  std::shared_ptr<std::regex> regex_;
};

// The line as grep reports it: cut to 200 chars with "..." appended.
std::string GrepSummary(const std::string& line);

}  // namespace corral::runtime
