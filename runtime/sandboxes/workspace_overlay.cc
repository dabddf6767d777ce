#include "runtime/sandboxes/workspace_overlay.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "base/files.h"
#include "base/scope_guard.h"
#include "base/tree_at.h"
#include "runtime/run/planner.h"
#include "runtime/run/runtime_dir.h"
#include "runtime/sandboxes/pause.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/workspace_layers.h"

namespace corral::runtime {

namespace {

constexpr const char* kStagingPrefix = ".corral-commit-";
constexpr const char* kJournal = "commit.journal";

std::string LowerOf(const JailSpec& spec) { return WorkspaceHostDir(spec); }
std::string UpperOf(const JailSpec& spec) { return WorkspaceUpperDir(spec); }

char TypeOf(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return 'f';
  if (S_ISDIR(st.st_mode)) return 'd';
  if (S_ISLNK(st.st_mode)) return 'l';
  return 'o';
}

std::vector<std::string> SortedNames(int dirfd) {
  std::vector<std::string> out = EntryNames(dirfd);
  std::sort(out.begin(), out.end());
  return out;
}

UniqueFd OpenDirAt(int dirfd, const std::string& name) {
  return UniqueFd(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

bool SameContent(int a_dir, int b_dir, const std::string& name) {
  UniqueFd a(::openat(a_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  UniqueFd b(::openat(b_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!a || !b) return false;
  char x[1 << 15], y[1 << 15];
  while (true) {
    const ssize_t n = ::read(a.get(), x, sizeof x);
    if (n < 0) return false;
    ssize_t got = 0;
    while (got < n) {
      const ssize_t m = ::read(b.get(), y + got, static_cast<size_t>(n - got));
      if (m <= 0) return false;
      got += m;
    }
    if (n == 0) return ::read(b.get(), y, 1) == 0;
    if (std::memcmp(x, y, static_cast<size_t>(n)) != 0) return false;
  }
}

std::string LinkTarget(int dirfd, const std::string& name) {
  char buf[4096];
  const ssize_t n = ::readlinkat(dirfd, name.c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

// Everything below `dirfd` (a directory of the workspace or of the host's) as `kind`
// changes, under `prefix`.
void ListAll(int dirfd, const std::string& prefix, ChangeKind kind,
             std::vector<WorkspaceChange>* out) {
  for (const std::string& name : SortedNames(dirfd)) {
    struct stat st;
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out->push_back({kind, prefix + name, TypeOf(st)});
    if (S_ISDIR(st.st_mode)) {
      if (UniqueFd child = OpenDirAt(dirfd, name))
        ListAll(child.get(), prefix + name + "/", kind, out);
    }
  }
}

bool IsOpaque(int dirfd) {
  char opaque = 0;
  return ::fgetxattr(dirfd, "trusted.overlay.opaque", &opaque, 1) == 1 && opaque == 'y';
}

// The names a diff must look at in one directory: every entry the sandbox's layers have
// there (what it wrote, its whiteouts: what it removed), and when a layer's directory is
// opaque (removed and made again) everything in the workspace and the host's directory.
// Nothing the layers lack can differ from the host's directory: overlayfs shows it as is.
std::set<std::string> NamesToCompare(const std::vector<UniqueFd>& layers, int merged, int host) {
  std::set<std::string> names;
  bool everything = false;
  for (const UniqueFd& layer : layers) {
    for (std::string& name : EntryNames(layer.get())) names.insert(std::move(name));
    everything = everything || IsOpaque(layer.get());
  }
  if (everything) {
    for (std::string& name : EntryNames(merged)) names.insert(std::move(name));
    if (host >= 0) {
      for (std::string& name : EntryNames(host)) names.insert(std::move(name));
    }
  }
  return names;
}

// One directory of the workspace as the sandbox sees it (`merged`) against the same
// directory of the host's (-1: none), looking at the names its layers (`layers`, the same
// directory in each of the sandbox's upper layers and snapshots) touch.
void Walk(int merged, int host, const std::vector<UniqueFd>& layers, const std::string& prefix,
          std::vector<WorkspaceChange>* out) {
  for (const std::string& name : NamesToCompare(layers, merged, host)) {
    const std::string path = prefix + name;
    struct stat ms, hs;
    const bool in_merged = ::fstatat(merged, name.c_str(), &ms, AT_SYMLINK_NOFOLLOW) == 0;
    const bool in_host = host >= 0 && ::fstatat(host, name.c_str(), &hs, AT_SYMLINK_NOFOLLOW) == 0;
    if (!in_merged && !in_host) continue;
    if (!in_host || !in_merged) {
      const int where = in_merged ? merged : host;
      const struct stat& st = in_merged ? ms : hs;
      const ChangeKind kind = in_merged ? ChangeKind::kAdded : ChangeKind::kDeleted;
      out->push_back({kind, path, TypeOf(st)});
      if (S_ISDIR(st.st_mode)) {
        if (UniqueFd dir = OpenDirAt(where, name)) ListAll(dir.get(), path + "/", kind, out);
      }
      continue;
    }
    const char type = TypeOf(ms);
    if (type == 'd') {
      UniqueFd now = OpenDirAt(merged, name);
      if (!now) continue;
      if (!S_ISDIR(hs.st_mode)) {
        out->push_back({ChangeKind::kChanged, path, 'd'});
        ListAll(now.get(), path + "/", ChangeKind::kAdded, out);
        continue;
      }
      UniqueFd was = OpenDirAt(host, name);
      if (!was) continue;
      std::vector<UniqueFd> below;
      for (const UniqueFd& layer : layers) {
        if (UniqueFd dir = OpenDirAt(layer.get(), name)) below.push_back(std::move(dir));
      }
      Walk(now.get(), was.get(), below, path + "/", out);
      continue;
    }
    bool same = TypeOf(hs) == type;
    if (same && type == 'l') same = LinkTarget(merged, name) == LinkTarget(host, name);
    if (same && type == 'f') {
      same = ms.st_size == hs.st_size && (ms.st_mode & 07777) == (hs.st_mode & 07777) &&
             SameContent(merged, host, name);
    }
    if (!same) out->push_back({ChangeKind::kChanged, path, type});
  }
}

std::pair<std::string, std::string> SplitParent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

// One step of a commit, done again safely any number of times: `from` in the staging
// directory moved to `path` in the host directory ("rename"), or `path` moved aside into
// the staging directory as `from` ("delete"; the staging directory goes last).
struct Op {
  std::string what;  // "rename" | "delete"
  std::string from;  // name in the staging directory
  std::string path;  // relative to the host directory
};

Status ApplyOps(int lower, int staging, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    const auto [dir, base] = SplitParent(op.path);
    ASSIGN_OR_RETURN(UniqueFd parent, OpenBeneath(lower, dir, O_RDONLY | O_DIRECTORY));
    struct stat st;
    if (op.what == "delete") {
      const bool moved = ::fstatat(staging, op.from.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
      if (moved) continue;
      if (::renameat(parent.get(), base.c_str(), staging, op.from.c_str()) != 0 &&
          errno != ENOENT) {
        return Error::FromErrno(errno, "move aside " + op.path);
      }
    } else {
      if (::fstatat(staging, op.from.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // done
      if (::renameat(staging, op.from.c_str(), parent.get(), base.c_str()) != 0) {
        return Error::FromErrno(errno, "write " + op.path);
      }
    }
  }
  return Ok();
}

std::string JournalPath(const JailSpec& spec) {
  return spec.workspace_overlay_dir + "/" + kJournal;
}

// A commit cut short: finished when its journal was written, else undone (its staging
// directories removed).
Status FinishCommit(const JailSpec& spec) {
  const std::string journal = JournalPath(spec);
  UniqueFd user_data(::open(spec.user_data_dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!user_data) return Error::FromErrno(errno, *spec.user_data_dir);
  if (auto text = ReadFile(journal)) {
    try {
      const auto j = nlohmann::json::parse(*text);
      std::vector<Op> ops;
      for (const auto& o : j.at("ops")) ops.push_back({o.at(0), o.at(1), o.at(2)});
      const std::string staging_name = j.at("staging").get<std::string>();
      ASSIGN_OR_RETURN(UniqueFd lower,
                       OpenBeneath(user_data.get(), "workspace", O_RDONLY | O_DIRECTORY));
      if (UniqueFd staging = OpenDirAt(user_data.get(), staging_name)) {
        RETURN_IF_ERROR(ApplyOps(lower.get(), staging.get(), ops));
      }
    } catch (const nlohmann::json::exception& e) {
      return Error(ErrorCode::kIo, journal + ": corrupt commit journal: " + e.what());
    }
  }
  for (const std::string& name : SortedNames(user_data.get())) {
    if (name.rfind(kStagingPrefix, 0) == 0) RETURN_IF_ERROR(RemoveAt(user_data.get(), name));
  }
  if (::unlink(journal.c_str()) != 0 && errno != ENOENT) return Error::FromErrno(errno, journal);
  return Ok();
}

}  // namespace

Result<SandboxRecord> OverlaidSandbox(const std::string& sandbox) {
  ASSIGN_OR_RETURN(SandboxInfo info, InspectSandbox(sandbox, Inspect::kLiveness));
  if (!info.record.spec.workspace_overlay || info.record.spec.workspace_overlay_dir.empty()) {
    return Error(ErrorCode::kFailedPrecondition,
                 "sandbox " + info.record.name +
                     " has no workspace overlay (corral create --workspace-overlay "
                     "--user-data DIR makes one)");
  }
  if (!info.alive) {
    return Error(ErrorCode::kNotFound,
                 "sandbox " + info.record.name + " is dead (its init exited)");
  }
  return info.record;
}

Status FinishWorkspaceCommit(const JailSpec& spec) {
  if (!spec.workspace_overlay || spec.workspace_overlay_dir.empty() || !spec.user_data_dir) {
    return Ok();
  }
  return FinishCommit(spec);
}

const char* ChangeLetter(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return "A";
    case ChangeKind::kChanged:
      return "C";
    case ChangeKind::kDeleted:
      return "D";
  }
  return "?";
}

const char* ChangeName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded:
      return "added";
    case ChangeKind::kChanged:
      return "changed";
    case ChangeKind::kDeleted:
      return "deleted";
  }
  return "?";
}

Status PrepareWorkspaceOverlay(JailSpec* spec, const std::string& name) {
  if (!spec->workspace_overlay) return Ok();
  if (::geteuid() != 0) {
    return Error(ErrorCode::kPermissionDenied,
                 "workspace_overlay needs root (corral mounts the overlay in the host's "
                 "namespace)");
  }
  ASSIGN_OR_RETURN(std::string state, StateDir());
  for (const std::string& d : {state, state + "/overlays"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno(errno, d);
  }
  spec->workspace_overlay_dir = state + "/overlays/" + name;
  RemoveWorkspaceOverlay(*spec);  // an earlier sandbox's of this name
  struct stat lower;
  if (::stat(LowerOf(*spec).c_str(), &lower) != 0) return Error::FromErrno(errno, LowerOf(*spec));
  spec->workspace_upper.clear();
  const std::string upper = UpperOf(*spec);
  for (const std::string& d : {spec->workspace_overlay_dir, upper, WorkspaceWorkDir(*spec)}) {
    if (::mkdir(d.c_str(), 0700) != 0) return Error::FromErrno(errno, "mkdir " + d);
  }
  RETURN_IF_ERROR(MarkUpperLayer(upper, WorkspaceUpperName(*spec)));
  // The overlay's root directory is the upper one: it must be the workspace's owner's.
  if (::chown(upper.c_str(), lower.st_uid, lower.st_gid) != 0 ||
      ::chmod(upper.c_str(), lower.st_mode & 07777) != 0) {
    return Error::FromErrno(errno, "chown " + upper);
  }
  return Ok();
}

void RemoveWorkspaceOverlay(const JailSpec& spec) {
  if (spec.workspace_overlay_dir.empty()) return;
  if (spec.user_data_dir) (void)FinishCommit(spec);
  const auto [parent, base] = SplitParent(spec.workspace_overlay_dir);
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) (void)RemoveAt(dir.get(), base);
}

Status MarkUpperLayer(const std::string& dir, const std::string& name) {
  if (::setxattr(dir.c_str(), kWorkspaceUpperXattr, name.data(), name.size(), 0) != 0) {
    return Error::FromErrno(errno, std::string("setxattr ") + kWorkspaceUpperXattr + " on " + dir);
  }
  return Ok();
}

std::string MountedUpperLayer(const SandboxRecord& record) {
  auto merged = OpenMergedWorkspace(record);
  if (!merged) return {};
  char name[256];
  const ssize_t n = ::fgetxattr(merged->get(), kWorkspaceUpperXattr, name, sizeof name);
  return n > 0 ? std::string(name, static_cast<size_t>(n)) : std::string();
}

Result<UniqueFd> OpenSandboxRoot(pid_t init_pid) {
  const std::string path = "/proc/" + std::to_string(init_pid) + "/root";
  UniqueFd root(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::FromErrno(errno, path);
  return root;
}

Result<UniqueFd> OpenMergedWorkspace(const SandboxRecord& record) {
  ASSIGN_OR_RETURN(UniqueFd root, OpenSandboxRoot(record.init_pid));
  return OpenBeneath(root.get(), kWorkspacePath + 1, O_RDONLY | O_DIRECTORY);
}

namespace {

// The changes of a sandbox whose commit cut short was finished.
Result<std::vector<WorkspaceChange>> ChangesOf(const SandboxRecord& record) {
  const JailSpec& spec = record.spec;
  std::vector<UniqueFd> layers;
  for (const std::string& dir : WorkspaceUpperAndSnapshotDirs(spec)) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return Error::FromErrno(errno, dir);
    layers.push_back(std::move(fd));
  }
  UniqueFd host(::open(LowerOf(spec).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!host) return Error::FromErrno(errno, LowerOf(spec));
  ASSIGN_OR_RETURN(UniqueFd merged, OpenMergedWorkspace(record));
  std::vector<WorkspaceChange> changes;
  Walk(merged.get(), host.get(), layers, "", &changes);
  std::sort(changes.begin(), changes.end(),
            [](const WorkspaceChange& a, const WorkspaceChange& b) { return a.path < b.path; });
  return changes;
}

}  // namespace

Result<std::vector<WorkspaceChange>> DiffWorkspace(const std::string& sandbox) {
  ASSIGN_OR_RETURN(SandboxRecord record, OverlaidSandbox(sandbox));
  RETURN_IF_ERROR(FinishCommit(record.spec));
  return ChangesOf(record);
}

namespace {

// Whether a change lies below one already taken care of whole (a directory added, removed
// or replaced).
bool Covered(const std::set<std::string>& covered, const std::string& path) {
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (covered.count(path.substr(0, slash)) > 0) return true;
  }
  return false;
}

// What a commit and a discard start from: the sandbox (paused while they run, after a
// commit cut short was finished) and its changes.
struct Review {
  SandboxRecord record;
  PausedWhile paused;
  std::vector<WorkspaceChange> changes;
};

Result<Review> StartReview(const std::string& sandbox) {
  ASSIGN_OR_RETURN(SandboxRecord record, OverlaidSandbox(sandbox));
  RETURN_IF_ERROR(FinishCommit(record.spec));
  ASSIGN_OR_RETURN(PausedWhile paused, PausedWhile::For(record));
  ASSIGN_OR_RETURN(std::vector<WorkspaceChange> changes, ChangesOf(record));
  return Review{std::move(record), std::move(paused), std::move(changes)};
}

}  // namespace

Result<CommitSummary> CommitWorkspace(const std::string& sandbox) {
  ASSIGN_OR_RETURN(Review review, StartReview(sandbox));
  const JailSpec& spec = review.record.spec;
  const std::vector<WorkspaceChange>& changes = review.changes;
  CommitSummary summary;
  if (changes.empty()) return summary;

  UniqueFd user_data(::open(spec.user_data_dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!user_data) return Error::FromErrno(errno, *spec.user_data_dir);
  ASSIGN_OR_RETURN(UniqueFd lower,
                   OpenBeneath(user_data.get(), "workspace", O_RDONLY | O_DIRECTORY));
  // Copied from the sandbox's own view (paused): the upper layer and the snapshots' merged.
  ASSIGN_OR_RETURN(UniqueFd merged, OpenMergedWorkspace(review.record));
  const std::string staging_name = kStagingPrefix + NewSandboxId();
  if (::mkdirat(user_data.get(), staging_name.c_str(), 0700) != 0) {
    return Error::FromErrno(errno, "mkdir " + staging_name);
  }
  UniqueFd staging = OpenDirAt(user_data.get(), staging_name);
  if (!staging) return Error::FromErrno(errno, staging_name);

  // 1. Stage: copies of what is new, beside the host directory (same file system).
  std::vector<Op> ops;
  std::set<std::string> covered;
  for (const WorkspaceChange& c : changes) {
    if (Covered(covered, c.path)) continue;
    const std::string n = std::to_string(ops.size());
    if (c.kind != ChangeKind::kAdded) {
      // Replaced or removed: moved aside whole, unless a file replaces a file (a rename
      // over it does that in one step).
      struct stat ls;
      const bool same_kind_file =
          c.kind == ChangeKind::kChanged && c.type != 'd' &&
          ::fstatat(lower.get(), c.path.c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0 &&
          !S_ISDIR(ls.st_mode);
      if (!same_kind_file) ops.push_back({"delete", "gone-" + n, c.path});
    }
    if (c.kind == ChangeKind::kDeleted) {
      covered.insert(c.path);
      ++summary.removed;
      continue;
    }
    const auto [dir, base] = SplitParent(c.path);
    ASSIGN_OR_RETURN(UniqueFd from, OpenBeneath(merged.get(), dir, O_RDONLY | O_DIRECTORY));
    RETURN_IF_ERROR(CopyAt(from.get(), base, staging.get(), "new-" + n));
    ops.push_back({"rename", "new-" + n, c.path});
    if (c.type == 'd') covered.insert(c.path);
    ++summary.written;
  }
  // 2. The commit point: the journal, written whole.
  nlohmann::json j = {{"staging", staging_name}, {"ops", nlohmann::json::array()}};
  for (const Op& op : ops) j["ops"].push_back({op.what, op.from, op.path});
  const std::string journal = JournalPath(spec);
  const std::string tmp = journal + ".tmp";
  {
    UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
    const std::string text = j.dump();
    if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::fsync(fd.get()) != 0) {
      return Error::FromErrno(errno, "write " + tmp);
    }
  }
  if (::rename(tmp.c_str(), journal.c_str()) != 0) return Error::FromErrno(errno, journal);
  // 3. Publish, then forget the journal and what was moved aside.
  RETURN_IF_ERROR(ApplyOps(lower.get(), staging.get(), ops));
  RETURN_IF_ERROR(FinishCommit(spec));
  return summary;
}

Result<CommitSummary> DiscardWorkspace(const std::string& sandbox) {
  ASSIGN_OR_RETURN(Review review, StartReview(sandbox));
  const SandboxRecord& record = review.record;
  const JailSpec& spec = record.spec;
  const std::vector<WorkspaceChange>& changes = review.changes;
  CommitSummary summary;
  if (changes.empty()) return summary;
  UniqueFd lower(::open(LowerOf(spec).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lower) return Error::FromErrno(errno, LowerOf(spec));
  // The sandbox's own view of its workspace, through its root: what it sees is rewritten.
  ASSIGN_OR_RETURN(UniqueFd merged, OpenMergedWorkspace(record));
  std::set<std::string> covered;
  for (const WorkspaceChange& c : changes) {
    if (Covered(covered, c.path)) continue;
    const auto [dir, base] = SplitParent(c.path);
    ASSIGN_OR_RETURN(UniqueFd view, OpenBeneath(merged.get(), dir, O_RDONLY | O_DIRECTORY));
    if (c.kind != ChangeKind::kDeleted) {
      RETURN_IF_ERROR(RemoveAt(view.get(), base));
      ++summary.removed;
    }
    if (c.kind != ChangeKind::kAdded) {
      ASSIGN_OR_RETURN(UniqueFd from, OpenBeneath(lower.get(), dir, O_RDONLY | O_DIRECTORY));
      RETURN_IF_ERROR(CopyAt(from.get(), base, view.get(), base));
      ++summary.written;
    }
    covered.insert(c.path);
  }
  return summary;
}

}  // namespace corral::runtime
