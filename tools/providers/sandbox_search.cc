#include "tools/providers/sandbox_search.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
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

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
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
  LineMatcher m;
  m.is_literal_ = literal;
  m.case_sensitive_ = case_sensitive;
  if (literal) {
    m.literal_ = case_sensitive ? pattern : Lower(pattern);
    return m;
  }
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (!case_sensitive) flags |= std::regex::icase;
  try {
    m.regex_ = std::make_shared<std::regex>(pattern, flags);
  } catch (const std::regex_error& e) {
    return SandboxError{SandboxErrc::kInvalidRegex, e.what()};
  }
  return m;
}

bool LineMatcher::Matches(const std::string& line) const {
  if (is_literal_) {
    return (case_sensitive_ ? line : Lower(line)).find(literal_) != std::string::npos;
  }
  try {
    return std::regex_search(line, *regex_);
  } catch (const std::regex_error&) {
    return false;  // complexity or stack limits on a pathological line: treat as no match
  }
}

std::string GrepSummary(const std::string& line) {
  if (line.size() <= kGrepSummaryChars) return line;
  return line.substr(0, kGrepSummaryChars) + "...";
}

}  // namespace corral::runtime
