#include "server/http/route_table.h"

namespace corral::server {
namespace {

std::string_view WithoutLeadingSlash(std::string_view s) {
  if (!s.empty() && s.front() == '/') s.remove_prefix(1);
  return s;
}

// The next segment of `rest` (up to '/' or the end); consumes it and its '/'.
std::string_view NextSegment(std::string_view* rest, bool* had_slash) {
  const size_t slash = rest->find('/');
  std::string_view segment = rest->substr(0, slash);
  *had_slash = slash != std::string_view::npos;
  rest->remove_prefix(*had_slash ? slash + 1 : rest->size());
  return segment;
}

bool IsParameter(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

bool IsTailParameter(std::string_view segment) {
  return IsParameter(segment) && segment.size() > 5 && segment.substr(segment.size() - 4) == "...}";
}

}  // namespace

const std::string& PathParams::Get(std::string_view name) const {
  static const std::string kNone;
  for (const auto& [key, value] : values_) {
    if (key == name) return value;
  }
  return kNone;
}

void PathParams::Bind(std::string_view name, std::string_view value) {
  values_.emplace_back(std::string(name), std::string(value));
}

bool MatchRoutePattern(std::string_view pattern, std::string_view path, PathParams* params) {
  params->Clear();
  pattern = WithoutLeadingSlash(pattern);
  path = WithoutLeadingSlash(path);
  bool pattern_more = true, path_more = true;
  while (pattern_more) {
    std::string_view want = NextSegment(&pattern, &pattern_more);
    if (IsTailParameter(want)) {
      // "a/{rest...}" matches "a/x" and "a/x/y", not "a" or "a/": the rest is never empty,
      // so "sandboxes" and "sandboxes/{id...}" stay two routes.
      if (!path_more || path.empty()) return false;
      params->Bind(want.substr(1, want.size() - 5), path);
      return true;
    }
    if (!path_more) return false;  // the path ended before the pattern
    std::string_view got = NextSegment(&path, &path_more);
    if (IsParameter(want)) {
      if (got.empty()) return false;
      params->Bind(want.substr(1, want.size() - 2), got);
    } else if (want != got) {
      return false;
    }
  }
  return !path_more;
}

std::string RouteLabel(std::string_view pattern) {
  std::string label(pattern);
  for (size_t at; (at = label.find("...}")) != std::string::npos;) label.erase(at, 3);
  return label;
}

std::string RoutePatternProblem(std::string_view pattern) {
  pattern = WithoutLeadingSlash(pattern);
  bool more = true;
  while (more) {
    std::string_view segment = NextSegment(&pattern, &more);
    if (segment.empty()) return "an empty segment";
    if (IsTailParameter(segment) && more) return "{name...} must be the last segment";
    if (IsParameter(segment) && segment.size() == 2) return "a parameter without a name";
    if (!IsParameter(segment) && segment.find_first_of("{}") != std::string_view::npos) {
      return "braces only around a whole segment";
    }
  }
  return "";
}

}  // namespace corral::server
