#include "tools/providers/file_access.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

#include "base/json_input.h"
#include "base/unique_fd.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "tools/providers/file_replace.h"
#include "tools/providers/sandbox_search.h"

namespace corral::runtime {
namespace {

// An operation, run as root or on a thread dropped to the sandbox user.
using Op = std::function<SbResult<std::string>(int root_fd)>;

std::string CleanRel(const std::string& rel) {
  std::string r = rel;
  while (!r.empty() && r.front() == '/') r.erase(r.begin());
  return r.empty() ? "." : r;
}

std::string JoinRel(const std::string& dir, const std::string& name) {
  return dir == "." ? name : dir + "/" + name;
}

SandboxError Escape() {
  return {SandboxErrc::kPathEscape, "Access denied: path escapes mounted directory", EXDEV};
}

// openat2 from the root; EAGAIN is the kernel's "a rename raced with '..'": retry.
SbResult<UniqueFd> OpenIn(int root_fd, bool in_root, const std::string& rel, int flags,
                          mode_t mode = 0) {
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_NO_MAGICLINKS | (in_root ? RESOLVE_IN_ROOT : RESOLVE_BENEATH);
  // The kernel reads the path as a C string; one with a NUL would name another file.
  RETURN_SB_IF_ERROR(RefuseNul(rel, "path"));
  for (int attempt = 0; attempt < 16; ++attempt) {
    long fd = ::syscall(SYS_openat2, root_fd, CleanRel(rel).c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno == EAGAIN || errno == EINTR) continue;
    if (errno == EXDEV) return Escape();
    return ErrorFromErrno(errno, rel);
  }
  return SandboxError{SandboxErrc::kIo, rel + ": path kept changing while resolving", EAGAIN};
}

SbResult<std::string> ReadAllFd(int fd, int64_t max_bytes, const std::string& rel) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrorFromErrno(errno, rel);
    if (n == 0) return out;
    if (static_cast<int64_t>(out.size() + n) > max_bytes) {
      return SandboxError{SandboxErrc::kTooLarge,
                          rel + ": file exceeds " + std::to_string(max_bytes) + " bytes", EFBIG};
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// "a unix socket", "a FIFO", ... for the message that refuses a file of that type.
const char* FileTypeName(mode_t mode) {
  if (S_ISSOCK(mode)) return "a unix socket";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

SandboxError NotRegular(const std::string& rel, mode_t mode) {
  return {SandboxErrc::kPermissionDenied,
          rel + ": is " + FileTypeName(mode) + "; only regular files can be read or written",
          EACCES};
}

// Refuses an existing `rel` that is not a regular file or a directory, looking through an
// O_PATH descriptor: opening a FIFO, a socket or a device for real has effects of its own
// (a FIFO blocks or hands data to whoever reads it, a device does what its driver does, a
// socket fails with the kernel's ENXIO text). Absent is fine: a write creates it.
SbStatus RefuseSpecialFile(int root_fd, bool in_root, const std::string& rel) {
  auto fd = OpenIn(root_fd, in_root, rel, O_PATH);  // follows a link, as the open will
  if (!fd) {
    return fd.error().code == SandboxErrc::kNotFound ? SbStatus{} : SbStatus{fd.error()};
  }
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return ErrorFromErrno(errno, rel);
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return SbStatus{};
  return NotRegular(rel, st.st_mode);
}

// Opens `rel` for reading its content: regular files only, the type checked before the
// open (RefuseSpecialFile) and again on what was opened (a rename may have raced).
SbResult<UniqueFd> OpenRegular(int root_fd, bool in_root, const std::string& rel) {
  RETURN_SB_IF_ERROR(RefuseSpecialFile(root_fd, in_root, rel));
  auto fd = OpenIn(root_fd, in_root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd) return fd.error();
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) return ErrorFromErrno(errno, rel);
  if (S_ISDIR(st.st_mode)) return SandboxError{SandboxErrc::kIsDirectory, rel, EISDIR};
  if (!S_ISREG(st.st_mode)) return NotRegular(rel, st.st_mode);
  return fd;
}

// ---- running an operation, possibly as the sandbox user on a thread of its own --------

SbResult<UniqueFd> OpenRootFd(const FileView& view) {
  UniqueFd fd(::open(view.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    return SandboxError{SandboxErrc::kUnavailable,
                        // Agent-visible: the sandbox, not where the host sees its root.
                        std::string(view.in_root ? "the sandbox's root is gone: "
                                                 : "cannot open the thread directory: ") +
                            std::strerror(errno),
                        errno};
  }
  if (view.expect_process) {
    auto ticks = ProcessStartTicks(view.expect_process->first);
    if (!ticks || *ticks != view.expect_process->second) {
      return SandboxError{SandboxErrc::kUnavailable, "the sandbox's init is gone"};
    }
  }
  return fd;
}

// The body of the dropped thread: its own umask, then the sandbox user's ids. The raw
// syscalls change this thread only (glibc's wrappers would change every thread of the
// process); leaving uid 0 clears this thread's capabilities. The thread ends after `op`
// and never switches back.
SbResult<std::string> RunDropped(uid_t uid, gid_t gid, int root_fd, const Op& op) {
  if (::unshare(CLONE_FS) != 0) return ErrorFromErrno(errno, "unshare(CLONE_FS)");
  ::umask(022);
  if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, gid, gid, gid) != 0 ||
      ::syscall(SYS_setresuid, uid, uid, uid) != 0) {
    // Never fall back to operating as root.
    return SandboxError{SandboxErrc::kIo,
                        std::string("dropping to the sandbox user: ") + std::strerror(errno)};
  }
  return op(root_fd);
}

SbResult<std::string> RunOp(const FileView& view, const Op& op) {
  auto root = OpenRootFd(view);  // as root: the sandbox user may not reach /proc/<pid>/root
  if (!root) return root.error();
  if (!view.drop_to) return op(root->get());
  SbResult<std::string> result = SandboxError{SandboxErrc::kIo, "file access thread did not run"};
  try {
    std::thread worker(
        [&] { result = RunDropped(view.drop_to->first, view.drop_to->second, root->get(), op); });
    worker.join();
  } catch (const std::system_error& e) {
    return SandboxError{SandboxErrc::kIo,
                        std::string("starting the file access thread: ") + e.what()};
  }
  return result;
}

// ---- walking ----------------------------------------------------------------------------

struct Walker {
  int root_fd;
  bool in_root;
  WalkOptions options;
  std::vector<TreeEntry>* out;

