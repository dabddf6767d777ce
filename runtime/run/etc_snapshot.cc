#include "runtime/run/etc_snapshot.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "base/files.h"
#include "base/unique_fd.h"
#include "runtime/run/runtime_dir.h"

namespace corral::runtime {

namespace {

std::string SnapshotRoot() { return RuntimeDir() + "/etc"; }

std::string KeyOf(const std::vector<EtcEntry>& entries) {
  uint64_t h = kFnv1aSeed;
  for (const EtcEntry& e : entries) {
    h = Fnv1a(std::to_string(static_cast<int>(e.kind)) + "\n" + e.path + "\n" +
                  std::to_string(e.data.size()) + "\n",
              h);
    h = Fnv1a(e.data, h);
    h = Fnv1a(e.fingerprint, h);
  }
  char key[24];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
  return key;
}

Status WriteNewFile(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return Error::FromErrno(errno, path);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n <= 0) return Error::FromErrno(errno, "write " + path);
    done += static_cast<size_t>(n);
  }
  return Ok();
}

Status Populate(const std::string& dir, const std::vector<EtcEntry>& entries) {
  for (const EtcEntry& e : entries) {
    std::string path = dir + "/" + e.path;
    switch (e.kind) {
      case EtcEntry::Kind::kDir:
        if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
          return Error::FromErrno(errno, "mkdir " + path);
        }
        break;
      case EtcEntry::Kind::kFile:
        RETURN_IF_ERROR(WriteNewFile(path, e.data));
        break;
      case EtcEntry::Kind::kSymlink:
        if (::symlink(e.data.c_str(), path.c_str()) != 0) {
          return Error::FromErrno(errno, "symlink " + path);
        }
        break;
      case EtcEntry::Kind::kHostFile: {
        // Unreadable now (raced with an edit): the jail lacks it, as when it is missing.
        auto content = ReadFile(e.data);
        if (content) RETURN_IF_ERROR(WriteNewFile(path, *content));
        break;
      }
    }
  }
  return Ok();
}

}  // namespace

Result<std::string> EnsureEtcSnapshot(const std::vector<EtcEntry>& entries) {
  std::string root = SnapshotRoot();
  std::string dir = root + "/" + KeyOf(entries);
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;

  std::string parent = root.substr(0, root.rfind('/'));
  for (const std::string& d : {parent, root}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno(errno, d);
  }
  std::string tmp_template = root + "/.new-XXXXXX";
  if (::mkdtemp(tmp_template.data()) == nullptr) {
    return Error::FromErrno(errno, "mkdtemp in " + root);
  }
  const std::string& tmp = tmp_template;
  std::error_code ignored;
  Status filled = Populate(tmp, entries);
  if (filled && ::chmod(tmp.c_str(), 0755) != 0) filled = Error::FromErrno(errno, "chmod " + tmp);
  if (!filled) {
    std::filesystem::remove_all(tmp, ignored);
    return filled.error();
  }
  if (::rename(tmp.c_str(), dir.c_str()) != 0) {
    int err = errno;
    std::filesystem::remove_all(tmp, ignored);
    // Another corral renamed the same snapshot into place first: use theirs.
    if (err != EEXIST && err != ENOTEMPTY) return Error::FromErrno(err, "rename to " + dir);
  }
  return dir;
}

}  // namespace corral::runtime
