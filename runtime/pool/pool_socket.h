// The pool server's Unix socket: where clients connect and how a server claims the path.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// A listening socket at `path`, mode 0600, non-blocking. The file appears only once the
// socket listens, so a client that finds it is never refused by a server still starting
// (a refused client takes the server for gone). An existing file is replaced only if
// nobody answers on it; two servers starting on one path at once cannot both claim it.
Result<UniqueFd> ListenOnPoolSocket(const std::string& path);

// A connection to the server at `path`; nullopt if nobody serves there (no such file, or
// a stale one whose server is gone).
Result<std::optional<UniqueFd>> ConnectToPoolSocket(const std::string& path);

}  // namespace corral::runtime
