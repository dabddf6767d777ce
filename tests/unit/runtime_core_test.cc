// Unit tests (no root) for the pure parts of the run path: bounded output capture, the
// outcome and its exit codes, the command environment, spec <-> JSON, sandbox records,
// and the setup-record channel.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "jail/setup_record.h"
#include "runtime/run/outcome.h"
#include "runtime/run/outcome_report.h"
#include "runtime/run/output_capture.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "runtime/spec/spec_json.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

TEST(OutputCapture, KeepsEverythingUnderTheLimit) {
  OutputCapture c(10);
  c.Append("abc", 3);
  c.Append("defg", 4);
  StreamOutcome s = c.Finish();
  EXPECT_EQ(s.text, "abcdefg");
  EXPECT_EQ(s.bytes, 7);
  EXPECT_EQ(s.dropped_bytes, 0);
}

TEST(OutputCapture, KeepsHeadAndTailAndCountsTheRest) {
  OutputCapture c(8);  // 4 bytes of head, 4 of tail
  std::string all;
  for (char ch = 'a'; ch <= 'z'; ++ch) {  // one byte at a time exercises the ring
    c.Append(&ch, 1);
    all += ch;
  }
  StreamOutcome s = c.Finish();
  EXPECT_EQ(s.bytes, 26);
  EXPECT_EQ(s.dropped_bytes, 18);
  EXPECT_EQ(s.text, "abcd\n[corral: 18 bytes dropped]\nwxyz");
}

TEST(OutputCapture, LargeChunksKeepOnlyTheirEnd) {
  OutputCapture c(6);
  std::string big(1000, 'x');
  big[997] = '1';
  big[998] = '2';
  big[999] = '3';
  c.Append("HE", 2);
  c.Append(big.data(), big.size());
  StreamOutcome s = c.Finish();
  EXPECT_EQ(s.bytes, 1002);
  EXPECT_EQ(s.dropped_bytes, 996);
  EXPECT_EQ(s.text, "HEx\n[corral: 996 bytes dropped]\n123");
}

TEST(OutputCapture, MemoryStaysBoundedWhateverIsWritten) {
  OutputCapture c(1024);
  std::string chunk(65536, 'z');
  for (int i = 0; i < 2000; ++i) c.Append(chunk.data(), chunk.size());  // 128 MiB
  StreamOutcome s = c.Finish();
  EXPECT_EQ(s.bytes, 2000LL * 65536);
  EXPECT_LT(s.text.size(), 1024u + 64u);
}

TEST(Outcome, ExitCodesFollowDockerAndTimeout) {
  RunOutcome o;
  o.status = RunStatus::kExited;
  o.exit_code = 3;
  EXPECT_EQ(CliExitCode(o), 3);
  o.status = RunStatus::kTimedOut;
  EXPECT_EQ(CliExitCode(o), 124);
  o.status = RunStatus::kOomKilled;
  EXPECT_EQ(CliExitCode(o), 137);
  o.status = RunStatus::kSignaled;
  o.signal = 15;
  EXPECT_EQ(CliExitCode(o), 143);
  o.status = RunStatus::kSetupFailed;
  o.setup_error = jail::SetupFailure{jail::SetupStep::kExecve, ENOENT, "execve x"};
  EXPECT_EQ(CliExitCode(o), 127);
  o.setup_error->err = EACCES;
  EXPECT_EQ(CliExitCode(o), 126);
  o.setup_error = jail::SetupFailure{jail::SetupStep::kMount, ENOENT, "bind-mount a -> b"};
  EXPECT_EQ(CliExitCode(o), 125);
  o.interrupted_by = 2;
  EXPECT_EQ(CliExitCode(o), 130);
}

