// `corral run --rootfs DIR`: a user-supplied tree as / instead of the host's system dirs.
// The tree here is the smallest useful one: busybox-static and a few applet symlinks.
// Root only; leak-checked.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "base/files.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

constexpr char kBusybox[] = "/bin/busybox";

// Every path below `root`, relative, with its mode: to prove the run left the tree as it was.
void ListTree(const std::string& root, const std::string& rel, std::set<std::string>* out) {
  DIR* d = opendir((root + rel).c_str());
  if (d == nullptr) return;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    std::string path = rel + "/" + name;
    if (lstat((root + path).c_str(), &st) != 0) continue;
    out->insert(path + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_size));
    if (S_ISDIR(st.st_mode)) ListTree(root, path, out);
  }
  closedir(d);
}

class RootfsTest : public JailTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(JailTest::SetUp());
    if (IsSkipped()) return;
    if (access(kBusybox, X_OK) != 0) CORRAL_SKIP_OR_FAIL("needs busybox-static at /bin/busybox");
    ASSERT_EQ(chmod(root_.path().c_str(), 0755), 0);
    ASSERT_TRUE(root_.MakeDirs("bin"));
    Result<std::string> busybox = ReadFile(kBusybox);
    ASSERT_TRUE(busybox) << busybox.error().message();
    ASSERT_TRUE(root_.WriteFile("bin/busybox", *busybox, 0755));
    for (const char* applet : {"sh", "ls", "id", "cat", "echo"}) {
      ASSERT_EQ(symlink("busybox", root_.Join(std::string("bin/") + applet).c_str()), 0);
    }
    Result<std::string> probe = ReadFile(ProbeBinary());
    ASSERT_TRUE(probe) << probe.error().message();
    ASSERT_TRUE(root_.WriteFile("bin/corral_probe", *probe, 0755));
    ListTree(root_.path(), "", &tree_before_);
  }

  void ExpectTreeUnchanged() {
    std::set<std::string> after;
    ListTree(root_.path(), "", &after);
    EXPECT_EQ(after, tree_before_) << "the run changed the rootfs on the host";
  }

  TempDir root_;
  std::set<std::string> tree_before_;
};

TEST_F(RootfsTest, BusyboxShellRunsInTheRootfs) {
  Result<JailRun> run = RunJailed(CorralBinary(), {"run", "--json", "--rootfs", root_.path(), "--",
                                                   "/bin/sh", "-c", "ls /; id"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  EXPECT_EQ(run->outcome["exit_code"], 0) << run->Describe();
  std::string out = run->outcome["stdout"];
  EXPECT_NE(out.find("bin\n"), std::string::npos) << out;
  // busybox id prints names only if the rootfs has an /etc/passwd that knows them.
  size_t uid = out.find("uid=1000");
  ASSERT_NE(uid, std::string::npos) << out;
  size_t gid = out.find(" gid=1000", uid);
  EXPECT_LT(gid, out.find('\n', uid)) << out;
  // The host's system directories are not there: the rootfs has no /usr.
  EXPECT_EQ(out.find("usr\n"), std::string::npos) << out;
  ExpectTreeUnchanged();
}

TEST_F(RootfsTest, ProbeInTheRootfsSeesTheSameIsolation) {
  Result<JailRun> run = RunJailed(CorralBinary(), {"run", "--json", "--rootfs", root_.path(), "--",
                                                   "/bin/corral_probe", "report"});
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
  const json& r = run->probe;
  ASSERT_TRUE(r.is_object()) << run->Describe();
  EXPECT_EQ(r["uid"], 1000);
  EXPECT_EQ(r["euid"], 1000);
  EXPECT_EQ(r["hostname"], "sandbox");
  EXPECT_EQ(r["pid"], 2);
  EXPECT_EQ(r["CapEff"], "0000000000000000");
  EXPECT_EQ(r["CapBnd"], "0000000000000000");
  EXPECT_EQ(r["NoNewPrivs"], 1);
  EXPECT_EQ(r["Seccomp"], 2);
  ASSERT_EQ(r["interfaces"].size(), 1u) << r["interfaces"].dump();
  EXPECT_EQ(r["interfaces"][0]["name"], "lo");
  for (const char* path : {"/bin/probe-was-here", "/probe-was-here"}) {
    run = RunJailed(CorralBinary(), {"run", "--json", "--rootfs", root_.path(), "--",
                                     "/bin/corral_probe", "write", path});
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_TRUE(run->probe.is_object()) << run->Describe();
    EXPECT_EQ(run->probe["ok"], false) << path << " writable: " << run->Describe();
  }
  ExpectTreeUnchanged();
}

TEST_F(RootfsTest, TmpIsWritableAndExtraMountsWork) {
  Result<JailRun> run =
      RunJailed(CorralBinary(), {"run", "--json", "--rootfs", root_.path(), "--", "/bin/sh", "-c",
                                 "echo scratch > /tmp/f && cat /tmp/f"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["stdout"], "scratch\n") << run->Describe();
  JailRun probe;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--rootfs", root_.path()}, {"fd-count"}, &probe));
  EXPECT_EQ(probe.probe["fd_count"], 3) << probe.Describe();
  ExpectTreeUnchanged();
}

TEST_F(RootfsTest, CommandMissingFromTheRootfsIs127) {
  // bash exists on the host, not in this rootfs.
  Result<JailRun> run =
      RunJailed(CorralBinary(), {"run", "--json", "--rootfs", root_.path(), "--", "/bin/bash"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->outcome["status"], "setup_failed") << run->Describe();
  EXPECT_EQ(run->outcome["setup_error"]["step"], "execve") << run->Describe();
  EXPECT_EQ(run->run.exit_code, 127) << run->Describe();
  ExpectTreeUnchanged();
}

}  // namespace
}  // namespace corral::test
