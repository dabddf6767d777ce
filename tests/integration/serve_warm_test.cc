// `corral serve` with a warm pool (sandbox.warm): creates are served by claiming a ready
// sandbox, which must then be indistinguishable from a cold one where it matters — the
// thread's files land in the thread's host directory, acp-workspace is read-only, the
// mounts carry the same options, the CLI sees df-<id> — and two threads never share one.
// Extra mounts are bound by the claim, a reserved identity's thread keeps its files; stale
// warm sandboxes go at restart, this daemon's at SIGTERM. Real HTTP on loopback, real sandboxes;
// root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <set>

#include "base/files.h"
#include "cgroups/cgroup.h"
#include "runtime/run/identity.h"
#include "runtime/run/jail_cgroup.h"
#include "runtime/sandboxes/persistent.h"
#include "tests/integration/serve_fixture.h"
#include "tests/support/run_corral.h"

namespace corral::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class ServeWarmTest : public ServeTest {
 protected:
  // The daemon's config with a pool of `warm`, and identity: host-uid unless asked for the
  // reserved identity (the default where the host has a range).
  std::string WarmConfig(int warm, int port = 0, bool host_uid = true) const {
    std::string config = Config("", port);
    config.replace(config.find("  replicas: 50\n"), 15,
                   "  replicas: 50\n  warm: " + std::to_string(warm) + "\n");
    if (host_uid) config += "identity: host-uid\n";
    return config;
  }

  // The value of a /metrics line `name value`, or -1.
  double Metric(const std::string& name) {
    const std::string body = Api("GET", "/metrics").body;
    const size_t at = body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::atof(body.c_str() + at + name.size() + 2);
  }

  // Waits (up to 60 s: the machine may be loaded) until the pool holds `n`.
  bool WaitForWarm(int n) {
    for (int i = 0; i < 600; ++i) {
      if (Metric("corral_warm_sandboxes") == n) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }

  static std::set<std::string> WarmNames() {
    std::set<std::string> names;
    for (const auto& info : runtime::ListSandboxes()) {
      if (info.record.name.rfind("dfw-", 0) == 0) names.insert(info.record.name);
    }
    return names;
  }

  std::string ThreadDir(const std::string& thread) const {
    return dir_.Join("base/users/default/threads/" + thread);
  }

  // The shell of a sandbox's AIO API: (output, exit code).
  std::pair<std::string, int> Shell(const std::string& url, const std::string& command) {
    auto r = Curl("POST", url + "/v1/shell/exec", json({{"command", command}}).dump(), {}, false);
    EXPECT_EQ(r.status, 200) << r.body;
    json j = r.Json();
    if (!j.is_object() || !j["data"].is_object()) return {"", -1};
    return {j["data"].value("output", ""),
            j["data"]["exit_code"].is_number() ? j["data"]["exit_code"].get<int>() : -1};
  }

  // The per-mount options of `path` in the sandbox's own mount table ("rw,nosuid,...").
  static std::string MountOptions(const std::string& sandbox, const std::string& path) {
    auto r = RunCorral({"exec", sandbox, "--", "cat", "/proc/self/mountinfo"});
    if (!r || r->exit_code != 0) return "exec failed";
    std::istringstream lines(r->out);
    std::string line, found;
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string id, parent, dev, root, point, options;
      f >> id >> parent >> dev >> root >> point >> options;
      if (point == path) found = options;  // the last one is the visible one
    }
    return found.empty() ? "no mount at " + path : found;
  }
};

