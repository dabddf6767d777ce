#include "tools/providers/sandbox_fileops.h"

#include <algorithm>

#include "tools/providers/sandbox_search.h"

namespace corral::runtime {
namespace {

constexpr int64_t kReadTextMaxBytes = 100LL * 1024 * 1024;

std::string RelBelow(const std::string& start, const std::string& rel) {
  if (start == "." || start.empty()) return rel;
  return rel.size() > start.size() ? rel.substr(start.size() + 1) : "";
}

// The view's errors name paths relative to its root ("mnt/user-data/x: No such file or
// directory"); the caller gave a virtual path ("/mnt/user-data/x"), and is shown that.
SandboxError InVirtualTerms(const ResolvedPath& rp, SandboxError e) {
  if (rp.rel.empty() || rp.rel == ".") return e;
  const size_t end = e.message.find(": ");
  if (end == std::string::npos) return e;
  const std::string token = e.message.substr(0, end);
  // The path itself, one below it (a walk), or one of its parents (a mkdir on the way).
  const bool related = token == rp.rel || token.rfind(rp.rel + "/", 0) == 0 ||
                       (!token.empty() && rp.rel.rfind(token + "/", 0) == 0);
  if (related) {
    e.message = VirtualOf(rp, token) + e.message.substr(end);
  }
  return e;
}

SbStatus RequireDirectory(const ResolvedPath& rp) {
  auto is_dir = IsDirectory(rp.view, rp.rel);
  if (!is_dir) return InVirtualTerms(rp, is_dir.error());
  if (!*is_dir) {
    return SandboxError{SandboxErrc::kNotDirectory, rp.virtual_path + ": not a directory"};
  }
  return {};
}

}  // namespace

std::string VirtualOf(const ResolvedPath& rp, const std::string& rel) {
  if (rel.empty() || rel == ".") return rp.view_prefix.empty() ? "/" : rp.view_prefix;
  return rp.view_prefix + "/" + rel;
}

std::string SliceLines(const std::string& content, std::optional<int> start,
                       std::optional<int> end) {
  if (!start && !end) return content;
  int first = start.value_or(1);
  int last = end.value_or(1 << 30);
  std::string out;
  int line = 1;
  size_t pos = 0;
  while (pos < content.size() && line <= last) {
    size_t nl = content.find('\n', pos);
    size_t stop = nl == std::string::npos ? content.size() : nl + 1;
    if (line >= first) out.append(content, pos, stop - pos);
    pos = stop;
    ++line;
  }
  return out;
}

bool LooksLikeText(const std::string& s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : 0;
    if (extra == 0 || i + extra >= n) {
      return false;
    }
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += 1 + extra;
  }
  return true;
}

SbResult<std::string> OpsReadText(const ResolvedPath& rp, std::optional<int> start,
                                  std::optional<int> end) {
  auto bytes = ReadBytes(rp.view, rp.rel, kReadTextMaxBytes);
  if (!bytes) return InVirtualTerms(rp, bytes.error());
  if (!LooksLikeText(*bytes)) {
    return SandboxError{SandboxErrc::kBinary, rp.virtual_path + ": binary content"};
  }
  return SliceLines(*bytes, start, end);
}

SbResult<std::string> OpsReadBytes(const ResolvedPath& rp, int64_t max_bytes) {
  auto bytes = ReadBytes(rp.view, rp.rel, max_bytes);
  if (!bytes) return InVirtualTerms(rp, bytes.error());
  return bytes;
}

SbStatus OpsWrite(const ResolvedPath& rp, const std::string& data, bool append) {
  SbStatus written = WriteBytes(rp.view, rp.rel, data, append);
  if (!written) return InVirtualTerms(rp, written.error());
  return written;
}

SbResult<std::vector<std::string>> OpsListDir(const ResolvedPath& rp, int max_depth) {
  RETURN_SB_IF_ERROR(RequireDirectory(rp));
  WalkOptions wo;
  wo.max_depth = std::max(1, max_depth);
  auto entries = WalkTree(rp.view, rp.rel, wo);
  if (!entries) return InVirtualTerms(rp, entries.error());
  std::vector<std::string> out;
  for (const auto& e : *entries) out.push_back(VirtualOf(rp, e.rel) + (e.is_dir ? "/" : ""));
  std::sort(out.begin(), out.end());
  return out;
}

SbResult<std::vector<FileEntry>> OpsListEntries(const ResolvedPath& rp, int max_depth) {
  RETURN_SB_IF_ERROR(RequireDirectory(rp));
  WalkOptions wo;
  wo.max_depth = std::max(1, max_depth);
  wo.skip_ignored = false;
  wo.with_stat = true;
  auto entries = WalkTree(rp.view, rp.rel, wo);
  if (!entries) return InVirtualTerms(rp, entries.error());
  std::vector<FileEntry> out;
  out.reserve(entries->size());
  for (const auto& e : *entries) {
    out.push_back({VirtualOf(rp, e.rel), e.is_dir, e.is_symlink, e.size, e.mtime, e.mode});
  }
  std::sort(out.begin(), out.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  return out;
}

SbResult<GlobResult> OpsGlob(const ResolvedPath& rp, const std::string& pattern, bool include_dirs,
                             int max_results) {
  RETURN_SB_IF_ERROR(RequireDirectory(rp));
  WalkOptions wo;
  wo.max_depth = 1 << 20;
  auto entries = WalkTree(rp.view, rp.rel, wo);
  if (!entries) return InVirtualTerms(rp, entries.error());
  GlobResult r;
  size_t limit = static_cast<size_t>(std::max(1, max_results));
  for (const auto& e : *entries) {
    if (e.is_dir && !include_dirs) continue;
    if (!GlobMatches(pattern, RelBelow(rp.rel, e.rel))) continue;
    if (r.matches.size() == limit) {
      r.truncated = true;
      break;
    }
    r.matches.push_back(VirtualOf(rp, e.rel));
  }
  return r;
}

SbResult<GrepResult> OpsGrep(const ResolvedPath& rp, const std::string& pattern,
                             const GrepOptions& options) {
  auto matcher = LineMatcher::Create(pattern, options.literal, options.case_sensitive);
  if (!matcher) return matcher.error();
  auto hits = GrepTree(rp.view, rp.rel, {pattern, options});
  if (!hits) return InVirtualTerms(rp, hits.error());
  GrepResult r;
  r.stopped_by = hits->stopped_by;
  size_t limit = static_cast<size_t>(std::max(1, options.max_results));
  for (const auto& h : hits->hits) {
    if (r.matches.size() == limit) {
      r.truncated = true;
      break;
    }
    r.matches.push_back({VirtualOf(rp, h.rel), h.line_number, h.line});
  }
  return r;
}

}  // namespace corral::runtime