TEST(Outcome, JsonHasEveryDocumentedField) {
  RunOutcome o;
  o.status = RunStatus::kSetupFailed;
  o.setup_error =
      jail::SetupFailure{jail::SetupStep::kMount, ENOENT, "bind-mount /srv/skills -> /mnt/skills"};
  o.captured = true;
  o.stdout_stream.text = std::string("bad \xff utf8");
  nlohmann::json j = nlohmann::json::parse(OutcomeToJson(o));
  for (const char* key :
       {"status", "exit_code", "signal", "limit", "wall_ms", "cpu_user_ms", "cpu_system_ms",
        "memory_peak_bytes", "pids_peak", "stdout", "stderr", "stdout_bytes", "stderr_bytes",
        "stdout_dropped_bytes", "stderr_dropped_bytes", "setup_error"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["status"], "setup_failed");
  EXPECT_EQ(j["exit_code"], 125);
  EXPECT_EQ(j["setup_error"]["step"], "mount");
  EXPECT_EQ(j["setup_error"]["errno"], "ENOENT");
  EXPECT_EQ(j["setup_error"]["message"],
            "setup failed at bind-mount /srv/skills -> /mnt/skills: No such file or directory");
  EXPECT_NE(j["stdout"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
}

TEST(Outcome, ErrorsBeforeAJailHaveTheSameShape) {
  nlohmann::json j =
      nlohmann::json::parse(ErrorToJson(Error(ErrorCode::kInvalidArgument, "limits.memory: bad")));
  EXPECT_EQ(j["status"], "setup_failed");
  EXPECT_EQ(j["exit_code"], 125);
  EXPECT_EQ(j["setup_error"]["step"], "validate");
}

TEST(CommandEnvironment, SmallDefaultPlusOverrides) {
  JailSpec spec;
  spec.env = {{"FOO", "bar"}, {"PATH", "/opt/bin:/usr/bin"}};
  auto env = CommandEnvironment(spec);
  auto get = [&](const std::string& k) -> std::string {
    for (const auto& [name, value] : env) {
      if (name == k) return value;
    }
    return "<unset>";
  };
  EXPECT_EQ(get("PATH"), "/opt/bin:/usr/bin");
  EXPECT_EQ(get("HOME"), "/home/sandbox");
  EXPECT_EQ(get("USER"), "sandbox");
  EXPECT_EQ(get("FOO"), "bar");
  EXPECT_EQ(get("LANG"), "C.UTF-8");
  EXPECT_LE(env.size(), 9u);
}

TEST(WeakenedIsolation, NamesEveryOptOut) {
  JailSpec spec;
  EXPECT_TRUE(WeakenedIsolation(spec).empty());
  spec.namespaces.pid = false;
  spec.namespaces.net = false;
  spec.unsafe.allow_missing_limits = true;
  EXPECT_EQ(WeakenedIsolation(spec).size(), 3u);
  spec.unsafe.network_resolve = {{"pypi.test", "127.0.0.1"}};
  EXPECT_EQ(WeakenedIsolation(spec).size(), 4u);
}

TEST(SpecJson, RoundTripsEveryField) {
  JailSpec s;
  s.argv = {"bash", "-c", "echo hi"};
  s.env = {{"A", "1"}};
  s.rootfs = "/srv/root";
  s.user_data_dir = "/srv/ud";
  s.mounts = {{"/a", "/b", false}};
  s.workdir = "/w";
  s.hostname = "h";
  s.uid = 1234;
  s.namespaces.ipc = false;
  s.seccomp_profile = "strict";
  s.limits.memory_bytes = 77 << 20;
  s.limits.cpu_time_seconds = 9;
  s.cgroups.driver = CgroupDriverChoice::kV1;
  s.unsafe.allow_root = true;
  s.unsafe.network_resolve = {{"pypi.test", "127.0.0.1"}};
  s.network.mode = NetworkMode::kAllowlist;
  s.network.allow = {"pypi.org"};
  s.network.max_bytes = 1 << 20;
  auto back = SpecFromJson(SpecToJson(s));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(SpecToJson(*back), SpecToJson(s));
  EXPECT_EQ(back->limits.cpu_time_seconds, 9);
  EXPECT_FALSE(back->skills_dir.has_value());
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(SpecFromJson("{\"argv\": 3}"));
}

TEST(SandboxStore, ClaimIsExclusiveAndRecordsRoundTrip) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  ASSERT_TRUE(store.Claim("t1"));
  auto again = store.Claim("t1");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_FALSE(store.Claim("../x"));
  SandboxRecord r;
  r.id = "0123456789ab";
  r.name = "t1";
  r.init_pid = 42;
  r.spec.hostname = "hh";
  ASSERT_TRUE(store.Save(r));
  auto by_name = store.Find("t1");
  ASSERT_TRUE(by_name) << by_name.error().message();
  EXPECT_EQ(by_name->init_pid, 42);
  EXPECT_EQ(by_name->spec.hostname, "hh");
  auto by_id = store.Find("0123456789ab");
  ASSERT_TRUE(by_id);
  EXPECT_EQ(by_id->name, "t1");
  EXPECT_EQ(store.List().size(), 1u);
  EXPECT_FALSE(store.Find("nope"));
  EXPECT_TRUE(store.IdleCandidates().empty());
  ASSERT_TRUE(store.Forget("t1"));
  EXPECT_TRUE(store.List().empty());
  EXPECT_FALSE(store.Find("0123456789ab"));  // the id index entry went with it
}

// A claim is stale only when its maker is gone (its lock free) and no record was saved;
// then whoever takes it gets the maker's last note.
TEST(SandboxStore, AClaimIsStaleOnlyOnceItsMakerLetsGoWithoutARecord) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  auto held = store.Claim("c1");
  ASSERT_TRUE(held) << held.error().message();
  SandboxRecord pending;
  pending.id = "0123456789ab";
  pending.name = "c1";
  pending.cgroup_name = "sbx-c1";
  ASSERT_TRUE(store.NotePending(held->get(), pending));
  EXPECT_EQ(store.ClaimsWithoutRecord(), std::vector<std::string>{"c1"});
  auto busy = store.TakeStaleClaim("c1");
  ASSERT_TRUE(busy);
  EXPECT_FALSE(busy->has_value()) << "its maker holds it";
  EXPECT_FALSE(store.Claim("c1"));

  held->Reset();  // the maker dies
  auto stale = store.TakeStaleClaim("c1");
  ASSERT_TRUE(stale);
  ASSERT_TRUE(stale->has_value());
  ASSERT_TRUE((*stale)->pending.has_value());
  EXPECT_EQ((*stale)->pending->cgroup_name, "sbx-c1");
  ASSERT_TRUE(store.RemoveStaleClaim("c1"));
  EXPECT_TRUE(store.ClaimsWithoutRecord().empty());
  EXPECT_TRUE(store.Claim("c1")) << "the name is free again";

  // Saved and ended: a sandbox, not a claim, whether or not the maker still runs.
  auto made = store.Claim("c2");
  ASSERT_TRUE(made);
  pending.name = "c2";
  pending.id = "0123456789ac";
  ASSERT_TRUE(store.Save(pending));
  store.EndClaim("c2");
  made->Reset();
  auto saved = store.TakeStaleClaim("c2");
  ASSERT_TRUE(saved);
  EXPECT_FALSE(saved->has_value());
  EXPECT_TRUE(store.Find("c2"));
}

// The sweep of dead makers' claims runs on every create and exec: it reads the index of
// claims, not the directory of every sandbox.
TEST(SandboxStore, TheClaimSweepReadsOnlyTheIndexOfClaims) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  for (int i = 0; i < 50; ++i) {
    const std::string name = "s" + std::to_string(i);
    auto claim = store.Claim(name);
    ASSERT_TRUE(claim) << claim.error().message();
    SandboxRecord r;
    r.id = "0123456789" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    r.name = name;
    ASSERT_TRUE(store.Save(r));
    store.EndClaim(name);
  }
  auto entries = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.Join("claims"))) {
      names.push_back(e.path().filename());
    }
    return names;
  };
  EXPECT_TRUE(entries().empty()) << "a saved sandbox leaves no entry";
  EXPECT_TRUE(store.ClaimsWithoutRecord().empty());
  auto held = store.Claim("late");
  ASSERT_TRUE(held);
  EXPECT_EQ(entries(), std::vector<std::string>{"late"});
  EXPECT_EQ(store.ClaimsWithoutRecord(), std::vector<std::string>{"late"});
  held->Reset();  // its maker dies: still found, and undone by name
  EXPECT_EQ(store.ClaimsWithoutRecord(), std::vector<std::string>{"late"});
  ASSERT_TRUE(store.RemoveStaleClaim("late"));
  EXPECT_TRUE(entries().empty());
  // A directory without a record and without an entry (a corral from before the index):
  // not swept, but `corral rm NAME` still finds it by name.
  ASSERT_TRUE(dir.MakeDirs("sandboxes/old", 0700));
  EXPECT_TRUE(store.ClaimsWithoutRecord().empty());
}

