// The daemon's request handling before a sandbox is touched (server/): raw HTTP/1.1 bytes
// through Boost.Beast's parser with the daemon's limits, then what corral's own code does
// with the parts — percent-decoding the target, the route template that logs and metrics
// use (it must never carry an id or any text of the request), the route table's matching
// (what a {name} binds is one non-empty segment of the path, a {name...} its non-empty
// rest, and the 404/405 decision agrees with the patterns), the Host check, and the
// provisioner's create-body validation (a body it accepts must hold valid ids).
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>
#include <variant>

#include "server/http/listen_address.h"
#include "server/http/request_text.h"
#include "server/http/route_table.h"
#include "server/provisioner/provision_request.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace http = boost::beast::http;
using namespace corral::server;

bool IsWord(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

// A template keeps only lower-case words, "{x}" for anything else, and the literal "v1"
// as its first segment (the AIO API's version, server/http/request_text.h): never an id,
// a token or other text of the request.
void CheckTemplate(const std::string& rest) {
  std::string tmpl = RouteTemplate(rest);
  size_t start = 0;
  while (start <= tmpl.size()) {
    size_t end = tmpl.find('/', start);
    if (end == std::string::npos) end = tmpl.size();
    std::string seg = tmpl.substr(start, end - start);
    const bool version = start == 0 && seg == "v1";
    if (!seg.empty() && seg != "{x}" && !IsWord(seg) && !version) {
      corral::fuzz::Fail("route template carries request text", rest + " -> " + tmpl);
    }
    start = end + 1;
  }
}

// The router's own patterns (server/router.cc) and the AIO face's shapes, matched against
// the decoded path: a bound value is a piece of the path, a {name} holds no '/', and a
// match is found exactly when some pattern matches under the method.
void CheckRouteTable(const std::string& method, const std::string& path) {
  static const auto* table = [] {
    auto* t = new RouteTable<int>;
    t->Add("GET", "/health", 1)
        .Add("GET", "/api/sandboxes", 2)
        .Add("GET", "/api/sandboxes/{id...}", 3)
        .Add("DELETE", "/api/sandboxes/{id...}", 4)
        .Add("*", "/api/corral/v1/{rest...}", 5)
        .Add("POST", "/api/corral/v1/sandboxes/{name}/exec", 6)
        .Add("DELETE", "/sandboxes/{id}/v1/shell/sessions/{session}", 7)
        .Add("*", "/sandboxes/{id}/{token}/{rest...}", 8);
    return t;
  }();
  auto match = table->Find(method, path);
  bool any_pattern = false, any_method = false;
  for (const auto& route : table->routes()) {
    PathParams params;
    if (!MatchRoutePattern(route.pattern, path, &params)) continue;
    any_pattern = true;
    any_method = any_method || route.method == "*" || route.method == method;
  }
  const bool found = match.outcome == RouteOutcome::kFound;
  if (found != any_method || (match.outcome == RouteOutcome::kNotFound) == any_pattern) {
    corral::fuzz::Fail("route outcome disagrees with the patterns", method + " " + path);
  }
  if (!found) return;
  for (const char* name : {"id", "token", "name", "session", "rest"}) {
    const std::string& value = match.params.Get(name);
    if (value.empty()) continue;
    if (path.find(value) == std::string::npos) {
      corral::fuzz::Fail("a route parameter is not a piece of the path", path + " " + name);
    }
    const bool tail =
        std::string(name) == "rest" || match.pattern.find("{id...}") != std::string::npos;
    if (!tail && value.find('/') != std::string::npos) {
      corral::fuzz::Fail("a {name} parameter spans segments", path + " " + name);
    }
  }
}

void CheckCreateBody(const std::string& body) {
  auto parsed = ParseCreateRequest(body, "/nonexistent-corral-fuzz-base");
  if (const auto* p = std::get_if<CreateParams>(&parsed)) {
    if (!SandboxIdProblem(p->sandbox_id).empty()) {
      corral::fuzz::Fail("accepted a create body with a bad sandbox_id", body);
    }
    if (p->extra_mounts.size() > kMaxExtraMounts) {
      corral::fuzz::Fail("accepted more extra mounts than allowed", body);
    }
  } else if (std::get<RequestError>(parsed).status < 400) {
    corral::fuzz::Fail("a refusal without a 4xx status", body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* host_check = [] {
    auto address = ParseListenAddress("127.0.0.1:8002");
    return new HostCheck(*address, 8002, {});
  }();
  const std::string input = corral::fuzz::AsString(data, size);
  CheckCreateBody(input);  // the body alone, too: most inputs never parse as HTTP

  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t offset = 0;
  while (offset < input.size() && !parser.is_done()) {
    size_t used = parser.put(boost::asio::buffer(input.data() + offset, input.size() - offset), ec);
    if (ec || used == 0) break;
    offset += used;
  }
  // The end of the input is the client closing; like Beast's own read loop, only a parser
  // that got some bytes hears of it (put_eof's precondition, asserted now that the fuzz
  // build keeps assertions on).
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_header_done()) return 0;
  const auto& req = parser.get();
  std::string target(req.target());
  std::string path = PercentDecode(target.substr(0, target.find('?')), false);
  (void)host_check->Accepts(std::string(req[http::field::host]));
  CheckTemplate(path);
  CheckRouteTable(std::string(req.method_string()), path);
  const std::string prefix = "/sandboxes/";
  if (path.rfind(prefix, 0) == 0) CheckTemplate(path.substr(prefix.size()));
  if (parser.is_done()) CheckCreateBody(req.body());
  return 0;
}
