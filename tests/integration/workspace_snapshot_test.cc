// Snapshots and forks of an overlaid workspace (runtime/sandboxes/workspace_snapshot.h),
// through the corral binary: `corral snapshot`, `create --from`, `fork`, a fork's writes
// and its parent's invisible to each other, diff and commit over snapshot layers, the
// store's listing, removal and budget, a snapshot refused while a workspace file is open
// for writing, and a snapshot killed at any moment leaving the old state or the new one.
// Root only; a state directory of its own (CORRAL_STATE_DIR).
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/files.h"
#include "tests/integration/overlay_fixture.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

class WorkspaceSnapshotTest : public OverlayTest {
 protected:
  std::string Overlaid() {
    return Create({"--user-data", user_data_.path(), "--workspace-overlay"});
  }
  // A sandbox made by `corral fork` or `create --from`, removed after the test.
  std::string Made(const std::vector<std::string>& args) {
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    if (!r || r->exit_code != 0) return "";
    std::string name = r->out.substr(0, r->out.find('\n'));
    created_.push_back(name);
    return name;
  }
  Result<RunResult> Corral(const std::vector<std::string>& args) { return RunCorral(args); }
  std::string Ok(const std::vector<std::string>& args) {
    Result<RunResult> r = RunCorral(args);
    EXPECT_TRUE(r && r->exit_code == 0) << (r ? r->Describe() : r.error().message());
    return r ? r->out : "";
  }
  // exit code 125 and `what` in stderr.
  void Refused(const std::vector<std::string>& args, const std::string& what) {
    Result<RunResult> r = RunCorral(args);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exit_code, 125) << r->Describe();
    EXPECT_NE(r->err.find(what), std::string::npos) << r->Describe();
  }
  std::string Workspace(const std::string& name) {
    return Bash(name,
                "cd /mnt/user-data/workspace && for f in $(find . -type f | sort); do "
                "echo \"$f=$(cat $f)\"; done");
  }
  std::vector<std::string> Entries(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(WorkspaceSnapshotTest, AForkAndItsParentNeverSeeEachOthersWrites) {
  const std::string parent = Overlaid();
  Bash(parent,
       "cd /mnt/user-data/workspace && echo v1 > shared.txt && mkdir d && echo x > d/x && "
       "mkdir /tmp/cache && echo kept > /tmp/cache/note");
  EXPECT_EQ(Ok({"snapshot", parent, "base"}), "base\n");
  // The parent goes on over the snapshot: its files are there, its writes land above.
  Bash(parent, "cd /mnt/user-data/workspace && echo parent > shared.txt && echo p > p.txt");
  const std::string fork = NewName();
  EXPECT_EQ(Made({"fork", parent, fork, "--tag", "at-fork"}), fork);
  const std::string from = NewName();
  EXPECT_EQ(Made({"create", "--name", from, "--from", "base"}), from);

  EXPECT_EQ(Workspace(fork), "./d/x=x\n./p.txt=p\n./shared.txt=parent\n");
  EXPECT_EQ(Workspace(from), "./d/x=x\n./shared.txt=v1\n") << "as it was at the snapshot";
  // /tmp, a tmpfs, is copied: what it held at the snapshot, not what came after.
  Bash(parent, "echo after > /tmp/after");
  EXPECT_EQ(Bash(from, "cat /tmp/cache/note; stat -c %U /tmp/cache; ls /tmp"),
            "kept\nsandbox\ncache\n");
  Bash(fork, "cd /mnt/user-data/workspace && echo fork > shared.txt && rm d/x && echo f > f.txt");
  Bash(parent, "cd /mnt/user-data/workspace && echo later > later.txt");
  EXPECT_EQ(Workspace(parent), "./d/x=x\n./later.txt=later\n./p.txt=p\n./shared.txt=parent\n");
  EXPECT_EQ(Workspace(fork), "./f.txt=f\n./p.txt=p\n./shared.txt=fork\n");
  EXPECT_EQ(Workspace(from), "./d/x=x\n./shared.txt=v1\n");

  // diff sees every layer: the changes since create, against the host directory.
  EXPECT_EQ(Ok({"diff", parent}), "A d/\nA d/x\nA later.txt\nA p.txt\nA shared.txt\n");
  EXPECT_EQ(Ok({"diff", fork}), "A d/\nA f.txt\nA p.txt\nA shared.txt\n");
  // A commit from the fork writes its view to the host directory; the parent is unchanged.
  Ok({"commit", fork});
  EXPECT_EQ(*ReadFile(user_data_.Join("workspace/shared.txt")), "fork\n");
  EXPECT_FALSE(std::filesystem::exists(user_data_.Join("workspace/d/x")));
  EXPECT_EQ(Ok({"diff", fork}), "");
  EXPECT_EQ(Bash(parent, "cat /mnt/user-data/workspace/shared.txt"), "parent\n");

  // Both stand on the snapshots: listed with their users, not removable while used.
  auto ls = nlohmann::json::parse(Ok({"snapshot", "ls", "--json"}));
  ASSERT_EQ(ls["snapshots"].size(), 2u) << ls.dump();
  EXPECT_EQ(ls["snapshots"][0]["tag"], "at-fork");
  EXPECT_EQ(ls["snapshots"][0]["depth"], 2);
  EXPECT_EQ(ls["snapshots"][1]["tag"], "base");
  EXPECT_EQ(ls["snapshots"][1]["sandbox"], parent);
  EXPECT_EQ(ls["snapshots"][1]["entries"], 3) << "shared.txt, d, d/x";
  EXPECT_GT(ls["snapshots"][1]["tmp_bytes"].get<int64_t>(), 0);
  EXPECT_GT(ls["used_bytes"].get<int64_t>(), 0);
  Refused({"snapshot", "rm", "base"}, "is in use");
  for (const std::string& name : {parent, fork, from}) Ok({"rm", name});
  EXPECT_EQ(Ok({"snapshot", "rm", "base", "at-fork"}), "at-fork\nbase\n");
  EXPECT_EQ(Entries(state_.path() + "/snapshots"), std::vector<std::string>{".lock"});
  EXPECT_EQ(Entries(state_.path() + "/overlays"), std::vector<std::string>{});
}

TEST_F(WorkspaceSnapshotTest, RefusalsChangeNothing) {
  const std::string name = Overlaid();
  Bash(name, "head -c 2000000 /dev/zero > /mnt/user-data/workspace/big");
  // Over budget: refused, naming the figures.
  Ok({"snapshot", "budget", "1M"});
  Refused({"snapshot", name, "big"}, "of their budget of 1 MiB");
  Ok({"snapshot", "budget", "10G"});
  // A workspace file open for writing: refused, the sandbox as it was.
  Bash(name,
       "cd /mnt/user-data/workspace && (nohup sh -c 'echo $$ > /tmp/busy.pid; exec "
       "sleep 600 3>>log' >/dev/null 2>&1 &) && sleep 0.2");
  Refused({"snapshot", name, "busy"}, "open for writing");
  EXPECT_EQ(Ok({"diff", name}), "A big\nA log\n");
  EXPECT_EQ(Bash(name,
                 "echo more >> /mnt/user-data/workspace/log && wc -c < "
                 "/mnt/user-data/workspace/big"),
            "2000000\n");
  EXPECT_EQ(Entries(state_.path() + "/snapshots"), (std::vector<std::string>{".lock", "budget"}));
  EXPECT_EQ(Entries(state_.path() + "/overlays/" + name),
            (std::vector<std::string>{"upper", "work"}));
  // Tags, sources and directories that cannot be.
  Refused({"snapshot", name, "../x"}, "snapshot tag '../x'");
  Refused({"snapshot", Create(), "t"}, "has no workspace overlay");
  Refused({"create", "--from", "missing"}, "no snapshot 'missing'");
  Bash(name, "kill $(cat /tmp/busy.pid)");
  Ok({"snapshot", name, "t"});
  Refused({"snapshot", name, "t"}, "snapshot t exists");
  TempDir other;
  Refused({"create", "--from", "t", "--user-data", other.path()}, "leave --user-data out");
}

TEST_F(WorkspaceSnapshotTest, AKilledSnapshotLeavesTheOldStateOrTheNewOne) {
  const std::string name = Overlaid();
  // Many entries, so that the snapshot's walks take a while.
  Bash(name,
       "mkdir /mnt/user-data/workspace/many && cd /mnt/user-data/workspace/many && "
       "for i in $(seq 3000); do echo $i > $i; done");
  const std::string listing = Bash(name, "ls /mnt/user-data/workspace/many | wc -l");
  ASSERT_EQ(listing, "3000\n");
  const std::string partial_of = state_.path() + "/snapshots/";
  int kept_count = 0, finished_count = 0;
  for (int round = 0; round < 4; ++round) {
    const std::string tag = "k" + std::to_string(round);
    Result<pid_t> pid = StartProgram({CorralBinary(), "snapshot", name, tag});
    ASSERT_TRUE(pid) << pid.error().message();
    // Killed as soon as its partial directory shows, a little later in each round.
    bool seen = false;
    for (int i = 0; i < 50000 && !seen; ++i) {
      struct stat st;
      seen = ::stat((partial_of + tag + ".partial").c_str(), &st) == 0 ||
             ::stat((partial_of + tag).c_str(), &st) == 0;
      if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * round));
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
    const bool cut_short = std::filesystem::exists(partial_of + tag + ".partial");
    // The resume finishes or undoes it before the sandbox runs again.
    Ok({"resume", name});
    const bool kept = std::filesystem::exists(partial_of + tag + "/snapshot.json");
    EXPECT_FALSE(std::filesystem::exists(partial_of + tag + ".partial")) << "round " << round;
    // Either way: the files as they were, one upper layer, writes that work.
    EXPECT_EQ(Bash(name,
                   "ls /mnt/user-data/workspace/many | wc -l; cat "
                   "/mnt/user-data/workspace/many/77"),
              "3000\n77\n")
        << "round " << round;
    std::vector<std::string> uppers;
    for (const std::string& e : Entries(state_.path() + "/overlays/" + name)) {
      if (e.rfind("upper", 0) == 0) uppers.push_back(e);
    }
    EXPECT_EQ(uppers.size(), 1u) << "round " << round;
    Bash(name, "echo r" + std::to_string(round) + " > /mnt/user-data/workspace/r");
    kept_count += kept;
    finished_count += kept && cut_short;
    if (kept) {
      // The new state: the snapshot has the files, not what was written after it.
      const std::string from = Made({"create", "--name", NewName(), "--from", tag});
      EXPECT_EQ(
          Bash(from,
               "ls /mnt/user-data/workspace/many | wc -l; cat "
               "/mnt/user-data/workspace/r 2>/dev/null || echo none"),
          "3000\n" + (round == 0 ? std::string("none") : "r" + std::to_string(round - 1)) + "\n")
          << "round " << round;
    }
  }
  EXPECT_NE(Ok({"diff", name}).find("A many/2999\n"), std::string::npos);
  std::printf("snapshots kept after the kill: %d of 4 (%d of them finished by the resume)\n",
              kept_count, finished_count);
}

}  // namespace
}  // namespace corral::test
