// A workspace reviewed before it reaches the host (runtime/sandboxes/workspace_overlay.h),
// through the corral binary: changes kept in the sandbox's upper layer, `corral diff`,
// `corral commit` (symlinks written as symlinks, never followed), `--discard`, and a commit
// killed at any moment leaving the old tree or the new one, never a mix. Root only; a state
// directory of its own (CORRAL_STATE_DIR).
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/files.h"
#include "tests/integration/overlay_fixture.h"

namespace corral::test {
namespace {

class WorkspaceOverlayTest : public OverlayTest {
 protected:
  // The workspace as a plain sandbox (same host ids: they follow the user-data directory)
  // leaves it after `script`; then a sandbox with the overlay over it.
  std::string OverlaidAfter(const std::string& script) {
    const std::string plain = Create({"--user-data", user_data_.path()});
    Bash(plain, "cd /mnt/user-data/workspace && " + script);
    Result<RunResult> rm = RunCorral({"rm", plain});
    EXPECT_TRUE(rm && rm->exit_code == 0);
    return Create({"--user-data", user_data_.path(), "--workspace-overlay"});
  }
  std::string Host(const std::string& path) {
    auto text = ReadFile(user_data_.Join("workspace/" + path));
    return text ? *text : "<missing>";
  }
  std::string Diff(const std::string& name) {
    Result<RunResult> r = RunCorral({"diff", name});
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    return r ? r->out : "";
  }
};

TEST_F(WorkspaceOverlayTest, ChangesStayInTheSandboxUntilCommitted) {
  const std::string name = OverlaidAfter(
      "echo k > keep.txt && echo old > edit.txt && echo x > gone.txt && mkdir olddir && "
      "echo a > olddir/a.txt && echo r > renamed_from.txt");
  Bash(name,
       "cd /mnt/user-data/workspace && echo new > edit.txt && rm gone.txt && echo n > added.txt "
       "&& mkdir newdir && echo d > newdir/f && ln -s /etc/passwd outlink && rm -r olddir && "
       "mv renamed_from.txt renamed_to.txt && echo k > keep.txt");
  // The host directory has not changed.
  EXPECT_EQ(Host("edit.txt"), "old\n");
  EXPECT_EQ(Host("gone.txt"), "x\n");
  EXPECT_EQ(Host("added.txt"), "<missing>");
  EXPECT_EQ(Diff(name),
            "A added.txt\nC edit.txt\nD gone.txt\nA newdir/\nA newdir/f\nD olddir/\n"
            "D olddir/a.txt\nA outlink\nD renamed_from.txt\nA renamed_to.txt\n");
  Result<RunResult> json = RunCorral({"diff", "--json", name});
  ASSERT_TRUE(json && json->exit_code == 0);
  auto j = nlohmann::json::parse(json->out);
  ASSERT_EQ(j.size(), 10u);
  EXPECT_EQ(j[1], (nlohmann::json{{"path", "edit.txt"}, {"kind", "changed"}, {"type", "f"}}));

  Result<RunResult> commit = RunCorral({"commit", name});
  ASSERT_TRUE(commit) << commit.error().message();
  ASSERT_EQ(commit->exit_code, 0) << commit->Describe();
  EXPECT_EQ(Host("edit.txt"), "new\n");
  EXPECT_EQ(Host("gone.txt"), "<missing>");
  EXPECT_EQ(Host("added.txt"), "n\n");
  EXPECT_EQ(Host("newdir/f"), "d\n");
  EXPECT_EQ(Host("olddir/a.txt"), "<missing>");
  EXPECT_EQ(Host("renamed_to.txt"), "r\n");
  EXPECT_EQ(Host("keep.txt"), "k\n");
  struct stat st;
  ASSERT_EQ(lstat(user_data_.Join("workspace/outlink").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "written as a symlink, not through it";
  char target[64] = {};
  ASSERT_GT(readlink(user_data_.Join("workspace/outlink").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/etc/passwd");
  // Nothing left to commit; the sandbox sees the same files as before.
  EXPECT_EQ(Diff(name), "");
  EXPECT_EQ(Bash(name, "cat /mnt/user-data/workspace/edit.txt; ls /mnt/user-data/"),
            "new\noutputs\nuploads\nworkspace\n");
}

TEST_F(WorkspaceOverlayTest, DiscardShowsTheHostDirectoryAgain) {
  const std::string name = OverlaidAfter("echo old > edit.txt && mkdir d && echo x > d/x");
  Bash(name,
       "cd /mnt/user-data/workspace && echo new > edit.txt && rm -r d && echo n > added.txt && "
       "mkdir d && echo y > d/y");
  EXPECT_EQ(Diff(name), "A added.txt\nD d/x\nA d/y\nC edit.txt\n");
  Result<RunResult> discard = RunCorral({"commit", "--discard", name});
  ASSERT_TRUE(discard) << discard.error().message();
  ASSERT_EQ(discard->exit_code, 0) << discard->Describe();
  EXPECT_EQ(Diff(name), "");
  EXPECT_EQ(Bash(name, "cd /mnt/user-data/workspace && cat edit.txt d/x && ls"),
            "old\nx\nd\nedit.txt\n");
  EXPECT_EQ(Host("edit.txt"), "old\n");
  EXPECT_EQ(Host("added.txt"), "<missing>");
  // The sandbox goes on working in its workspace.
  EXPECT_EQ(Bash(name, "cd /mnt/user-data/workspace && echo again > e2 && cat e2"), "again\n");
  EXPECT_EQ(Diff(name), "A e2\n");
}

// Many files changed, so that a commit is killed in the middle: once while it stages (the
// host directory must stay as it was) and once right after its journal was written (the
// commit must then be finished by the next corral that looks).
TEST_F(WorkspaceOverlayTest, AKilledCommitLeavesTheOldTreeOrTheNewOneNeverAMix) {
  const int kFiles = 1500;
  const std::string name = OverlaidAfter("mkdir many && for i in $(seq " + std::to_string(kFiles) +
                                         "); do echo v1 > many/$i; done");
  Bash(name, "for i in $(seq " + std::to_string(kFiles) +
                 "); do echo v2 > /mnt/user-data/workspace/many/$i; done");
  auto count = [&](const std::string& version) {
    int n = 0;
    for (int i = 1; i <= kFiles; ++i) n += Host("many/" + std::to_string(i)) == version + "\n";
    return n;
  };
  auto staging_exists = [&] {
    Result<RunResult> ls = RunProgram("/bin/sh", {"-c", "ls -A '" + user_data_.path() + "'"});
    return ls && ls->out.find(".corral-commit-") != std::string::npos;
  };
  const std::string journal = state_.path() + "/overlays/" + name + "/commit.journal";
  auto journal_exists = [&] {
    struct stat st;
    return ::stat(journal.c_str(), &st) == 0;
  };
  // Starts `corral commit`, kills it (SIGKILL) as soon as `ready` holds; false if it never
  // did (the commit ended first).
  auto kill_commit_when = [&](const std::function<bool()>& ready) {
    Result<pid_t> pid = StartProgram({CorralBinary(), "commit", name});
    EXPECT_TRUE(pid) << pid.error().message();
    if (!pid) return false;
    bool seen = false;
    for (int i = 0; i < 20000 && !seen; ++i) {
      seen = ready();
      if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
    return seen;
  };

  // 1. Killed while staging: no journal yet, so the next look undoes it.
  ASSERT_TRUE(kill_commit_when(staging_exists));
  const bool journal_written_first = journal_exists();
  EXPECT_EQ(Diff(name).empty(), journal_written_first);  // finishes or undoes the commit
  EXPECT_FALSE(staging_exists());
  if (journal_written_first) {
    EXPECT_EQ(count("v2"), kFiles);
  } else {
    EXPECT_EQ(count("v1"), kFiles) << "the host directory as it was";
  }
  ASSERT_TRUE(RunCorral({"resume", name}));  // a killed commit leaves the sandbox paused

  if (!journal_written_first) {
    // 2. Killed right after its journal: the commit point is passed, so it is finished.
    ASSERT_TRUE(kill_commit_when(journal_exists));
    const int old_files = count("v1"), new_files = count("v2");
    EXPECT_EQ(old_files + new_files, kFiles);
    // The resume finishes it before the sandbox may run.
    Result<RunResult> resume = RunCorral({"resume", name});
    ASSERT_TRUE(resume && resume->exit_code == 0) << (resume ? resume->Describe() : "");
    EXPECT_EQ(count("v2"), kFiles) << "before: " << old_files << " old, " << new_files << " new";
    EXPECT_FALSE(journal_exists());
    EXPECT_FALSE(staging_exists());
  }
  EXPECT_EQ(Diff(name), "");
  EXPECT_EQ(Bash(name, "ls -A /mnt/user-data && cat /mnt/user-data/workspace/many/7"),
            "outputs\nuploads\nworkspace\nv2\n");
}

TEST_F(WorkspaceOverlayTest, ItNeedsAPersistentSandboxWithAUserDataDirectory) {
  const std::string plain = Create();
  Result<RunResult> diff = RunCorral({"diff", plain});
  ASSERT_TRUE(diff) << diff.error().message();
  EXPECT_EQ(diff->exit_code, 125);
  EXPECT_NE(diff->err.find("has no workspace overlay"), std::string::npos) << diff->Describe();
  Result<RunResult> run = RunCorral({"run", "--pool", "off", "--user-data", user_data_.path(),
                                     "--workspace-overlay", "--", "true"});
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(run->exit_code, 125);
  EXPECT_NE(run->err.find("only a persistent sandbox keeps an overlay"), std::string::npos)
      << run->Describe();
  Result<RunResult> create = RunCorral({"create", "--workspace-overlay"});
  ASSERT_TRUE(create) << create.error().message();
  EXPECT_EQ(create->exit_code, 125);
  EXPECT_NE(create->err.find("--workspace-overlay: needs user_data_dir"), std::string::npos)
      << create->Describe();
}

}  // namespace
}  // namespace corral::test