TEST_F(ServeWarmTest, CreateIsServedFromThePoolAndLooksCold) {
  StartDaemon(WarmConfig(2));
  ASSERT_TRUE(WaitForWarm(2)) << DaemonLog();
  const std::set<std::string> warm = WarmNames();
  ASSERT_EQ(warm.size(), 2u);
  // The thread's acp-workspace exists with a file before the sandbox does.
  ASSERT_TRUE(dir_.MakeDirs("base/users/default/threads/tw1/acp-workspace", 0777));
  ASSERT_TRUE(dir_.WriteFile("base/users/default/threads/tw1/acp-workspace/seen.txt", "acp\n"));

  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto created = Api("POST", "/api/sandboxes", CreateBody("w1", "tw1"));
  ASSERT_EQ(created.status, 200) << created.body << DaemonLog();
  EXPECT_EQ(Metric("corral_sandbox_events_total{event=\"created_warm\"}"), 1) << DaemonLog();
  const std::string url = created.Json()["sandbox_url"];

  // A warm sandbox, now named for the thread: made before the request, in a warm cgroup.
  auto info = runtime::InspectSandbox("df-w1");
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_TRUE(info->alive);
  EXPECT_LT(info->record.created_at, before) << "made before the POST: it came from the pool";
  EXPECT_EQ(info->record.cgroup_name.rfind("sbx-dfw-", 0), 0u) << info->record.cgroup_name;
  EXPECT_TRUE(warm.count(info->record.cgroup_name.substr(4))) << "one of the two ready ones";
  EXPECT_EQ(info->record.spec.user_data_dir, ThreadDir("tw1") + "/user-data");
  EXPECT_EQ(info->record.spec.acp_workspace_dir, ThreadDir("tw1") + "/acp-workspace");
  EXPECT_FALSE(runtime::InspectSandbox(info->record.cgroup_name.substr(4)))
      << "the old name is gone";
  struct stat st;
  EXPECT_NE(::stat(dir_.Join("run/warm/" + info->record.cgroup_name.substr(4)).c_str(), &st), 0)
      << "its placeholders are removed";

  // Files written in the sandbox land in the thread's directory on the host.
  auto [out, code] =
      Shell(url,
            "echo hello > /mnt/user-data/workspace/out.txt; "
            "echo up > /mnt/user-data/outputs/o.txt; pwd; cat /mnt/acp-workspace/seen.txt");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "/mnt/user-data/workspace\nacp\n");
  std::ifstream written(ThreadDir("tw1") + "/user-data/workspace/out.txt");
  std::string word;
  written >> word;
  EXPECT_EQ(word, "hello");
  EXPECT_EQ(::stat((ThreadDir("tw1") + "/user-data/outputs/o.txt").c_str(), &st), 0);
  // acp-workspace is read-only, as in a cold sandbox.
  auto [ro_out, ro_code] = Shell(url, "touch /mnt/acp-workspace/x 2>&1; echo $?");
  EXPECT_NE(ro_out.find("Read-only file system"), std::string::npos) << ro_out;
  EXPECT_EQ(::stat((ThreadDir("tw1") + "/acp-workspace/x").c_str(), &st), -1);
  EXPECT_EQ(MountOptions("df-w1", "/mnt/acp-workspace").substr(0, 3), "ro,");
  EXPECT_EQ(MountOptions("df-w1", "/mnt/user-data").substr(0, 3), "rw,");

  // The CLI sees it under its thread's name, as any other.
  auto ps = RunCorral({"ps"});
  ASSERT_TRUE(ps && ps->exit_code == 0);
  EXPECT_NE(ps->out.find("df-w1"), std::string::npos) << ps->out;
  auto exec = RunCorral({"exec", "df-w1", "--", "cat", "/mnt/user-data/workspace/out.txt"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->out, "hello\n");

  // The pool refills behind the take.
  EXPECT_TRUE(WaitForWarm(2)) << DaemonLog();
  EXPECT_GE(Metric("corral_warm_pool_events_total{event=\"made\"}"), 3);

  EXPECT_EQ(Api("DELETE", "/api/sandboxes/w1").status, 200);
  EXPECT_FALSE(runtime::InspectSandbox("df-w1")) << DaemonLog();
  EXPECT_EQ(::stat((ThreadDir("tw1") + "/user-data/workspace/out.txt").c_str(), &st), 0)
      << "thread data outlives its sandbox";
}

