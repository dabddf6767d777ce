// The host half of `corral cp` (runtime/sandboxes/copy.h says what it guarantees): the
// host's GNU tar, and the extraction of an untrusted archive into a host destination.
// Parent side; used by copy.cc only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/sandboxes/copy.h"

namespace corral::runtime::copy_internal {

// Starts the host's tar (/usr/bin/tar, else /bin/tar) with `args`, stdin and stdout on
// the given fds (-1: /dev/null), stderr on `stderr_fd` (-1: ours), in the directory
// `cwd_fd` (-1: ours). `unprivileged`:
// with every capability dropped for good (no mknod, no chown, no reading or writing past
// file modes) and no_new_privs. It dies with the calling thread (PR_SET_PDEATHSIG).
Result<pid_t> StartHostTar(const std::vector<std::string>& args, int stdin_fd, int stdout_fd,
                           int cwd_fd, bool unprivileged, int stderr_fd = -1);
// Writes what a memfd holds (a tar's stderr, kept until it is known to matter) to stderr.
void CopyToStderr(int fd);
// Waits for it; its exit status, or 128+N when signal N ended it.
Result<int> WaitHostTar(pid_t pid);

// Writes a tar stream into the fd it is given (the write end of a pipe, closed after it
// returns), e.g. a tar in a sandbox.
using ArchiveProducer = std::function<Status(int fd)>;

// Extracts what `produce` writes (or, when it is empty, what `archive_fd` holds) to
// `host_dst` (ExtractUntrustedArchive in copy.h). The destination is resolved, and its
// errors reported, before `produce` runs.
Status ExtractToHost(const CopyPath& source, const std::string& host_dst,
                     const ArchiveProducer& produce, int archive_fd);

}  // namespace corral::runtime::copy_internal
