// Text of a request that corral's own code reads before any handler: the percent-decoded
// path and query, and the route template that logs and metrics use. Pure functions, in a
// library of their own (corral::server_request) with the other parsers of outside input
// the fuzz targets exercise (tests/fuzz), so those build without the HTTP server.
#pragma once

#include <string>
#include <string_view>

namespace corral::server {

// Percent-decodes `text` ('+' too when `plus_is_space`). Invalid escapes stay as they are.
std::string PercentDecode(std::string_view text, bool plus_is_space);

// "v1/shell/sessions/1f2e..." -> "v1/shell/sessions/{x}": segments other than [a-z_]+
// words become {x} ("v1" is kept first), so labels and logs never carry ids or user data.
std::string RouteTemplate(std::string_view rest);

}  // namespace corral::server
