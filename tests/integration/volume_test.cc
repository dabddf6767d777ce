// Named volumes end to end through the corral binary (runtime/volumes/): made, mounted by
// sandboxes and runs, kept across removals, shared read-only or written by one, sized
// (an ext4 image through a loop device), listed, inspected and removed. Root only; every
// test has a state directory of its own (CORRAL_STATE_DIR), so the host's volumes are
// never touched.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "base/files.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class VolumeTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ::setenv("CORRAL_STATE_DIR", state_.path().c_str(), 1);
  }
  void TearDown() override {
    SandboxTest::TearDown();  // the sandboxes first: they hold the volumes' mounts
    ::unsetenv("CORRAL_STATE_DIR");
  }

  void Ok(const std::vector<std::string>& args) {
    Result<RunResult> r = RunCorral(args);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->exit_code, 0) << r->Describe();
  }
  // The run refused with exit 125 and `message` in its stderr.
  void Refused(const std::vector<std::string>& args, const std::string& message) {
    Result<RunResult> r = RunCorral(args);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exit_code, 125) << r->Describe();
    EXPECT_NE(r->err.find(message), std::string::npos) << r->Describe();
  }
  nlohmann::json Inspect(const std::string& volume) {
    Result<RunResult> r = RunCorral({"volume", "inspect", volume});
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    if (!r || r->exit_code != 0) return nlohmann::json();
    auto j = nlohmann::json::parse(r->out, nullptr, false);
    return j.is_array() && j.size() == 1 ? j[0] : nlohmann::json();
  }
  // Loop devices whose backing file is under this test's state directory.
  std::vector<std::string> LoopDevicesHere() {
    std::vector<std::string> out;
    DIR* dir = opendir("/sys/block");
    if (dir == nullptr) return out;
    while (dirent* e = readdir(dir)) {
      auto backing = ReadFile(std::string("/sys/block/") + e->d_name + "/loop/backing_file");
      if (backing && backing->find(state_.path()) != std::string::npos) out.push_back(e->d_name);
    }
    closedir(dir);
    return out;
  }

  TempDir state_;
};

TEST_F(VolumeTest, FilesOutliveTheSandboxAndEverySandboxWritesThemAsItsOwnUser) {
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "create", "work"}));
  const std::string first = Create({"--volume", "work:/data"});
  EXPECT_EQ(Bash(first, "echo one > /data/f && mkdir /data/d && stat -c %u:%g /data/f"),
            "1000:1000\n");
  ASSERT_NO_FATAL_FAILURE(Ok({"rm", first}));

  // On the host the files are the volume's ids, not the first sandbox's.
  const nlohmann::json info = Inspect("work");
  ASSERT_TRUE(info.is_object());
  struct stat st;
  ASSERT_EQ(stat((info["path"].get<std::string>() + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, info["uid"].get<uint32_t>());
  EXPECT_EQ(st.st_gid, info["gid"].get<uint32_t>());

  // A sandbox of another name has another host id (the reserved identity's slot), and
  // still reads, changes and removes what the first one wrote.
  const std::string second = Create({"--volume", "work:/data"});
  EXPECT_EQ(Bash(second,
                 "cat /data/f && echo two >> /data/f && rmdir /data/d && touch /data/g && "
                 "stat -c %u /data/f /data/g && ls /data"),
            "one\n1000\n1000\nf\ng\n");
  auto text = ReadFile(info["path"].get<std::string>() + "/f");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "one\ntwo\n");
}

