// Where the output pipes of a finished shell go: background jobs a session started
// (`server &` without a redirect) keep writing to the pipe that was the shell's stdout.
// If we closed our read end they would die of SIGPIPE, or block once the pipe is full,
// because the client closed a session or its shell restarted. The sink reads and drops
// what they write until every writer is gone (EOF), then closes the pipe.
//
// One thread for the whole process, started on first use and never stopped (it owns only
// pipes; a process exit closes them).
#pragma once

#include <mutex>
#include <vector>

#include "base/unique_fd.h"

namespace corral::runtime::sessions {

class OrphanSink {
 public:
  static OrphanSink& Instance();
  // Takes `fd` (a pipe's read end; invalid fds are ignored).
  void Adopt(UniqueFd fd);
  size_t pipes() const;

 private:
  OrphanSink();
  void Loop();
  mutable std::mutex mu_;
  std::vector<UniqueFd> fds_;
  UniqueFd wake_;
};

}  // namespace corral::runtime::sessions