TEST_F(ServeWarmTest, TwoThreadsNeverShareASandboxOrItsFiles) {
  StartDaemon(WarmConfig(2));
  ASSERT_TRUE(WaitForWarm(2)) << DaemonLog();
  auto a = Api("POST", "/api/sandboxes", CreateBody("wa", "ta"));
  auto b = Api("POST", "/api/sandboxes", CreateBody("wb", "tb"));
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(Metric("corral_sandbox_events_total{event=\"created_warm\"}"), 2);
  auto ia = runtime::InspectSandbox("df-wa");
  auto ib = runtime::InspectSandbox("df-wb");
  ASSERT_TRUE(ia && ib);
  EXPECT_NE(ia->record.id, ib->record.id);
  EXPECT_NE(ia->record.init_pid, ib->record.init_pid);
  EXPECT_NE(ia->record.cgroup_name, ib->record.cgroup_name);
  const std::string url_a = a.Json()["sandbox_url"], url_b = b.Json()["sandbox_url"];
  EXPECT_EQ(Shell(url_a, "echo a-only > /mnt/user-data/workspace/a.txt; echo $?").first, "0\n");
  EXPECT_EQ(Shell(url_b, "echo b-only > /mnt/user-data/workspace/b.txt; echo $?").first, "0\n");
  EXPECT_EQ(Shell(url_a, "ls /mnt/user-data/workspace").first, "a.txt\n");
  EXPECT_EQ(Shell(url_b, "ls /mnt/user-data/workspace").first, "b.txt\n");
  struct stat st;
  EXPECT_EQ(::stat((ThreadDir("ta") + "/user-data/workspace/a.txt").c_str(), &st), 0);
  EXPECT_NE(::stat((ThreadDir("ta") + "/user-data/workspace/b.txt").c_str(), &st), 0);
  EXPECT_EQ(::stat((ThreadDir("tb") + "/user-data/workspace/b.txt").c_str(), &st), 0);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/wa").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/wb").status, 200);
}

// DeerFlow sends /mnt/acp-workspace as an extra mount on every create, and a skills view
// appears once its host directory exists: the claim binds both (late-bound mounts are the
// point of claiming), with the options a cold create gives them.
TEST_F(ServeWarmTest, ExtraMountsAndSkillsViewsAreBoundByTheClaimAsColdCreatesBindThem) {
  ASSERT_TRUE(dir_.MakeDirs("base/skills_view/public", 0755));
  ASSERT_TRUE(dir_.WriteFile("base/skills_view/public/skill.md", "a skill\n"));
  ASSERT_TRUE(dir_.MakeDirs("base/shared", 0755));
  ASSERT_TRUE(dir_.WriteFile("base/shared/s.txt", "shared\n"));
  StartDaemon(WarmConfig(1));
  ASSERT_TRUE(WaitForWarm(1)) << DaemonLog();
  json acp = {{"host_path", dir_.Join("base/shared")},
              {"container_path", "/mnt/acp-workspace"},
              {"read_only", true}};
  json warm_body = {{"sandbox_id", "warm1"}, {"thread_id", "tw"}, {"extra_mounts", {acp}}};
  auto warm = Api("POST", "/api/sandboxes", warm_body.dump());
  ASSERT_EQ(warm.status, 200) << warm.body << DaemonLog();
  EXPECT_EQ(Metric("corral_sandbox_events_total{event=\"created_warm\"}"), 1) << DaemonLog();
  const std::string url = warm.Json()["sandbox_url"];
  EXPECT_EQ(Shell(url, "cat /mnt/acp-workspace/s.txt /mnt/skills/public/skill.md").first,
            "shared\na skill\n");
  auto [ro, ro_code] = Shell(url, "touch /mnt/skills/public/x 2>&1; echo $?");
  EXPECT_NE(ro.find("Read-only file system"), std::string::npos) << ro;

  // The same request to a daemon without a pool (the sandboxes are kept across the restart).
  StopDaemon(SIGTERM);
  StartDaemon(WarmConfig(0));
  json cold_body = {{"sandbox_id", "cold1"}, {"thread_id", "tc"}, {"extra_mounts", {acp}}};
  auto cold = Api("POST", "/api/sandboxes", cold_body.dump());
  ASSERT_EQ(cold.status, 200) << cold.body;
  auto info = runtime::InspectSandbox("df-cold1");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->record.cgroup_name, "sbx-df-cold1");
  for (const char* path : {"/mnt/user-data", "/mnt/acp-workspace", "/mnt/skills/public"}) {
    const std::string c = MountOptions("df-cold1", path), w = MountOptions("df-warm1", path);
    EXPECT_EQ(c, w) << path;
    EXPECT_NE(w.find("nosuid"), std::string::npos) << path << ": " << w;
    EXPECT_NE(w.find("nodev"), std::string::npos) << path << ": " << w;
  }
  // The claimed sandbox's execs get Landlock rules for the mounts the claim added (the
  // cat above read through them: the root alone grants listing only).
  auto warm_info = runtime::InspectSandbox("df-warm1");
  ASSERT_TRUE(warm_info);
  if (warm_info->record.landlock.enforce) {
    bool has_view = false;
    for (const auto& rule : warm_info->record.landlock.rules) {
      has_view = has_view || rule.path == "/mnt/skills/public";
    }
    EXPECT_TRUE(has_view);
  }
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/cold1").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/warm1").status, 200);
}

