// The tool layer's path handling: thread ids becoming host directories
// (tools/providers/thread_dirs.h), the local provider's virtual -> host mapping and its
// refusals (tools/providers/local_sandbox.h Resolve), the read-only file operations that
// follow a mapping (RESOLVE_BENEATH), and host-path masking (tools/host_paths.h).
// Input: user id, NUL, thread id, NUL, a virtual path (or any text).
//
// Invariants: ids that validate give directories under {base}/users/; a resolved path is
// relative and has no ".." segment; writes never resolve into a read-only mapping; and no
// read, listing or grep through the mappings ever shows a file outside them, although the
// workspace holds symlinks that lead out (to a file whose text is a marker).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "tools/host_paths.h"
#include "tools/providers/local_sandbox.h"
#include "tools/providers/thread_dirs.h"

namespace {

using namespace corral::runtime;
namespace fs = std::filesystem;

constexpr const char* kSecret = "OUTSIDE-THE-MAPPINGS";

struct Tree {
  std::string root, user_data, acp, data;
};

// A host tree made once per process (not under /tmp/corral*, which the integration tests
// watch for leftovers) and removed at exit.
const Tree& TheTree() {
  static const Tree* tree = [] {
    char dir[] = "/tmp/fuzz-local-paths-XXXXXX";
    if (::mkdtemp(dir) == nullptr) corral::fuzz::Fail("mkdtemp", dir);
    auto* t = new Tree{dir, std::string(dir) + "/user-data", std::string(dir) + "/acp",
                       std::string(dir) + "/data"};
    fs::create_directories(t->user_data + "/workspace/sub");
    fs::create_directories(t->user_data + "/outputs");
    fs::create_directories(t->acp);
    fs::create_directories(t->data);
    fs::create_directories(t->root + "/outside");
    auto write = [](const std::string& path, const std::string& text) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || ::write(fd, text.data(), text.size()) < 0) corral::fuzz::Fail("write", path);
      ::close(fd);
    };
    write(t->root + "/outside/secret.txt", std::string(kSecret) + "\n");
    write(t->user_data + "/workspace/a.txt", "alpha\nbeta\n");
    write(t->acp + "/notes.md", "acp\n");
    fs::create_symlink(t->root + "/outside/secret.txt", t->user_data + "/workspace/abs-link");
    fs::create_symlink("../../outside/secret.txt", t->user_data + "/workspace/rel-link");
    fs::create_symlink("../../outside", t->user_data + "/workspace/dir-link");
    fs::create_symlink(t->root + "/outside", t->data + "/escape");
    std::atexit([] { fs::remove_all(TheTree().root); });
    return t;
  }();
  return *tree;
}

void CheckNoSecret(const std::string& what, const std::string& text, const std::string& path) {
  if (text.find(kSecret) != std::string::npos || text.find("secret.txt") != std::string::npos) {
    corral::fuzz::Fail(("a file outside the mappings shows through " + what).c_str(), path);
  }
}

void FuzzThreadDirs(const Tree& tree, const std::string& user, const std::string& thread) {
  (void)IsValidUserId(user);
  (void)IsValidThreadId(thread);
  std::string base = tree.root + "/base";
  auto dirs = ThreadDirsFor(base, user, thread);
  if (!dirs) return;
  if (dirs->thread_dir.rfind(base + "/users/", 0) != 0 ||
      fs::path(dirs->thread_dir).lexically_normal() != fs::path(dirs->thread_dir)) {
    corral::fuzz::Fail("thread directory outside {base}/users", dirs->thread_dir);
  }
  std::string name = JailSandboxName(base, user, thread);
  if (name.size() != 35 || name.rfind("th-", 0) != 0) corral::fuzz::Fail("sandbox name", name);
  ProviderConfig config;
  config.base_dir = base;
  (void)corral::tools::MaskHostPaths(dirs->user_data + "/x " + thread, config, &*dirs);
}

void FuzzResolve(LocalSandbox& sandbox, const Tree& tree, const std::string& path) {
  for (bool write : {false, true}) {
    auto rp = sandbox.Resolve(path, write);
    if (!rp) continue;
    const std::string& rel = rp->rel;
    if (rel.empty() || rel[0] == '/') corral::fuzz::Fail("resolved path not relative", path);
    for (const auto& part : fs::path(rel)) {
      if (part == "..") corral::fuzz::Fail("resolved path has a .. segment", path);
    }
    if (write && (rp->view.root == tree.acp || rp->view.root == tree.data)) {
      corral::fuzz::Fail("write resolved into a read-only mapping", path);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tree& tree = TheTree();
  auto [user, rest] = corral::fuzz::SplitAtNul(corral::fuzz::AsString(data, size));
  auto [thread, path] = corral::fuzz::SplitAtNul(rest);
  FuzzThreadDirs(tree, user, thread);

  LocalSandbox sandbox("fuzz",
                       {{"/mnt/user-data", tree.user_data, false},
                        {"/mnt/acp-workspace", tree.acp, true},
                        {"/mnt/data", tree.data, true}},
                       /*allow_host_bash=*/false);
  FuzzResolve(sandbox, tree, path);
  if (auto text = sandbox.ReadFile(path, std::nullopt, std::nullopt)) {
    CheckNoSecret("read_file", *text, path);
  }
  if (auto list = sandbox.ListDir(path, 3)) {
    for (const auto& entry : *list) CheckNoSecret("ls", entry, path);
  }
  GrepOptions grep;
  grep.literal = true;
  if (auto hits = sandbox.Grep(path, kSecret, grep)) {
    if (!hits->matches.empty()) CheckNoSecret("grep", kSecret, path);
  }
  (void)sandbox.MaskHostPaths(sandbox.ToHostPaths(path));
  return 0;
}
