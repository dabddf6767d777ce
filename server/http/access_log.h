// The access log: one JSON object per line per request answered,
//   {"time":"2026-12-02T01:02:03.456Z","client":"127.0.0.1","method":"POST",
//    "route":"/sandboxes/{id}/{token}/v1/shell/exec","sandbox_id":"abc","status":200,
//    "bytes":123,"ms":4.2}
// `route` is the route template, never the raw path: a sandbox's URL token must not reach
// a log. To stderr (journald under systemd), to a file (appended; reopened by nobody:
// rotate with copytruncate), or off. Thread-safe.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"

namespace corral::server {

struct AccessRecord {
  std::string client, method, route, sandbox_id;
  int status = 0;
  size_t bytes = 0;
  double ms = 0;
};

class AccessLog {
 public:
  // "" = stderr, "off" = nothing, else an absolute file path (created 0600).
  static Result<std::unique_ptr<AccessLog>> Open(const std::string& where);
  ~AccessLog();
  void Write(const AccessRecord& record);

 private:
  explicit AccessLog(std::FILE* file, bool owned) : file_(file), owned_(owned) {}
  std::mutex mu_;
  std::FILE* file_;
  bool owned_;
};

}  // namespace corral::server