  // A symlink met during the walk: classify it by its target, resolved from the root;
  // dangling or escaping links are dropped.
  void AddSymlink(const std::string& rel) {
    auto fd = OpenIn(root_fd, in_root, rel, O_PATH);
    if (!fd) return;
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return;
    out->push_back(EntryOf(rel, st, true));
  }

  TreeEntry EntryOf(const std::string& rel, const struct stat& st, bool symlink) const {
    TreeEntry e{rel, S_ISDIR(st.st_mode)};
    if (options.with_stat) {
      e.is_symlink = symlink;
      e.size = st.st_size;
      e.mtime = st.st_mtim.tv_sec;
      e.mode = st.st_mode;
    }
    return e;
  }

  void Walk(int dir_fd, const std::string& rel, int depth) {
    int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) return;
    DIR* dir = ::fdopendir(dup_fd);
    if (dir == nullptr) {
      ::close(dup_fd);
      return;
    }
    std::vector<std::pair<std::string, unsigned char>> names;
    while (struct dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name, e->d_type);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& [name, type] : names) {
      if (out->size() >= options.max_entries) return;
      if (options.skip_ignored && IsIgnoredName(name)) continue;
      std::string child = JoinRel(rel, name);
      unsigned char t = type;
      if (t == DT_UNKNOWN) {
        struct stat st;
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
      }
      if (t == DT_LNK) {
        AddSymlink(child);
        continue;
      }
      struct stat st {};
      if (options.with_stat && ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        continue;  // vanished meanwhile
      }
      TreeEntry entry = EntryOf(child, st, false);
      entry.is_dir = t == DT_DIR;
      out->push_back(std::move(entry));
      if (t == DT_DIR && depth < options.max_depth) {
        UniqueFd sub(
            ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub) Walk(sub.get(), child, depth + 1);
      }
    }
  }
};

// One entry: type ('d'/'f', upper case for a symlink), "size mtime mode ", path, NUL.
std::string EncodeEntries(const std::vector<TreeEntry>& entries) {
  std::string s;
  for (const auto& e : entries) {
    char type = e.is_dir ? 'd' : 'f';
    s.push_back(e.is_symlink ? static_cast<char>(type - 'a' + 'A') : type);
    s +=
        std::to_string(e.size) + " " + std::to_string(e.mtime) + " " + std::to_string(e.mode) + " ";
    s += e.rel;
    s.push_back('\0');
  }
  return s;
}

std::vector<TreeEntry> DecodeEntries(const std::string& s) {
  std::vector<TreeEntry> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) break;
    TreeEntry e;
    char type = s[start];
    e.is_dir = type == 'd' || type == 'D';
    e.is_symlink = type == 'D' || type == 'F';
    size_t pos = start + 1;
    long long size = 0, mtime = 0;
    unsigned long mode = 0;
    int used = 0;
    if (std::sscanf(s.c_str() + pos, "%lld %lld %lu%n", &size, &mtime, &mode, &used) < 3) break;
    e.size = size;
    e.mtime = mtime;
    e.mode = static_cast<uint32_t>(mode);
    pos += static_cast<size_t>(used) + 1;  // the one space before the path
    e.rel = s.substr(pos, end - pos);
    out.push_back(std::move(e));
    start = end + 1;
  }
  return out;
}

