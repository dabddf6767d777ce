// Pure matching helpers shared by the providers' list/glob/grep (no I/O): DeerFlow's
// ignore patterns, glob matching of relative paths, and the grep line matcher.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tools/providers/sandbox.h"

namespace re2 {
class RE2;
}

namespace corral::runtime {

// True when one path segment (a file or directory name) matches DeerFlow's
// IGNORE_PATTERNS (.git, node_modules, *.log, ...).
bool IsIgnoredName(const std::string& name);

// True when the relative path `rel` ("src/a/b.py") matches `pattern`. Segments match with
// fnmatch; "**" matches zero or more segments. Like Python's PurePosixPath.match, a
// pattern is anchored at the right end only ("*.py" matches "a/b.py").
bool GlobMatches(const std::string& pattern, const std::string& rel);

// Grep limits (DeerFlow sandbox/search.py), and corral's per-call work bounds
// (GrepOptions::max_bytes_scanned, max_seconds; named in the tool's notice).
inline constexpr size_t kGrepBinaryProbeBytes = 8192;
inline constexpr size_t kGrepMaxLineChars = 2000;
inline constexpr size_t kGrepSummaryChars = 200;
inline constexpr int kGrepMaxResults = 500;
inline constexpr int kGlobMaxResults = 1000;

// One compiled grep pattern, matched with RE2: linear time in the line's length whatever
// the pattern (no backtracking, so `(a+)+$` cannot pin a core or overflow the stack).
// Accepted syntax: RE2's, which is Python `re` without backreferences (\1, (?P=name)),
// lookahead/lookbehind ((?=, (?!, (?<=, (?<!), atomic groups or possessive quantifiers,
// and \Z (use \z or $); \d \w \s \b are ASCII-only. Patterns are UTF-8; case-insensitive
// matching folds Unicode case. Literal mode matches the pattern as a plain substring.
// Used in the tool process (to validate) and in the file-access child (to match).
class LineMatcher {
 public:
  // kInvalidRegex with RE2's explanation (and the syntax hint for constructs RE2 refuses)
  // when `pattern` does not compile.
  static SbResult<LineMatcher> Create(const std::string& pattern, bool literal,
                                      bool case_sensitive);
  bool Matches(const std::string& line) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

// The line as grep reports it: cut to 200 chars with "..." appended.
std::string GrepSummary(const std::string& line);

}  // namespace corral::runtime