TEST(SandboxStore, IdleIndexListsOnlySandboxesWithATimeout) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  for (const char* name : {"never", "idles"}) {
    ASSERT_TRUE(store.Claim(name));
    SandboxRecord r;
    r.id = std::string("id-") + name;
    r.name = name;
    r.idle_timeout_seconds = std::string(name) == "idles" ? 90 : 0;
    ASSERT_TRUE(store.Save(r));
  }
  auto idle = store.IdleCandidates();
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].name, "idles");
  EXPECT_EQ(idle[0].timeout_seconds, 90);
  ASSERT_TRUE(store.Forget("idles"));
  EXPECT_TRUE(store.IdleCandidates().empty());
  ASSERT_TRUE(store.Forget("never"));
}

// A warm sandbox claimed for a thread (runtime/pool/warm_claim.h): the record moves
// to the new name with its new spec and idle timeout; the id finds the new name; the old
// name, its directory and its idle entry are gone.
TEST(SandboxStore, RenameMovesTheRecordAndItsIndexes) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  ASSERT_TRUE(store.Claim("dfw-1"));
  SandboxRecord warm;
  warm.id = "0123456789ab";
  warm.name = "dfw-1";
  warm.cgroup_name = "sbx-dfw-1";
  warm.idle_timeout_seconds = 5;  // so that the old idle entry must go too
  warm.spec.user_data_dir = "/placeholder";
  ASSERT_TRUE(store.Save(warm));
  auto lock = store.Lock("dfw-1", /*shared=*/false);
  ASSERT_TRUE(lock);

  SandboxRecord claimed = warm;
  claimed.name = "df-t1";
  claimed.idle_timeout_seconds = 600;
  claimed.spec.user_data_dir = "/base/t1/user-data";
  ASSERT_TRUE(store.Rename("dfw-1", claimed));
  auto by_id = store.Find("0123456789ab");
  ASSERT_TRUE(by_id) << by_id.error().message();
  EXPECT_EQ(by_id->name, "df-t1");
  EXPECT_EQ(by_id->cgroup_name, "sbx-dfw-1") << "the cgroup keeps its name";
  EXPECT_EQ(by_id->spec.user_data_dir, "/base/t1/user-data");
  EXPECT_FALSE(store.Find("dfw-1"));
  struct stat st;
  EXPECT_NE(::stat(dir.Join("sandboxes/dfw-1").c_str(), &st), 0) << "its directory went";
  ASSERT_EQ(store.List().size(), 1u);
  auto idle = store.IdleCandidates();
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].name, "df-t1");
  EXPECT_EQ(idle[0].timeout_seconds, 600);

  // A taken name or another id changes nothing.
  ASSERT_TRUE(store.Claim("dfw-2"));
  SandboxRecord other = warm;
  other.id = "ba9876543210";
  other.name = "dfw-2";
  ASSERT_TRUE(store.Save(other));
  SandboxRecord onto = other;
  onto.name = "df-t1";
  Status taken = store.Rename("dfw-2", onto);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code(), ErrorCode::kAlreadyExists);
  onto.name = "df-t2";
  onto.id = "000000000000";
  EXPECT_FALSE(store.Rename("dfw-2", onto));
  EXPECT_EQ(store.Find("ba9876543210")->name, "dfw-2");
  EXPECT_EQ(store.Find("0123456789ab")->name, "df-t1");
  EXPECT_FALSE(store.Find("df-t2"));
  ASSERT_TRUE(store.Forget("dfw-2"));
  ASSERT_TRUE(store.Forget("df-t1"));
  EXPECT_TRUE(store.List().empty());
  EXPECT_FALSE(store.Find("0123456789ab"));
}

