// The file half of a Sandbox, shared by the providers: once a provider has turned a
// virtual path into (view, path relative to the view's root), these do the operation
// through tools/providers/file_access.h and turn results back into virtual paths.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/providers/file_access.h"
#include "tools/providers/sandbox.h"

namespace corral::runtime {

struct ResolvedPath {
  FileView view;
  std::string rel;           // relative to view.root ("." for the root)
  std::string view_prefix;   // virtual path of view.root ("" when it is "/")
  std::string virtual_path;  // as the caller gave it, for messages
};

// Virtual path of `rel` under `rp`'s view.
std::string VirtualOf(const ResolvedPath& rp, const std::string& rel);

// Lines [start, end] (1-based, inclusive) of `content`, keeping line ends.
std::string SliceLines(const std::string& content, std::optional<int> start,
                       std::optional<int> end);

// True when `s` is valid UTF-8 without NUL bytes.
bool LooksLikeText(const std::string& s);

SbResult<std::string> OpsReadText(const ResolvedPath& rp, std::optional<int> start,
                                  std::optional<int> end);
SbResult<std::string> OpsReadBytes(const ResolvedPath& rp, int64_t max_bytes);
SbStatus OpsWrite(const ResolvedPath& rp, const std::string& data, bool append);
// One entry of a detailed listing: its virtual path, type, size, mtime and mode.
struct FileEntry {
  std::string path;
  bool is_dir = false;
  bool is_symlink = false;
  int64_t size = 0;
  int64_t mtime = 0;
  uint32_t mode = 0;
};
// Entries below the directory `rp` down to max_depth (1 = children), sorted by path,
// nothing skipped (no ignore patterns; hidden files are the caller's choice).
SbResult<std::vector<FileEntry>> OpsListEntries(const ResolvedPath& rp, int max_depth);
SbResult<std::vector<std::string>> OpsListDir(const ResolvedPath& rp, int max_depth);
SbResult<GlobResult> OpsGlob(const ResolvedPath& rp, const std::string& pattern, bool include_dirs,
                             int max_results);
SbResult<GrepResult> OpsGrep(const ResolvedPath& rp, const std::string& pattern,
                             const GrepOptions& options);

}  // namespace corral::runtime
