// The audit log of the agent tools: one JSON object per line per tool call, appended to a
// file (mode 0600) that is rotated by size (path -> path.1 -> ... -> path.N). Record
// fields: ts (UTC, ISO-8601 with milliseconds), user, thread, sandbox, tool, args (each
// value cut to 200 chars + "... (N chars)"), outcome ("ok" | "error"), error, duration_ms,
// exit_code, limit. Per-call env values are never written (only their names, under
// env_names), and configured secret values are replaced by "[redacted]" everywhere.
// Thread-safe; several processes may append to one file (O_APPEND, one write per line).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::runtime {

struct AuditRecord {
  std::string user, thread, sandbox_id, tool;
  // Argument name -> value as text (strings unquoted, numbers/bools in JSON form).
  std::vector<std::pair<std::string, std::string>> args;
  std::vector<std::string> env_names;
  bool ok = true;
  std::string error;
  double duration_ms = 0;
  std::optional<int> exit_code;
  std::optional<std::string> limit;
};

inline constexpr size_t kAuditValueMaxChars = 200;

class AuditLog {
 public:
  AuditLog(std::string path, int64_t max_bytes, int keep, std::vector<std::string> secrets);

  Status Append(const AuditRecord& record);
  // The line Append writes (without the newline), for tests.
  std::string Format(const AuditRecord& record) const;
  const std::string& path() const { return path_; }

 private:
  Status RotateIfNeeded(size_t incoming);

  std::string path_;
  int64_t max_bytes_;
  int keep_;
  std::vector<std::string> secrets_;
  std::mutex mu_;
};

// Replaces each secret (longest first) by "[redacted]".
std::string RedactSecrets(std::string text, std::vector<std::string> secrets);

}  // namespace corral::runtime
