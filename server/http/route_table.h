// One table of routes per API face: method + path pattern -> handler. The face declares its
// routes once, in order; Find then decides between a handler, 404 (no pattern matches the
// path) and 405 (some pattern matches it, but under other methods), so no face writes its
// own chain of string comparisons and every face answers unknown paths the same way.
//
// Patterns are '/'-separated segments (a leading '/' on pattern or path is ignored):
//   literal     matches that exact segment
//   {name}      matches one non-empty segment and binds it to `name`
//   {name...}   last segment only: the rest of the path, slashes included, not empty
// Routes are tried in the order added; the first whose pattern and method both match wins,
// so a literal route ("sessions/create") goes before a parameter route ("sessions/{id}").
// Method "*" matches any method (a route that hands the request to another face's table).
//
// Pure and allocation-light; no I/O. A table is built once, then only read: Find is safe to
// call from many threads.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::server {

// What a pattern's {name} and {name...} segments bound in one path.
class PathParams {
 public:
  // The value bound to `name`; "" when the pattern has no such segment.
  const std::string& Get(std::string_view name) const;
  void Bind(std::string_view name, std::string_view value);
  void Clear() { values_.clear(); }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// Whether `path` matches `pattern` (syntax above); binds the parameters into `params`
// (left in an unspecified state when it does not match).
bool MatchRoutePattern(std::string_view pattern, std::string_view path, PathParams* params);

// "" when `pattern` is well formed, else why not. RouteTable::Add throws std::logic_error on
// a bad pattern: a table is code, so a bad one is a bug found by the first test that builds it.
std::string RoutePatternProblem(std::string_view pattern);

// A pattern as a metric label or log field: "{name...}" written "{name}".
std::string RouteLabel(std::string_view pattern);

enum class RouteOutcome { kFound, kNotFound, kMethodNotAllowed };

template <typename Handler>
class RouteTable {
 public:
  struct Route {
    std::string method;  // "GET", "POST", ... or "*"
    std::string pattern;
    Handler handler;
  };

  struct Match {
    RouteOutcome outcome = RouteOutcome::kNotFound;
    const Handler* handler = nullptr;  // kFound only
    // kFound: the route's pattern; kMethodNotAllowed: the first pattern that matched the
    // path. For logs and metric labels: it carries no request text.
    std::string_view pattern;
    PathParams params;  // kFound only
    std::string allow;  // kMethodNotAllowed: the methods that would match, "GET, DELETE"
  };

  RouteTable& Add(std::string method, std::string pattern, Handler handler) {
    if (std::string why = RoutePatternProblem(pattern); !why.empty()) {
      throw std::logic_error("route pattern '" + pattern + "': " + why);
    }
    routes_.push_back({std::move(method), std::move(pattern), std::move(handler)});
    return *this;
  }

  Match Find(std::string_view method, std::string_view path) const {
    Match m;
    for (const Route& route : routes_) {
      if (!MatchRoutePattern(route.pattern, path, &m.params)) continue;
      if (route.method == "*" || route.method == method) {
        m.outcome = RouteOutcome::kFound;
        m.handler = &route.handler;
        m.pattern = route.pattern;
        return m;
      }
      if (m.pattern.empty()) m.pattern = route.pattern;
      if (m.allow.find(route.method) == std::string::npos) {
        m.allow += (m.allow.empty() ? "" : ", ") + route.method;
      }
    }
    m.params.Clear();
    m.outcome = m.allow.empty() ? RouteOutcome::kNotFound : RouteOutcome::kMethodNotAllowed;
    return m;
  }

  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

}  // namespace corral::server