SbResult<std::vector<TreeEntry>> WalkIn(int root_fd, bool in_root, const std::string& rel,
                                        const WalkOptions& options) {
  auto dir = OpenIn(root_fd, in_root, rel, O_RDONLY | O_DIRECTORY);
  if (!dir) return dir.error();
  std::vector<TreeEntry> entries;
  Walker w{root_fd, in_root, options, &entries};
  w.Walk(dir->get(), CleanRel(rel), 1);
  return entries;
}

// What one grep call may still spend, and the hits so far. Files are whole units of the
// byte budget: one that would cross it is not read (half a file would miss lines without
// saying so) and the search stops there, naming the limit.
struct GrepRun {
  const LineMatcher* matcher;
  size_t limit;  // max_results + 1: one more than shown tells "truncated"
  int64_t bytes_left;
  int64_t max_file_bytes;  // larger files are skipped
  std::chrono::steady_clock::time_point deadline;
  std::vector<GrepHit> hits;
  std::optional<std::string> stopped_by;

  bool OutOfTime() {
    if (std::chrono::steady_clock::now() < deadline) return false;
    stopped_by = "grep_max_seconds";
    return true;
  }
  bool Done() const { return stopped_by || hits.size() >= limit; }
};

// Greps one open file into `run`.
void GrepFile(int fd, const std::string& rel, GrepRun* run) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size > run->max_file_bytes) return;  // skipped like DeerFlow
  if (st.st_size > run->bytes_left) {
    run->stopped_by = "grep_max_bytes_scanned";
    return;
  }
  if (run->OutOfTime()) return;
  auto content = ReadAllFd(fd, std::min<int64_t>(run->max_file_bytes, run->bytes_left), rel);
  if (!content) return;  // grew past the cap, or unreadable: skipped
  run->bytes_left -= static_cast<int64_t>(content->size());
  const std::string& c = *content;
  if (c.substr(0, kGrepBinaryProbeBytes).find('\0') != std::string::npos) return;
  size_t start = 0;
  int line_no = 0;
  while (start < c.size()) {
    size_t end = c.find('\n', start);
    if (end == std::string::npos) end = c.size();
    ++line_no;
    std::string line = c.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start = end + 1;
    if ((line_no & 63) == 0 && run->OutOfTime()) return;
    if (line.size() > kGrepMaxLineChars || !run->matcher->Matches(line)) continue;
    run->hits.push_back({rel, line_no, GrepSummary(line)});
    if (run->Done()) return;
  }
}