TEST(SandboxStore, NamesAreValidated) {
  EXPECT_TRUE(IsValidSandboxName("a-B_9"));
  EXPECT_FALSE(IsValidSandboxName(""));
  EXPECT_FALSE(IsValidSandboxName("a/b"));
  EXPECT_FALSE(IsValidSandboxName(".."));
  EXPECT_FALSE(IsValidSandboxName(std::string(65, 'a')));
  EXPECT_TRUE(IsValidSandboxName(std::string(64, 'a')));
}

TEST(ProcessStartTicks, KnowsOurselvesAndNotTheDead) {
  EXPECT_TRUE(ProcessStartTicks(getpid()).has_value());
  EXPECT_FALSE(ProcessStartTicks(0x3fffffff).has_value());
}

// A zombie still has its /proc entry and start time, but it is not running: a killed
// sandbox init must read as dead while nobody has reaped it yet.
TEST(ProcessRunning, IsFalseForAZombieAndARecycledStartTime) {
  uint64_t self_ticks = ProcessStartTicks(getpid()).value_or(0);
  EXPECT_TRUE(ProcessRunning(getpid(), self_ticks));
  EXPECT_FALSE(ProcessRunning(getpid(), self_ticks + 1));
  EXPECT_FALSE(ProcessRunning(0x3fffffff, 0));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  uint64_t ticks = ProcessStartTicks(child).value_or(0);
  // Wait, without reaping, until it is a zombie.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(ProcessStartTicks(child).has_value()) << "a zombie keeps its /proc entry";
  EXPECT_FALSE(ProcessRunning(child, ticks));
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
}

