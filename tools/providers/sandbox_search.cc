#include "tools/providers/sandbox_search.h"

#include <fnmatch.h>
#include <re2/re2.h>

#include <vector>

namespace corral::runtime {
namespace {

constexpr const char* kIgnorePatterns[] = {
    ".git",        ".svn",         ".hg",
    ".bzr",        "node_modules", "__pycache__",
    ".venv",       "venv",         ".env",
    "env",         ".tox",         ".nox",
    ".eggs",       "*.egg-info",   "site-packages",
    "dist",        "build",        ".next",
    ".nuxt",       ".output",      ".turbo",
    "target",      "out",          ".idea",
    ".vscode",     "*.swp",        "*.swo",
    "*~",          ".project",     ".classpath",
    ".settings",   ".DS_Store",    "Thumbs.db",
    "desktop.ini", "*.lnk",        "*.log",
    "*.tmp",       "*.temp",       ".upload-*.part",
    "*.bak",       "*.cache",      ".cache",
    "logs",        ".coverage",    "coverage",
    ".nyc_output", "htmlcov",      ".pytest_cache",
    ".mypy_cache", ".ruff_cache",
};

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

bool MatchFrom(const std::vector<std::string>& pat, size_t pi, const std::vector<std::string>& seg,
               size_t si) {
  if (pi == pat.size()) return si == seg.size();
  if (pat[pi] == "**") {
    for (size_t k = si; k <= seg.size(); ++k) {
      if (MatchFrom(pat, pi + 1, seg, k)) return true;
    }
    return false;
  }
  if (si == seg.size()) return false;
  if (::fnmatch(pat[pi].c_str(), seg[si].c_str(), 0) != 0) return false;
  return MatchFrom(pat, pi + 1, seg, si + 1);
}

// Why RE2 refused a pattern, in the words agents know from Python's re where it helps.
std::string CompileProblem(const re2::RE2& re) {
  std::string why = re.error();
  switch (re.error_code()) {
    case re2::RE2::ErrorBadPerlOp:
    case re2::RE2::ErrorBadEscape:
    case re2::RE2::ErrorBadNamedCapture:
    case re2::RE2::ErrorRepeatOp:
      why +=
          " (grep uses RE2 syntax: Python re without backreferences, lookahead/lookbehind, "
          "atomic groups or possessive quantifiers; use literal=true for a plain string)";
      break;
    case re2::RE2::ErrorPatternTooLarge:
      why += " (the compiled pattern is over RE2's memory budget; simplify it)";
      break;
    default:
      break;
  }
  return why;
}

}  // namespace

bool IsIgnoredName(const std::string& name) {
  for (const char* p : kIgnorePatterns) {
    if (::fnmatch(p, name.c_str(), FNM_PERIOD) == 0) return true;
  }
  return false;
}

bool GlobMatches(const std::string& pattern, const std::string& rel) {
  std::vector<std::string> pat = Split(pattern);
  std::vector<std::string> seg = Split(rel);
  if (pat.empty()) return false;
  // Right-anchored like PurePosixPath.match: an absolute pattern must match the whole
  // path, a relative one any tail of it.
  if (pattern[0] != '/') pat.insert(pat.begin(), "**");
  return MatchFrom(pat, 0, seg, 0);
}

SbResult<LineMatcher> LineMatcher::Create(const std::string& pattern, bool literal,
                                          bool case_sensitive) {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingUTF8);
  options.set_literal(literal);
  options.set_case_sensitive(case_sensitive);
  options.set_log_errors(false);  // the error is the tool's answer, not a log line
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) return SandboxError{SandboxErrc::kInvalidRegex, CompileProblem(*re)};
  LineMatcher m;
  m.re_ = std::move(re);
  return m;
}

// RE2 runs a DFA (falling back to an NFA when its cache fills): linear in the line, no
// recursion, so any pattern over a line of at most kGrepMaxLineChars ends promptly.
bool LineMatcher::Matches(const std::string& line) const {
  return re2::RE2::PartialMatch(line, *re_);
}

std::string GrepSummary(const std::string& line) {
  if (line.size() <= kGrepSummaryChars) return line;
  return line.substr(0, kGrepSummaryChars) + "...";
}

}  // namespace corral::runtime