SbResult<std::string> GrepOp(int root_fd, bool in_root, const std::string& rel,
                             const GrepRequest& req) {
  auto matcher = LineMatcher::Create(req.pattern, req.options.literal, req.options.case_sensitive);
  if (!matcher) return matcher.error();
  GrepRun run{&*matcher,
              static_cast<size_t>(std::max(1, req.options.max_results)) + 1,
              std::max<int64_t>(0, req.options.max_bytes_scanned),
              std::max<int64_t>(0, req.options.max_file_bytes),
              std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(std::max(0.0, req.options.max_seconds))),
              {},
              std::nullopt};
  auto start = OpenIn(root_fd, in_root, rel, O_PATH);
  if (!start) return start.error();
  struct stat st;
  if (::fstat(start->get(), &st) != 0) return ErrorFromErrno(errno, rel);
  if (!S_ISDIR(st.st_mode)) {
    auto fd = OpenRegular(root_fd, in_root, rel);
    if (fd) GrepFile(fd->get(), CleanRel(rel), &run);
  } else {
    WalkOptions wo;
    wo.max_depth = 1 << 20;
    auto entries = WalkIn(root_fd, in_root, rel, wo);
    if (!entries) return entries.error();
    const std::string base = CleanRel(rel);
    for (const auto& e : *entries) {
      if (run.Done() || run.OutOfTime()) break;
      if (e.is_dir) continue;
      std::string below = base == "." ? e.rel : e.rel.substr(base.size() + 1);
      if (req.options.glob && !GlobMatches(*req.options.glob, below)) continue;
      auto fd = OpenRegular(root_fd, in_root, e.rel);
      if (fd) GrepFile(fd->get(), e.rel, &run);
    }
  }
  nlohmann::json hits = nlohmann::json::array();
  for (const auto& h : run.hits) hits.push_back({h.rel, h.line_number, h.line});
  nlohmann::json j = {{"hits", std::move(hits)},
                      {"stopped_by", run.stopped_by ? nlohmann::json(*run.stopped_by) : nullptr}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Creates the missing directories of `rel`'s parent, one openat2-resolved level at a time.
SbStatus MakeParents(int root_fd, bool in_root, const std::string& rel) {
  std::string r = CleanRel(rel);
  size_t pos = 0;
  while ((pos = r.find('/', pos)) != std::string::npos) {
    std::string prefix = r.substr(0, pos);
    ++pos;
    auto fd = OpenIn(root_fd, in_root, prefix, O_PATH | O_DIRECTORY);
    if (fd) continue;
    if (fd.error().code != SandboxErrc::kNotFound) return fd.error();
    size_t slash = prefix.rfind('/');
    std::string parent = slash == std::string::npos ? "." : prefix.substr(0, slash);
    std::string name = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
    auto pfd = OpenIn(root_fd, in_root, parent, O_PATH | O_DIRECTORY);
    if (!pfd) return pfd.error();
    if (::mkdirat(pfd->get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrorFromErrno(errno, prefix);
    }
  }
  return {};
}

SbStatus StatusOf(const SbResult<std::string>& r) {
  if (!r) return r.error();
  return {};
}

}  // namespace

SbResult<std::string> ReadBytes(const FileView& view, const std::string& rel, int64_t max_bytes) {
  bool in_root = view.in_root;
  return RunOp(view, [&](int root_fd) -> SbResult<std::string> {
    auto fd = OpenRegular(root_fd, in_root, rel);
    if (!fd) return fd.error();
    return ReadAllFd(fd->get(), max_bytes, rel);
  });
}

SbStatus WriteBytes(const FileView& view, const std::string& rel, const std::string& data,
                    bool append) {
  bool in_root = view.in_root;
  return StatusOf(RunOp(view, [&](int root_fd) -> SbResult<std::string> {
    auto parents = MakeParents(root_fd, in_root, rel);
    if (!parents) return parents.error();
    RETURN_SB_IF_ERROR(RefuseSpecialFile(root_fd, in_root, rel));
    if (!append) {  // whole or not at all under its name (tools/providers/file_replace.h)
      const std::string clean = CleanRel(rel);
      const size_t slash = clean.rfind('/');
      auto dir = OpenIn(root_fd, in_root, slash == std::string::npos ? "." : clean.substr(0, slash),
                        O_PATH | O_DIRECTORY);
      if (!dir) return dir.error();
      auto replaced = ReplaceFileContent(dir->get(), clean.substr(slash + 1), data, rel);
      if (!replaced) return replaced.error();
      if (*replaced) return std::string();
    }
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | (append ? O_APPEND : O_TRUNC);
    auto fd = OpenIn(root_fd, in_root, rel, flags, 0644);
    if (!fd) return fd.error();
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return ErrorFromErrno(errno, rel);
    if (!S_ISREG(st.st_mode)) return NotRegular(rel, st.st_mode);
    if (int err = WriteAllBytes(fd->get(), data); err != 0) return ErrorFromErrno(err, rel);
    return std::string();
  }));
}

SbResult<std::vector<TreeEntry>> WalkTree(const FileView& view, const std::string& rel,
                                          const WalkOptions& options) {
  bool in_root = view.in_root;
  auto r = RunOp(view, [&](int root_fd) -> SbResult<std::string> {
    auto entries = WalkIn(root_fd, in_root, rel, options);
    if (!entries) return entries.error();
    return EncodeEntries(*entries);
  });
  if (!r) return r.error();
  return DecodeEntries(*r);
}

SbResult<bool> IsDirectory(const FileView& view, const std::string& rel) {
  bool in_root = view.in_root;
  auto r = RunOp(view, [&](int root_fd) -> SbResult<std::string> {
    auto fd = OpenIn(root_fd, in_root, rel, O_PATH);
    if (!fd) return fd.error();
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return ErrorFromErrno(errno, rel);
    return std::string(S_ISDIR(st.st_mode) ? "d" : "f");
  });
  if (!r) return r.error();
  return *r == "d";
}

SbResult<GrepHits> GrepTree(const FileView& view, const std::string& rel,
                            const GrepRequest& request) {
  bool in_root = view.in_root;
  auto r = RunOp(view, [&](int root_fd) { return GrepOp(root_fd, in_root, rel, request); });
  if (!r) return r.error();
  auto j = ParseJsonInputOrDiscarded(*r);
  if (!j.is_object() || !j["hits"].is_array()) {
    return SandboxError{SandboxErrc::kIo, "garbled grep result"};
  }
  GrepHits out;
  for (const auto& h : j["hits"]) {
    out.hits.push_back({h[0].get<std::string>(), h[1].get<int>(), h[2].get<std::string>()});
  }
  if (j["stopped_by"].is_string()) out.stopped_by = j["stopped_by"].get<std::string>();
  return out;
}

}  // namespace corral::runtime
