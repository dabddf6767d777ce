// `corral cp` (issue 15): files and directories between the host and a persistent sandbox,
// black-box through the corral binary, plus the host half's handling of hostile archives
// (runtime::ExtractUntrustedArchive) with archives written here byte by byte.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "runtime/sandboxes/copy.h"
#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

class CliCpTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    name_ = Create({});
  }
  void TearDown() override {
    for (const auto& name : created_) (void)RunCorral({"rm", name});
    JailTest::TearDown();
  }

  std::string Create(const std::vector<std::string>& flags) {
    static std::atomic<int> n{0};
    std::string name = "cp-" + std::to_string(getpid()) + "-" + std::to_string(++n);
    std::vector<std::string> args = {"create", "--name", name};
    args.insert(args.end(), flags.begin(), flags.end());
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    created_.push_back(name);
    return name;
  }

  // `sh -c script` in the sandbox; its stdout, with the exit code required to be 0.
  std::string Sh(const std::string& script, const std::string& sandbox = "") {
    Result<RunResult> r = RunCorral(
        {"exec", "--pool", "off", sandbox.empty() ? name_ : sandbox, "--", "sh", "-c", script});
    EXPECT_TRUE(r) << r.error().message();
    if (!r) return "";
    EXPECT_EQ(r->exit_code, 0) << r->Describe();
    return r->out;
  }

  RunResult Cp(const std::string& src, const std::string& dst, const RunOptions& options = {}) {
    Result<RunResult> r = RunCorral({"cp", src, dst}, options);
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : RunResult{};
  }

  void ExpectCpFails(const std::string& src, const std::string& dst, const std::string& needle) {
    RunResult r = Cp(src, dst);
    EXPECT_EQ(r.exit_code, 1) << r.Describe();
    EXPECT_NE(r.err.find(needle), std::string::npos) << needle << "\n" << r.Describe();
  }

  std::string name_;
  std::vector<std::string> created_;
  TempDir host_;
};