// Under a reserved identity (what `corral setup ids` gives every install) the warm init's
// ids were fixed before its thread was known. The claim keeps them and binds the thread's
// directories id-mapped: on the host the thread's files stay its own slot's, so the next
// sandbox of the thread, warm or cold, reads and writes them.
TEST_F(ServeWarmTest, ReservedIdentityIsServedWarmAndTheThreadsFilesStayItsOwn) {
  auto subuid = ReadFile("/etc/subuid");
  auto subgid = ReadFile("/etc/subgid");
  ASSERT_TRUE(subuid && subgid);
  auto range = runtime::FindReservedRange(*subuid, *subgid);
  ASSERT_TRUE(range) << "no corral line in /etc/subuid and /etc/subgid (identity_test.cc "
                        "reserves one for the suite)";
  StartDaemon(WarmConfig(1, 0, /*host_uid=*/false));
  ASSERT_TRUE(WaitForWarm(1)) << DaemonLog();
  auto created = Api("POST", "/api/sandboxes", CreateBody("r1", "tr"));
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_EQ(Metric("corral_sandbox_events_total{event=\"created_warm\"}"), 1) << DaemonLog();
  auto [out, code] = Shell(
      created.Json()["sandbox_url"],
      "id -u; echo x > /mnt/user-data/workspace/r.txt; stat -c %u /mnt/user-data/workspace/r.txt");
  EXPECT_EQ(out, "1000\n1000\n") << "its file is the sandbox user's inside";
  // On the host: the thread's own slot, the one a cold create of the thread would run as.
  runtime::JailSpec thread_spec;
  thread_spec.identity = runtime::IdentityMode::kReserved;
  thread_spec.user_data_dir = ThreadDir("tr") + "/user-data";
  auto thread_ids = runtime::ResolveIdentity(thread_spec);
  ASSERT_TRUE(thread_ids) << thread_ids.error().message();
  struct stat file;
  ASSERT_EQ(::stat((ThreadDir("tr") + "/user-data/workspace/r.txt").c_str(), &file), 0);
  EXPECT_EQ(file.st_uid, thread_ids->uid);
  EXPECT_EQ(file.st_gid, thread_ids->gid);
  // The sandbox's processes run as the warm slot: say which, as the record does.
  auto info = runtime::InspectSandbox("df-r1");
  ASSERT_TRUE(info);
  auto sandbox_ids = runtime::ResolveIdentity(info->record.spec);
  ASSERT_TRUE(sandbox_ids);
  EXPECT_GT(sandbox_ids->uid, range->uids.start);
  EXPECT_LT(sandbox_ids->uid, range->uids.start + range->uids.count);
  if (sandbox_ids->uid != thread_ids->uid) {
    EXPECT_FALSE(info->record.spec.identity_claimed_key.empty());
  }
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/r1").status, 200);

  // The thread's next sandbox (the pool refilled: warm again, from another placeholder).
  ASSERT_TRUE(WaitForWarm(1)) << DaemonLog();
  auto again = Api("POST", "/api/sandboxes", CreateBody("r2", "tr"));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Metric("corral_sandbox_events_total{event=\"created_warm\"}"), 2) << DaemonLog();
  EXPECT_EQ(Shell(again.Json()["sandbox_url"],
                  "echo y >> /mnt/user-data/workspace/r.txt && cat /mnt/user-data/workspace/r.txt")
                .first,
            "x\ny\n");
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/r2").status, 200);
}

