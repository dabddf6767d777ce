#include "tools/providers/thread_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/fnv1a.h"
#include "base/unique_fd.h"

namespace corral::runtime {
namespace {

bool IdChars(const std::string& id) {
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// A directory made here gets its mode whatever the process's umask: under systemd's
// UMask=0077 mkdir(0755) gave 0700, which the jail's uid cannot enter, and every create
// failed. An existing directory keeps the mode its owner gave it (unless world_writable).
Status MakeDir(const std::string& path, bool world_writable) {
  bool created = ::mkdir(path.c_str(), 0755) == 0;
  if (!created && errno != EEXIST) return Error::FromErrno(errno, "creating " + path);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, "opening " + path + " (must be a real directory)");
  mode_t mode = world_writable ? 0777 : 0755;
  if ((world_writable || created) && ::fchmod(fd.get(), mode) != 0) {
    return Error::FromErrno(errno,
                            "chmod " + std::string(world_writable ? "0777 " : "0755 ") + path);
  }
  return Ok();
}

std::vector<std::string> SubDirs(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && e->d_type == DT_DIR) out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool IsValidUserId(const std::string& id) { return !id.empty() && IdChars(id); }

bool IsValidThreadId(const std::string& id) {
  return !id.empty() && id.size() <= 64 && IdChars(id);
}

Result<ThreadDirs> ThreadDirsFor(const std::string& base, const std::string& user_id,
                                 const std::string& thread_id) {
  if (!IsValidUserId(user_id)) {
    return Error(ErrorCode::kInvalidArgument,
                 "user_id: must match [A-Za-z0-9_-]+ (got \"" + user_id + "\")");
  }
  if (!IsValidThreadId(thread_id)) {
    return Error(ErrorCode::kInvalidArgument,
                 "thread_id: must match [A-Za-z0-9_-]{1,64} (got \"" + thread_id + "\")");
  }
  if (base.empty() || base[0] != '/') {
    return Error(ErrorCode::kInvalidArgument, "base_dir: must be an absolute path");
  }
  ThreadDirs d;
  d.user_id = user_id;
  d.thread_id = thread_id;
  d.thread_dir = base + "/users/" + user_id + "/threads/" + thread_id;
  d.user_data = d.thread_dir + "/user-data";
  d.workspace = d.user_data + "/workspace";
  d.uploads = d.user_data + "/uploads";
  d.outputs = d.user_data + "/outputs";
  d.acp_workspace = d.thread_dir + "/acp-workspace";
  return d;
}

Status EnsureThreadDirs(const ThreadDirs& d) {
  std::string base = d.thread_dir.substr(0, d.thread_dir.find("/users/"));
  for (const std::string& p :
       {base, base + "/users", base + "/users/" + d.user_id,
        base + "/users/" + d.user_id + "/threads", d.thread_dir, d.user_data}) {
    RETURN_IF_ERROR(MakeDir(p, false));
  }
  for (const std::string& p : {d.workspace, d.uploads, d.outputs, d.acp_workspace}) {
    RETURN_IF_ERROR(MakeDir(p, true));
  }
  return Ok();
}

std::vector<std::pair<std::string, std::string>> ListThreadDirs(const std::string& base) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& user : SubDirs(base + "/users")) {
    if (!IsValidUserId(user)) continue;
    for (const auto& thread : SubDirs(base + "/users/" + user + "/threads")) {
      if (IsValidThreadId(thread)) out.emplace_back(user, thread);
    }
  }
  return out;
}

std::string JailSandboxName(const std::string& base_dir, const std::string& user_id,
                            const std::string& thread_id) {
  char* real = ::realpath(base_dir.c_str(), nullptr);
  std::string base = real != nullptr ? real : base_dir;
  std::free(real);
  // Neither id can hold ':' or '\n', nor can a canonical path end in '\n' before a ':'
  // of an id: "base\nuser:thread" is unambiguous.
  std::string key = base + "\n" + user_id + ":" + thread_id;
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(Fnv1a(key)),
                static_cast<unsigned long long>(Fnv1a(key, 0x9e3779b97f4a7c15ULL)));
  return std::string("th-") + hex;
}

}  // namespace corral::runtime