TEST_F(CliCpTest, AFileGoesInOwnedByTheSandboxUserAndComesBackOut) {
  ASSERT_TRUE(host_.WriteFile("secret.txt", "hello\n", 0600));
  RunResult in = Cp(host_.Join("secret.txt"), name_ + ":/tmp/");
  ASSERT_EQ(in.exit_code, 0) << in.Describe();
  // Like docker cp: what is copied in belongs to the user at the destination; the mode stays.
  EXPECT_EQ(Sh("stat -c '%u:%g %a' /tmp/secret.txt"), "1000:1000 600\n");
  Sh("echo more >> /tmp/secret.txt");
  // Under another name, into a directory that exists.
  in = Cp(host_.Join("secret.txt"), name_ + ":/tmp/renamed");
  ASSERT_EQ(in.exit_code, 0) << in.Describe();
  EXPECT_EQ(Sh("cat /tmp/renamed"), "hello\n");

  RunResult out = Cp(name_ + ":/tmp/secret.txt", host_.Join("back.txt"));
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  EXPECT_EQ(Slurp(host_.Join("back.txt")), "hello\nmore\n");
  struct stat st;
  ASSERT_EQ(::stat(host_.Join("back.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());  // the user who ran corral, as docker cp does
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // Into an existing directory: under its own name; an existing file is replaced.
  out = Cp(name_ + ":/tmp/secret.txt", host_.path());
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  EXPECT_EQ(Slurp(host_.Join("secret.txt")), "hello\nmore\n");
}

TEST_F(CliCpTest, DirectoriesGoInAndOut) {
  ASSERT_TRUE(host_.MakeDirs("d/sub"));
  ASSERT_TRUE(host_.WriteFile("d/a", "A"));
  ASSERT_TRUE(host_.WriteFile("d/sub/b", "B", 0755));
  ASSERT_EQ(Cp(host_.Join("d"), name_ + ":/tmp").exit_code, 0);
  EXPECT_EQ(Sh("cat /tmp/d/a /tmp/d/sub/b; stat -c '%u %a' /tmp/d/sub/b"), "AB1000 755\n");
  // The sandbox user can write in a directory copied in.
  Sh("echo c > /tmp/d/sub/c");
  ASSERT_EQ(Cp(host_.Join("d"), name_ + ":/tmp/new").exit_code, 0);  // DST missing: made
  EXPECT_EQ(Sh("cat /tmp/new/a"), "A");
  ASSERT_EQ(Cp(host_.Join("d/."), name_ + ":/tmp/contents").exit_code, 0);
  EXPECT_EQ(Sh("ls /tmp/contents"), "a\nsub\n");

  ASSERT_TRUE(host_.MakeDirs("out"));
  ASSERT_EQ(Cp(name_ + ":/tmp/d", host_.Join("out")).exit_code, 0);
  EXPECT_EQ(Slurp(host_.Join("out/d/sub/c")), "c\n");
  ASSERT_EQ(Cp(name_ + ":/tmp/d", host_.Join("renamed")).exit_code, 0);
  EXPECT_EQ(Slurp(host_.Join("renamed/a")), "A");
  // Contents into a directory that exists: merged, what was there stays.
  ASSERT_TRUE(host_.WriteFile("out/d/keep", "K"));
  ASSERT_EQ(Cp(name_ + ":/tmp/new/.", host_.Join("out/d")).exit_code, 0);
  EXPECT_EQ(Slurp(host_.Join("out/d/keep")), "K");
  EXPECT_EQ(Slurp(host_.Join("out/d/sub/b")), "B");
  // No staging directory is left behind.
  Result<RunResult> ls = RunProgram("/bin/ls", {"-A", host_.Join("out/d")});
  ASSERT_TRUE(ls);
  EXPECT_EQ(ls->out.find(".corral-cp"), std::string::npos) << ls->out;
}

TEST_F(CliCpTest, ErrorsNameThePath) {
  ASSERT_TRUE(host_.WriteFile("f", "F"));
  ExpectCpFails(host_.Join("f"), name_ + ":/nope/dir/f",
                name_ +
                    ":/nope/dir/f: destination directory /nope/dir does not exist in the "
                    "sandbox");
  ExpectCpFails(host_.Join("f"), name_ + ":/nope/", "destination directory /nope/ does not exist");
  ExpectCpFails(name_ + ":/nope", host_.path(),
                name_ + ":/nope: no such file or directory in the sandbox");
  ExpectCpFails(name_ + ":/etc/hostname", host_.Join("missing/x"),
                host_.Join("missing/x") + ": destination directory " + host_.Join("missing") +
                    " does not exist");
  ExpectCpFails(host_.Join("nope"), name_ + ":/tmp", host_.Join("nope") + ": No such file");
  ExpectCpFails(host_.Join("f"), "cp-no-such-sandbox:/tmp", "cp-no-such-sandbox");
  // The sandbox's side runs as the sandbox user in the jail: / is read-only there.
  RunResult r = Cp(host_.Join("f"), name_ + ":/");
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.Describe();
  r = Cp(host_.Join("f"), host_.Join("g"));
  EXPECT_EQ(r.exit_code, 125) << r.Describe();
  EXPECT_NE(r.err.find("one of SRC and DST must be NAME:PATH"), std::string::npos) << r.Describe();
}

// A symlink the sandbox made is copied as a symlink: nothing is written where it points.
TEST_F(CliCpTest, SymlinksFromTheSandboxAreCopiedNotFollowed) {
  std::string passwd = Slurp("/etc/passwd");
  Sh("ln -s /etc/passwd /tmp/l; mkdir -p /tmp/d/e; ln -s ../../x /tmp/d/e/up; "
     "echo data > /tmp/d/e/f");
  ASSERT_TRUE(host_.MakeDirs("out"));
  ASSERT_EQ(Cp(name_ + ":/tmp/l", host_.Join("out")).exit_code, 0);
  ASSERT_EQ(Cp(name_ + ":/tmp/d", host_.Join("out")).exit_code, 0);
  char target[256] = {};
  ASSERT_GT(::readlink(host_.Join("out/l").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/etc/passwd");
  std::memset(target, 0, sizeof target);
  ASSERT_GT(::readlink(host_.Join("out/d/e/up").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "../../x");
  EXPECT_EQ(Slurp("/etc/passwd"), passwd);
  EXPECT_FALSE(Exists(host_.Join("x")));
  // Copied again over itself: the symlinks are replaced, never written through.
  ASSERT_EQ(Cp(name_ + ":/tmp/d", host_.Join("out")).exit_code, 0);
  ASSERT_EQ(Cp(name_ + ":/tmp/l", host_.Join("out")).exit_code, 0);
  EXPECT_EQ(Slurp("/etc/passwd"), passwd);
  EXPECT_FALSE(Exists(host_.Join("x")));
}

// The sandbox writes the shared destination and plants a symlink where the copy will go.
TEST_F(CliCpTest, ASymlinkPlantedInASharedDestinationIsNotFollowed) {
  ASSERT_TRUE(host_.MakeDirs("shared"));
  ASSERT_TRUE(host_.MakeDirs("outside"));
  // Writable by the sandbox, whichever host id it has (runtime/run/identity.h).
  ASSERT_EQ(::chmod(host_.Join("shared").c_str(), 0777), 0);
  std::string sb = Create({"-v", host_.Join("shared") + ":/shared:rw"});
  Sh("ln -s " + host_.Join("outside") + " /shared/d; ln -s " + host_.Join("outside/f") +
         " /shared/f; mkdir -p /tmp/d; echo evil > /tmp/d/f; echo evil > /tmp/f",
     sb);
  ExpectCpFails(sb + ":/tmp/d", host_.Join("shared"), "cannot overwrite a non-directory");
  RunResult r = Cp(sb + ":/tmp/f", host_.Join("shared"));  // replaces the symlink itself
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_FALSE(Exists(host_.Join("outside/f")));
  EXPECT_EQ(Slurp(host_.Join("shared/f")), "evil\n");
  struct stat st;
  ASSERT_EQ(::lstat(host_.Join("shared/f").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(CliCpTest, DashIsATarStream) {
  Sh("mkdir -p /tmp/s && echo one > /tmp/s/1");
  RunResult out = Cp(name_ + ":/tmp/s", "-");
  ASSERT_EQ(out.exit_code, 0) << out.Describe();
  ASSERT_TRUE(host_.WriteFile("s.tar", out.out));
  Result<RunResult> list = RunProgram("/usr/bin/tar", {"-tf", host_.Join("s.tar")});
  ASSERT_TRUE(list);
  EXPECT_EQ(list->out, "s/\ns/1\n") << list->Describe();

  ASSERT_TRUE(host_.MakeDirs("t"));
  ASSERT_TRUE(host_.WriteFile("t/two", "2"));
  Result<RunResult> tar = RunProgram("/usr/bin/tar", {"-C", host_.path(), "-cf", "-", "t"});
  ASSERT_TRUE(tar && tar->exit_code == 0);
  RunOptions in;
  in.stdin_data = tar->out;
  RunResult r = Cp("-", name_ + ":/tmp", in);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(Sh("cat /tmp/t/two; stat -c %u /tmp/t/two"), "21000\n");
  in.stdin_data = tar->out;
  r = Cp("-", name_ + ":/tmp/none", in);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.err.find(":/tmp/none: no such directory in the sandbox"), std::string::npos)
      << r.Describe();
}

// The README's form: a directory's contents (its archive starts with "./") into an existing
// directory the sandbox user does not own (/tmp is root's, 1777 in the sandbox). tar alone
// would copy everything, then fail to chmod /tmp.
TEST_F(CliCpTest, ADirectorysContentsGoIntoTmpWithTheReadmesCommand) {
  ASSERT_TRUE(host_.MakeDirs("src/sub"));
  ASSERT_TRUE(host_.WriteFile("src/a", "A"));
  ASSERT_TRUE(host_.WriteFile("src/sub/b", "B"));
  ASSERT_TRUE(host_.WriteFile("src/.hidden", "H"));
  Sh("echo old > /tmp/a && mkdir -p /tmp/sub && echo kept > /tmp/sub/other");
  RunOptions shell;
  auto r = RunProgram("/bin/sh",
                      {"-c", "tar -C '" + host_.Join("src") + "' -cf - . | '" + CorralBinary() +
                                 "' cp - " + name_ + ":/tmp"},
                      shell);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 0) << r->Describe();
  EXPECT_EQ(r->err, "") << r->Describe();
  EXPECT_EQ(Sh("cat /tmp/a /tmp/sub/b /tmp/.hidden /tmp/sub/other; stat -c %a /tmp; "
               "ls -a /tmp | grep -c corral-cp || true"),
            "ABHkept\n1777\n0\n");
}

// A copy that does not fit: corral's own message naming the limit, and nothing left behind
// (no partial file, no temporary directory), whichever form the copy takes.
TEST_F(CliCpTest, ACopyThatOverflowsTheSandboxLeavesNothingAndNamesTheLimit) {
  std::string small = Create({"--tmp-size", "1m"});
  ASSERT_TRUE(host_.WriteFile("big", std::string(3 << 20, 'x')));
  ASSERT_TRUE(host_.WriteFile("fits", "small"));
  RunResult file = Cp(host_.Join("big"), small + ":/tmp/");
  EXPECT_EQ(file.exit_code, 1) << file.Describe();
  EXPECT_NE(file.err.find(small + ":/tmp/: no room left in the sandbox, so nothing was copied"),
            std::string::npos)
      << file.Describe();
  EXPECT_NE(file.err.find("limits.tmp_size"), std::string::npos) << file.Describe();
  Result<RunResult> tar =
      RunProgram("/usr/bin/tar", {"-C", host_.path(), "-cf", "-", "fits", "big"});
  ASSERT_TRUE(tar && tar->exit_code == 0);
  RunOptions in;
  in.stdin_data = tar->out;
  RunResult stream = Cp("-", small + ":/tmp", in);
  EXPECT_EQ(stream.exit_code, 1) << stream.Describe();
  EXPECT_NE(stream.err.find("no room left in the sandbox"), std::string::npos) << stream.Describe();
  EXPECT_EQ(Sh("ls -A /tmp; echo end", small), "end\n") << "nothing partial is left";
}

// --- Hostile archives, as a tampered tar in a sandbox could write them -------------------

void AddEntry(std::string* tar, const std::string& name, char type, unsigned mode,
              const std::string& content = "", const std::string& link = "") {
  char h[512] = {};
  std::snprintf(h, 100, "%s", name.c_str());
  std::snprintf(h + 100, 8, "%07o", mode);
  std::snprintf(h + 108, 8, "%07o", 1000);
  std::snprintf(h + 116, 8, "%07o", 1000);
  std::snprintf(h + 124, 12, "%011o", static_cast<unsigned>(content.size()));
  std::snprintf(h + 136, 12, "%011o", 0u);
  std::memset(h + 148, ' ', 8);
  h[156] = type;
  std::snprintf(h + 157, 100, "%s", link.c_str());
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  if (type == '3') {
    std::snprintf(h + 329, 8, "%07o", 1);  // /dev/mem's numbers
    std::snprintf(h + 337, 8, "%07o", 1);
  }
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);
  tar->append(h, 512);
  tar->append(content);
  tar->append((512 - content.size() % 512) % 512, '\0');
}

class HostileArchiveTest : public LeakCheckedTest {
 protected:
  void SetUp() override {
    RequireRoot();
    if (IsSkipped()) return;
    ASSERT_TRUE(dir_.MakeDirs("dst"));
    ASSERT_TRUE(dir_.MakeDirs("outside"));
  }

  // Extracts `tar` (plus its end blocks) as the copy of an entry named "x" into dst/.
  Status Extract(std::string tar) {
    tar.append(1024, '\0');
    std::string path = dir_.Join("archive.tar");
    EXPECT_TRUE(dir_.WriteFile("archive.tar", tar));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    runtime::CopyPath source{"/tmp", "x", false, false};
    Status s = runtime::ExtractUntrustedArchive(fd, source, dir_.Join("dst"));
    ::close(fd);
    return s;
  }

  void ExpectNothingLanded() {
    Result<RunResult> ls = RunProgram("/bin/ls", {"-A", dir_.Join("dst"), dir_.Join("outside")});
    ASSERT_TRUE(ls);
    EXPECT_EQ(ls->out, dir_.Join("dst") + ":\n\n" + dir_.Join("outside") + ":\n") << ls->out;
  }

  TempDir dir_;
};

TEST_F(HostileArchiveTest, DotDotMembersAreRefused) {
  std::string tar;
  AddEntry(&tar, "x/", '5', 0755);
  AddEntry(&tar, "x/../../outside/f", '0', 0644, "evil");
  EXPECT_FALSE(Extract(tar));
  ExpectNothingLanded();
}

TEST_F(HostileArchiveTest, AbsoluteNamesAreRefused) {
  std::string tar;
  AddEntry(&tar, dir_.Join("outside/f"), '0', 0644, "evil");
  Status s = Extract(tar);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("other entries than 'x'"), std::string::npos)
      << s.error().message();
  ExpectNothingLanded();
}

TEST_F(HostileArchiveTest, WritesThroughASymlinkOfTheArchiveAreRefused) {
  for (const std::string& link : {dir_.Join("outside"), std::string("../../outside")}) {
    std::string tar;
    AddEntry(&tar, "x/", '5', 0755);
    AddEntry(&tar, "x/l", '2', 0777, "", link);
    AddEntry(&tar, "x/l/f", '0', 0644, "evil");
    EXPECT_FALSE(Extract(tar)) << link;
    ExpectNothingLanded();
  }
}

TEST_F(HostileArchiveTest, HardLinksOutAndDeviceNodesAreRefused) {
  struct stat before;
  ASSERT_EQ(::stat("/etc/passwd", &before), 0);
  std::string tar;
  AddEntry(&tar, "x/", '5', 0755);
  AddEntry(&tar, "x/h", '1', 0644, "", "/etc/passwd");
  EXPECT_FALSE(Extract(tar));
  ExpectNothingLanded();
  struct stat after;
  ASSERT_EQ(::stat("/etc/passwd", &after), 0);
  EXPECT_EQ(after.st_nlink, before.st_nlink);

  tar.clear();
  AddEntry(&tar, "x/", '5', 0755);
  AddEntry(&tar, "x/mem", '3', 0666);
  EXPECT_FALSE(Extract(tar));
  ExpectNothingLanded();
}

TEST_F(HostileArchiveTest, SetUidBitsAreCleared) {
  std::string tar;
  AddEntry(&tar, "x/", '5', 02755);
  AddEntry(&tar, "x/run", '0', 04755, "#!/bin/sh\n");
  ASSERT_TRUE(Extract(tar));
  struct stat st;
  ASSERT_EQ(::stat(dir_.Join("dst/x/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, 0u);
  ASSERT_EQ(::stat(dir_.Join("dst/x").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

}  // namespace
}  // namespace corral::test