// Where sandbox.warm is on and a create still goes cold, the log and /metrics say why: here
// the configuration asks for a network allow-list, whose proxy is started per sandbox name.
TEST_F(ServeWarmTest, ColdCreatesSayWhyInTheLogAndMetrics) {
  std::string config = WarmConfig(1);
  config += "network:\n  mode: allowlist\n  allow: [example.com]\n";
  StartDaemon(config);
  EXPECT_NE(DaemonLog().find("sandbox.warm is off: network.mode allowlist"), std::string::npos)
      << DaemonLog();
  EXPECT_EQ(Metric("corral_sandbox_cold_creates_total{reason=\"pool_off\"}"), 0)
      << "every reason is there from the start";
  auto created = Api("POST", "/api/sandboxes", CreateBody("c1", "tc"));
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_EQ(Metric("corral_sandbox_cold_creates_total{reason=\"pool_off\"}"), 1);
  EXPECT_EQ(Metric("corral_sandbox_cold_creates_total{reason=\"pool_empty\"}"), 0);
  EXPECT_NE(DaemonLog().find("sandbox c1: created cold: the warm pool is off"), std::string::npos)
      << DaemonLog();
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/c1").status, 200);
}

TEST_F(ServeWarmTest, RestartRemovesStaleWarmSandboxesAndSigtermItsOwn) {
  StartDaemon(WarmConfig(2));
  ASSERT_TRUE(WaitForWarm(2)) << DaemonLog();
  ASSERT_EQ(Api("POST", "/api/sandboxes", CreateBody("kept", "tk")).status, 200);
  ASSERT_TRUE(WaitForWarm(2)) << DaemonLog();
  const std::set<std::string> stale = WarmNames();
  ASSERT_EQ(stale.size(), 2u);
  StopDaemon(SIGKILL);
  EXPECT_EQ(WarmNames(), stale) << "kill -9 leaves them";
  // And a warm create killed before it recorded its sandbox leaves a placeholder and the
  // cgroups it had made.
  const std::string unrecorded = "dfw-00000000deadbeef";
  ASSERT_TRUE(dir_.MakeDirs("run/warm/" + unrecorded + "/user-data", 0700));
  auto manager = cgroups::CgroupManager::Create(runtime::ManagerOptionsFor(runtime::CgroupSpec{}));
  ASSERT_TRUE(manager) << manager.error().message();
  {
    auto cg = (*manager)->CreateCgroup("sbx-" + unrecorded);
    ASSERT_TRUE(cg) << cg.error().message();
    (*cg)->Release();  // left for the next daemon
  }

  // The next daemon (without a pool) removes them: nobody can claim them any more.
  StartDaemon(WarmConfig(0));
  EXPECT_NE(DaemonLog().find("(1 sandboxes adopted)"), std::string::npos) << DaemonLog();
  EXPECT_TRUE(WarmNames().empty()) << DaemonLog();
  struct stat st;
  for (const std::string& name : stale) {
    EXPECT_NE(::stat(dir_.Join("run/warm/" + name).c_str(), &st), 0) << name;
  }
  EXPECT_NE(::stat(dir_.Join("run/warm/" + unrecorded).c_str(), &st), 0);
  auto left = (*manager)->OpenCgroup("sbx-" + unrecorded);
  EXPECT_FALSE(left) << "the unrecorded warm sandbox's cgroups are still there\n" << DaemonLog();
  if (left) (void)(*left)->Destroy();
  EXPECT_EQ(Metric("corral_warm_sandboxes"), 0);
  StopDaemon(SIGTERM);

  // SIGTERM keeps thread sandboxes and removes the warm ones.
  StartDaemon(WarmConfig(2));
  ASSERT_TRUE(WaitForWarm(2)) << DaemonLog();
  const int status = StopDaemon(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << DaemonLog();
  EXPECT_TRUE(WarmNames().empty());
  auto info = runtime::InspectSandbox("df-kept");
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->alive);
}

}  // namespace
}  // namespace corral::test