TEST_F(VolumeTest, SharedReadOnlyByManyOrWrittenByOne) {
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "create", "shared"}));
  const std::string writer = Create({"--volume", "shared:/s"});
  Bash(writer, "echo data > /s/x");
  // A second mount while one writes: refused, read-only or not, naming the writer.
  Refused(
      {"create", "--volume", "shared:/s:ro"},
      "volume shared cannot be mounted read-only: it is mounted by sandbox " + writer + " (rw)");
  Refused({"run", "--pool", "off", "--volume", "shared:/s", "--", "true"},
          "it is mounted by sandbox " + writer + " (rw)");
  ASSERT_NO_FATAL_FAILURE(Ok({"rm", writer}));

  const std::string reader1 = Create({"--volume", "shared:/s:ro"});
  const std::string reader2 = Create({"--volume", "shared:/s:ro"});
  EXPECT_EQ(Bash(reader2, "cat /s/x"), "data\n");
  Result<RunResult> write = Exec(reader1, {"sh", "-c", "echo no > /s/x"});
  ASSERT_TRUE(write) << write.error().message();
  EXPECT_NE(write->exit_code, 0) << write->Describe();
  EXPECT_NE(write->err.find("Read-only file system"), std::string::npos) << write->Describe();
  // A run may read beside them, not write.
  Result<RunResult> reads =
      RunCorral({"run", "--pool", "off", "--volume", "shared:/s:ro", "--", "cat", "/s/x"});
  ASSERT_TRUE(reads) << reads.error().message();
  EXPECT_EQ(reads->out, "data\n") << reads->Describe();
  Refused({"create", "--volume", "shared:/s"},
          "sandbox " + reader1 + " (ro), sandbox " + reader2 + " (ro)");
}

TEST_F(VolumeTest, RmIsRefusedWhileMountedAndForceRemovesItAnyway) {
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "create", "busy"}));
  const std::string user = Create({"--volume", "busy:/b"});
  Refused({"volume", "rm", "busy"}, "volume busy is in use by sandbox " + user + " (rw)");
  Result<RunResult> ls = RunCorral({"volume", "ls", "-q"});
  ASSERT_TRUE(ls && ls->exit_code == 0);
  EXPECT_EQ(ls->out, "busy\n");
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "rm", "-f", "busy"}));
  ls = RunCorral({"volume", "ls", "-q"});
  ASSERT_TRUE(ls && ls->exit_code == 0);
  EXPECT_EQ(ls->out, "");
  // The sandbox goes on; its mount shows a directory that is gone.
  EXPECT_EQ(Bash(user, "echo alive"), "alive\n");
  Refused({"volume", "rm", "busy"}, "no volume named busy");
}

TEST_F(VolumeTest, LsAndInspectShowKindUseAndUsers) {
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "create", "stats"}));
  const std::string user = Create({"--volume", "stats:/v"});
  Bash(user, "head -c 1048576 /dev/zero > /v/a && mkdir /v/d && echo x > /v/d/b");
  const nlohmann::json info = Inspect("stats");
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["kind"], "directory");
  EXPECT_TRUE(info["size_bytes"].is_null());
  EXPECT_GE(info["used_bytes"].get<int64_t>(), 1048576) << info.dump();
  EXPECT_EQ(info["files"], 3) << info.dump();
  EXPECT_EQ(info["mounted_by"], nlohmann::json::array({"sandbox " + user + " (rw)"}));
  Result<RunResult> ls = RunCorral({"volume", "ls"});
  ASSERT_TRUE(ls && ls->exit_code == 0);
  EXPECT_NE(ls->out.find("NAME"), std::string::npos) << ls->out;
  EXPECT_NE(ls->out.find("stats"), std::string::npos) << ls->out;
  EXPECT_NE(ls->out.find("sandbox " + user + " (rw)"), std::string::npos) << ls->out;
  Refused({"volume", "inspect", "nope"}, "no volume named nope");
  Refused({"volume", "create", "stats"}, "volume stats exists");
  Refused({"volume", "create", "a/b"}, "volume name 'a/b': must be 1 to 64 letters");
}

