// Small host-side file helpers (parent process only: they allocate).
#pragma once

#include <string>

#include "base/result.h"

namespace corral {

// Reads a whole file. Errors name the path.
Result<std::string> ReadFile(const std::string& path);

// Writes `content` to an existing file (O_WRONLY|O_TRUNC), as cgroupfs and procfs need:
// one write() call, no temp file. Errors name the path.
Status WriteFile(const std::string& path, const std::string& content);

// Writes `content` as the file `path`, whole or not at all: into path + ".tmp" (created
// with `mode`), then renamed over `path`. A reader, or a process killed in between, never
// sees part of it. No fsync (what a host crash may lose is the caller's to judge).
Status WriteFileWhole(const std::string& path, const std::string& content, int mode = 0600);

// Reads a file holding one integer (cgroupfs style, trailing newline allowed).
Result<long long> ReadInt(const std::string& path);

// Trims ASCII whitespace at both ends.
std::string Trim(const std::string& s);

}  // namespace corral