TEST(SandboxStore, RemovedOomKillsAddUp) {
  test::TempDir dir;
  SandboxStore store(dir.path());
  ASSERT_TRUE(dir.MakeDirs("sandboxes", 0700));
  ASSERT_TRUE(store.Claim("t1"));
  EXPECT_EQ(store.RemovedOomKills("t1"), 0);
  ASSERT_TRUE(store.AddRemovedOomKills("t1", 1));
  ASSERT_TRUE(store.AddRemovedOomKills("t1", 2));
  EXPECT_EQ(store.RemovedOomKills("t1"), 3);
  ASSERT_TRUE(store.Forget("t1"));  // the count goes with the sandbox's directory
  EXPECT_FALSE(std::filesystem::exists(dir.Join("sandboxes/t1")));
}

TEST(OutcomeReport, NamesThePidsLimitAndOtherLimitsWithoutJson) {
  LimitsSpec limits;
  limits.pids = 32;
  RunOutcome o;
  o.status = RunStatus::kExited;
  o.exit_code = 1;
  o.limit = LimitKind::kPids;
  EXPECT_EQ(OutcomeReport(o, limits, /*with_reason=*/true),
            "corral: process limit reached (pids-limit 32): the command could not fork or "
            "start a thread (EAGAIN)\n");
  EXPECT_EQ(OutcomeReport(o, limits, /*with_reason=*/false), "") << "--json: the object says it";
  o.limit = LimitKind::kMemory;  // a child OOM-killed, the command itself exited
  limits.memory_bytes = 64LL << 20;
  EXPECT_EQ(OutcomeReport(o, limits, true),
            "corral: a process of the command was killed: out of memory (limit 64 MiB)\n");
  o.status = RunStatus::kSignaled;
  o.signal = SIGKILL;
  o.limit = LimitKind::kCpuTime;
  limits.cpu_time_seconds = 1;
  EXPECT_EQ(OutcomeReport(o, limits, true), "corral: command killed: CPU time limit (1 s)\n");
  o.limit = LimitKind::kOutput;  // shown in the output itself
  EXPECT_EQ(OutcomeReport(o, limits, true), "");
  o.limit.reset();
  EXPECT_EQ(OutcomeReport(o, limits, true), "");
}

TEST(SetupRecord, FailureCrossesTheChannelAndEofMeansRunning) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  jail::ReportSetupFailure(fds[1], jail::SetupStep::kChdir, ENOENT, "chdir /nope");
  auto got = jail::ReadSetupResult(fds[0], 1000);
  ASSERT_TRUE(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, jail::SetupStep::kChdir);
  EXPECT_EQ((*got)->ToString(), "setup failed at chdir /nope: No such file or directory");
  close(fds[1]);
  auto eof = jail::ReadSetupResult(fds[0], 1000);
  ASSERT_TRUE(eof);
  EXPECT_FALSE(eof->has_value());
  close(fds[0]);
}

}  // namespace
}  // namespace corral::runtime
