// A small blocking HTTP client for the aio provider (tools/providers/aio_sandbox.h), on
// libcurl. libcurl is loaded with dlopen the first time a client is made, not linked: it
// drags a dozen shared libraries (TLS, HTTP/2, IDN, LDAP, ...) that the dynamic loader
// would otherwise map and relocate at the start of every `corral run` and `corral exec`,
// which never use it. A host without libcurl gets a clear error from the aio provider only.
//
// Thread-safe: each request uses its own easy handle. Parent side.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

struct HttpReply {
  long status = 0;
  std::string body;
  std::string content_type;
};

struct HttpCall {
  std::string method = "GET";  // GET, POST, DELETE
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                     // sent when non-empty or method is POST
  double timeout_seconds = 30;          // whole request
  size_t max_reply_bytes = 256u << 20;  // a longer reply is an error, not a truncation
};

// kUnsupported when libcurl cannot be loaded; kIo for connection failures and timeouts
// (the message says which, with curl's words); any HTTP status is a reply, not an error.
Result<HttpReply> Perform(const HttpCall& call);

// "%2F"-style escaping of one query value or path segment.
std::string UrlEscape(const std::string& text);

}  // namespace corral::runtime
