// Replacing a file's whole content so that nobody sees a mix of old and new under its name:
// not a reader during the write, and not whoever looks after the writer died mid-way (the
// daemon killed with -9 during a 100 MiB upload). The content goes to a temporary file in
// the same directory, ".NAME.corral-partial-XXXXXX", which is renamed over NAME once whole.
// A writer that dies leaves the old content (or nothing) under NAME and, at worst, that
// temporary file beside it. A write that fails (a full disk: ENOSPC) removes the temporary
// file and leaves the old content as it was — an in-place rewrite would already have
// truncated it.
//
// The old file's permission bits are kept. Where a rename would change what the name is,
// the caller rewrites the file in place instead (ReplaceFileContent answers false): the
// name is a symlink (a write goes to its target), a file with other hard links, a file of
// another user, a mount point, or a name in a directory the caller may not create files in.
// Not fsync'd: this protects against a dead process, not a dead machine.
#pragma once

#include <string>

#include "tools/providers/sandbox.h"

namespace corral::runtime {

// `dir_fd`: the directory holding `name` (an O_PATH descriptor is enough); `rel` names the
// file in error messages. true: replaced; false: not tried (see above), nothing changed.
SbResult<bool> ReplaceFileContent(int dir_fd, const std::string& name, const std::string& data,
                                  const std::string& rel);

// Writes all of `data` to `fd` (retrying short writes and EINTR): 0, or the failing errno.
int WriteAllBytes(int fd, const std::string& data);

}  // namespace corral::runtime