TEST_F(VolumeTest, ASizedVolumeFillsUpWithENOSPCAndNothingElseBreaks) {
  ASSERT_NO_FATAL_FAILURE(Ok({"volume", "create", "--size", "24M", "small"}));
  const nlohmann::json info = Inspect("small");
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(info["kind"], "image");
  EXPECT_EQ(info["size_bytes"], 24 * 1024 * 1024);
  const std::string user = Create({"--volume", "small:/q"});
  EXPECT_EQ(Bash(user, "stat -c %u /q && echo keep > /q/keep && cat /q/keep"), "1000\nkeep\n");
  Result<RunResult> fill = Exec(user, {"sh", "-c", "head -c 64M /dev/zero > /q/big"});
  ASSERT_TRUE(fill) << fill.error().message();
  EXPECT_NE(fill->exit_code, 0) << fill->Describe();
  EXPECT_NE(fill->err.find("No space left on device"), std::string::npos) << fill->Describe();
  // The sandbox, its other files and the volume's earlier files are fine.
  EXPECT_EQ(Bash(user, "rm /q/big && cat /q/keep && echo fine > /tmp/t && cat /tmp/t"),
            "keep\nfine\n");
  EXPECT_EQ(LoopDevicesHere().size(), 1u);
  ASSERT_NO_FATAL_FAILURE(Ok({"rm", user}));
  created_.clear();
  // The loop device went with the sandbox's mount namespace; the files stayed in the image.
  EXPECT_TRUE(LoopDevicesHere().empty());
  Result<RunResult> again =
      RunCorral({"run", "--pool", "off", "--volume", "small:/q:ro", "--", "cat", "/q/keep"});
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->out, "keep\n") << again->Describe();
  EXPECT_TRUE(LoopDevicesHere().empty());
  Refused({"volume", "create", "--size", "1M", "tiny"}, "--size must be at least 16MiB");
}

TEST_F(VolumeTest, DashVWithANameMakesTheVolumeAsDockerDoes) {
  Result<RunResult> write =
      RunCorral({"run", "--pool", "off", "-v", "made:/m", "--", "sh", "-c", "echo hi > /m/x"});
  ASSERT_TRUE(write) << write.error().message();
  ASSERT_EQ(write->exit_code, 0) << write->Describe();
  Result<RunResult> read =
      RunCorral({"run", "--pool", "off", "-v", "made:/m:ro", "--", "cat", "/m/x"});
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->out, "hi\n") << read->Describe();
  Refused({"run", "--pool", "off", "-v", "src/x:/x", "--", "true"},
          "-v src/x:/x: 'src/x' is no volume name");
  Refused({"run", "--pool", "off", "--volume", "made", "--", "true"},
          "expected NAME:CONTAINER[:ro|rw]");
  Refused({"create", "--volume", "made:/a", "--volume", "made:/b"}, "volume made is mounted twice");
  // A mount that is refused makes no volume.
  Refused({"run", "--pool", "off", "--volume", "never:/proc", "--", "true"},
          "--volume never:/proc: container path is reserved");
  Refused({"run", "--pool", "off", "--volume", "never:rel", "--", "true"},
          "--volume never:rel: container path must be an absolute path");
  Refused({"run", "--pool", "off", "--mode", "container", "--volume", "made:/m", "--", "true"},
          "volumes are mounted in mode process only");
  Result<RunResult> ls = RunCorral({"volume", "ls", "-q"});
  ASSERT_TRUE(ls && ls->exit_code == 0);
  EXPECT_EQ(ls->out, "made\n");
}

// As anyone else a volume lives in the caller's own state directory, its files are the
// caller's, and the jail's user (mapped to the caller) writes them: no root, no mapping.
TEST_F(VolumeTest, ARootlessCallersVolumeIsItsOwn) {
  ASSERT_NO_FATAL_FAILURE(UseTestUser());
  TempDir state;
  ASSERT_NO_FATAL_FAILURE(GiveToTestUser(state));
  RunOptions options;
  options.env = {"CORRAL_STATE_DIR=" + state.path()};  // before the test's own
  Result<RunResult> write = RunCorralAsCaller({"run", "--pool", "off", "--volume", "mine:/v", "--",
                                               "sh", "-c", "echo hi > /v/f && stat -c %u /v/f"},
                                              options);
  ASSERT_TRUE(write) << write.error().message();
  ASSERT_EQ(write->exit_code, 0) << write->Describe();
  EXPECT_EQ(write->out, "1000\n");
  struct stat st;
  ASSERT_EQ(stat(state.Join("volumes/mine/data/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, test_user().uid);
  Result<RunResult> read = RunCorralAsCaller(
      {"run", "--pool", "off", "--volume", "mine:/v:ro", "--", "cat", "/v/f"}, options);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->out, "hi\n") << read->Describe();
}

}  // namespace
}  // namespace corral::test
