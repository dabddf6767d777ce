#include "runtime/run/seccomp_cache.h"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/files.h"
#include "base/unique_fd.h"
#include "runtime/run/runtime_dir.h"

namespace corral::runtime {

namespace {

std::string CacheDir() { return RuntimeDir() + "/seccomp-cache"; }

std::string CacheKey(const std::string& text) {
  const scmp_version* v = seccomp_version();
  std::string salt = "libseccomp-" + std::to_string(v->major) + "." + std::to_string(v->minor) +
                     "." + std::to_string(v->micro) + "-" + std::to_string(sizeof(sock_filter));
  char key[40];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(Fnv1a(salt + text)));
  return key;
}

bool Load(const std::string& path, jail::SeccompProgram* out) {
  auto bytes = ReadFile(path);
  if (!bytes || bytes->empty() || bytes->size() % sizeof(sock_filter) != 0) return false;
  out->instructions.resize(bytes->size() / sizeof(sock_filter));
  std::memcpy(out->instructions.data(), bytes->data(), bytes->size());
  return true;
}

void Store(const std::string& dir, const std::string& path, const jail::SeccompProgram& p) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
  if (!fd) return;
  size_t size = p.instructions.size() * sizeof(sock_filter);
  bool ok = ::write(fd.get(), p.instructions.data(), size) == static_cast<ssize_t>(size);
  fd.Reset();
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace

Result<jail::SeccompProgram> CompileSeccompCached(const std::string& json_text,
                                                  const std::string& origin) {
  std::string dir = CacheDir();
  std::string path = dir + "/" + CacheKey(json_text) + ".bpf";
  jail::SeccompProgram program;
  if (Load(path, &program)) return program;
  ASSIGN_OR_RETURN(program, jail::CompileSeccompProfile(json_text, origin));
  // An empty program ("unconfined") is not cached: there is nothing to save.
  if (!program.empty()) Store(dir, path, program);
  return program;
}

}  // namespace corral::runtime
