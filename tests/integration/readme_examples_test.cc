// The examples of the README and of docs/sandboxes.md, run as written. Each line below must
// appear verbatim in its page (an edit there fails here until this file follows it), and
// runs with bash in a scratch directory, with the build's corral first on PATH and a runtime
// directory of its own (so the sandbox `t1` of the examples meets no other). Root only;
// leak-checked.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/jail_test.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

std::string Page(const std::string& page) {
  std::ifstream in(SourceDir() + "/" + page);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Example {
  const char* line;    // as in README.md
  int exit_code;       // what it exits with
  const char* output;  // found in its stdout ("" : anything)
};

class ReadmeExamplesTest : public JailTest {
 protected:
  void TearDown() override {
    // What an example made (or one that failed half-way left).
    if (!IsSkipped()) (void)Shell("corral rm -f t1 t2 t3 t4 t5");
    JailTest::TearDown();
  }

  // Runs `line` as README.md has it, from dir_.
  RunResult Shell(const std::string& line) {
    const std::string bin = CorralBinary().substr(0, CorralBinary().rfind('/'));
    const std::string script = "cd '" + dir_.path() + "' && export PATH='" + bin +
                               "':\"$PATH\" CORRAL_RUNTIME_DIR='" + dir_.Join("run") +
                               "' CORRAL_STATE_DIR='" + dir_.Join("state") + "' && " + line;
    RunOptions options;
    options.timeout = std::chrono::milliseconds(120000);
    auto r = RunProgram("/bin/bash", {"-c", script}, options);
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : RunResult{};
  }

  void RunAll(const std::vector<Example>& examples, const std::string& page = "README.md") {
    const std::string text = Page(page);
    for (const Example& e : examples) {
      SCOPED_TRACE(e.line);
      ASSERT_NE(text.find(e.line), std::string::npos) << "no longer in " << page;
      RunResult r = Shell(e.line);
      EXPECT_EQ(r.exit_code, e.exit_code) << r.Describe();
      EXPECT_NE(r.out.find(e.output), std::string::npos) << r.Describe();
    }
  }

  TempDir dir_;
};

TEST_F(ReadmeExamplesTest, CommandOnesRun) {
  RunAll(
      {{"corral run -- bash -c 'id; hostname; ls /; cat /proc/1/cmdline; echo; ip link "
        "2>/dev/null || cat /proc/net/dev'",
        0, "uid=1000(sandbox) gid=1000(sandbox)"}});
}

TEST_F(ReadmeExamplesTest, AFewMore) {
  RunAll({
      {"corral run --memory 256m --timeout 10 -- python3 -c 'print(1)'", 0, "1\n"},
      {"mkdir -p data out && corral run -v ./data:/data -v ./out:/out:rw -- ls /data /out", 0,
       "/data:\n\n/out:\n"},
      {"corral run --json -- sh -c 'echo hi; exit 3'", 3, "\"stdout\":\"hi\\n\""},
  });
  // `corral run -it -- bash` needs a terminal: the exec -it tests cover it.
  EXPECT_NE(Page("README.md").find("corral run -it -- bash"), std::string::npos);
}

// A dev server started by one exec answers the next (network none: the sandbox's own
// loopback), and the exec that started it returns at once.
TEST_F(ReadmeExamplesTest, APersistentSandbox) {
  RunAll({
      {"mkdir -p ./t1 && corral create --name t1 --user-data ./t1 --idle-timeout 3600", 0, "t1"},
      {"corral exec t1 -- bash -c 'cd /tmp && nohup python3 -m http.server 8000 >/tmp/log 2>&1 &'",
       0, ""},
      {"corral exec t1 -- curl -s --retry 10 --retry-connrefused --retry-delay 1 localhost:8000/",
       0, "Directory listing for /"},
      {"corral pause t1                  # every process frozen: memory, files, sockets kept, no "
       "CPU",
       0, "t1"},
      {"corral resume t1", 0, "t1"},
      {"corral ps", 0, "t1"},
      {"corral rm t1", 0, ""},
  });
}

// docs/lifecycle.md's first example: a paused sandbox refuses an exec, and after the resume
// its background server answers on the same socket.
TEST_F(ReadmeExamplesTest, TheLifecyclePage) {
  const std::string page = "docs/lifecycle.md";
  RunAll(
      {
          {"corral create --name t1", 0, "t1"},
          {"corral exec t1 -- bash -c 'nohup python3 -m http.server 8000 >/tmp/log 2>&1 &'", 0, ""},
          {"corral pause t1          # prints t1 once every process is frozen", 0, "t1"},
          {"corral ps                # STATE: paused", 0, "paused"},
          {"corral exec t1 -- true   # refused: sandbox 't1' is paused; `corral resume t1` first "
           "(exit 125)",
           125, ""},
          {"corral resume t1         # the server answers again, same pid, same socket", 0, "t1"},
      },
      page);
  // (The server may still have been starting when it was frozen: a few tries.)
  RunResult answer = Shell(
      "corral exec t1 -- sh -c 'for i in $(seq 50); do python3 -c \"import urllib.request as u; "
      "print(u.urlopen(\\\"http://127.0.0.1:8000/\\\").status)\" 2>/dev/null && exit 0; "
      "sleep 0.1; done; exit 7'");
  EXPECT_EQ(answer.exit_code, 0) << answer.Describe();
  EXPECT_NE(answer.out.find("200"), std::string::npos) << answer.Describe();
}

// docs/lifecycle.md's volume example: files that outlive their sandbox, a sized volume,
// and a removal refused while a sandbox mounts the volume.
TEST_F(ReadmeExamplesTest, TheLifecyclePagesVolumes) {
  const std::string page = "docs/lifecycle.md";
  RunAll(
      {
          {"corral volume create work", 0, "work"},
          {"corral volume create --size 1G cache", 0, "cache"},
          {"corral create --name t1 --volume work:/work", 0, "t1"},
          {"corral exec t1 -- sh -c 'echo kept > /work/notes'", 0, ""},
          {"corral volume rm work                          # refused while mounted", 125, ""},
          {"corral rm t1", 0, "t1"},
          {"corral run --volume work:/work:ro -- cat /work/notes    # kept", 0, "kept\n"},
          {"corral volume ls", 0, "cache"},
          {"corral volume inspect work", 0, "\"mounted_by\": []"},
          {"corral volume rm work", 0, "work"},
      },
      page);
}

// docs/lifecycle.md's review-before-commit example.
TEST_F(ReadmeExamplesTest, TheLifecyclePagesCommit) {
  RunAll(
      {
          {"mkdir -p ./t2 && corral create --name t2 --user-data ./t2 --workspace-overlay", 0,
           "t2"},
          {"corral exec t2 -- sh -c 'cd /mnt/user-data/workspace && echo v2 > app.py'", 0, ""},
          {"ls ./t2/workspace                # nothing: the host directory has not changed", 0, ""},
          {"corral diff t2                   # A app.py", 0, "A app.py\n"},
          {"corral commit t2                 # now it has (or: corral commit --discard t2)", 0,
           "t2: 1 written, 0 removed"},
          {"cat ./t2/workspace/app.py        # v2", 0, "v2\n"},
          {"corral rm t2", 0, "t2"},
      },
      "docs/lifecycle.md");
}

// docs/lifecycle.md's snapshot example: a snapshot, a fork and a create from it, a fork's
// writes its own, and the removals.
TEST_F(ReadmeExamplesTest, TheLifecyclePagesSnapshots) {
  RunAll(
      {
          {"mkdir -p ./t3 && corral create --name t3 --user-data ./t3 --workspace-overlay", 0,
           "t3"},
          {"corral exec t3 -- sh -c 'cd /mnt/user-data/workspace && echo ready > env.txt'", 0, ""},
          {"corral snapshot t3 prepared        # prints prepared", 0, "prepared\n"},
          {"corral fork t3 t4                  # t4: t3's files as they are now, not its processes",
           0, "t4\n"},
          {"corral create --name t5 --from prepared", 0, "t5\n"},
          {"corral exec t4 -- sh -c 'echo t4 > /mnt/user-data/workspace/env.txt'", 0, ""},
          {"corral exec t3 -- cat /mnt/user-data/workspace/env.txt    # ready: t4's writes are "
           "its own",
           0, "ready\n"},
          {"corral snapshot ls", 0, "t4-fork"},
          {"corral rm t3 t4 t5 && corral snapshot rm prepared t4-fork", 0, "prepared"},
      },
      "docs/lifecycle.md");
}

// The README's snapshot lines.
TEST_F(ReadmeExamplesTest, TheReadmesSnapshots) {
  RunAll({
      {"mkdir -p ./t2 && corral create --name t2 --user-data ./t2 --workspace-overlay", 0, "t2"},
      {"corral exec t2 -- sh -c 'echo v1 > /mnt/user-data/workspace/app.py'", 0, ""},
      {"corral diff t2                            # A app.py", 0, "A app.py\n"},
      {"corral snapshot t2 prepared               # its files as they are now, a read-only layer",
       0, "prepared\n"},
      {"corral fork t2 t3                         # a new sandbox on t2's files (not its "
       "processes)",
       0, "t3\n"},
      {"corral create --name t4 --from prepared   # another, from the snapshot", 0, "t4\n"},
      {"corral snapshot ls", 0, "sandbox t4"},
  });
}

// The README's volume lines.
TEST_F(ReadmeExamplesTest, TheReadmesVolume) {
  RunAll({
      {"corral volume create work", 0, "work"},
      {"corral create --name t1 --volume work:/work   # /work outlives t1", 0, "t1"},
      {"corral exec t1 -- sh -c 'echo kept > /work/f'", 0, ""},
      {"corral rm t1 && corral run --volume work:/work -- cat /work/f", 0, "kept\n"},
  });
}

TEST_F(ReadmeExamplesTest, TheSandboxesPage) {
  RunAll(
      {
          {"mkdir -p ./t1 && corral create --name t1 --user-data ./t1 --memory 1g --idle-timeout "
           "3600",
           0, "t1"},
          {"corral exec t1 -- bash -c 'cd /tmp && nohup python3 -m http.server 8000 >/tmp/log "
           "2>&1 &'",
           0, ""},
          {"corral exec t1 -- bash -c 'curl -s --retry 10 --retry-connrefused localhost:8000 | "
           "head -3'",
           0, "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n"},
          {"corral exec --timeout 5 t1 -- sleep 60", 124, ""},
          {"corral ps", 0, "running"},
          {"corral stats t1 --json", 0, "\"memory_bytes\":"},
          {"corral rm t1", 0, ""},
      },
      "docs/sandboxes.md");
}

}  // namespace
}  // namespace corral::test
