// corral's own API (/api/corral/v1/...) black-box: a real `corral serve` on loopback, curl,
// real persistent sandboxes. Create with limits, exec outcomes (exit code, timeout), the
// field named by every validation error, 401/404, binary file round trip, path escapes,
// the provisioner's sandboxes seen here, and the OpenAPI document against the routes the
// daemon actually serves. Root only; leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/files.h"
#include "runtime/sandboxes/persistent.h"
#include "server/corral_api/api.h"
#include "server/http/listen_address.h"
#include "tests/integration/serve_fixture.h"

namespace corral::test {
namespace {

using nlohmann::json;

class CorralApiTest : public ServeTest {
 protected:
  HttpAnswer Post(const std::string& path, const json& body) {
    return Api("POST", "/api/corral/v1" + path, body.dump());
  }
  HttpAnswer Get(const std::string& path) { return Api("GET", "/api/corral/v1" + path); }
  // The field of a corral-API error body ("" when none).
  static std::string Field(const HttpAnswer& a) {
    json j = a.Json();
    if (!j.is_object() || !j.contains("error") || !j["error"]["field"].is_string()) return "";
    return j["error"]["field"];
  }
  // The body inline (the fixture's Curl writes bodies to one shared file: not for threads).
  HttpAnswer Exec(const std::string& name, const json& body) {
    return Curl("POST", Url("/api/corral/v1/sandboxes/" + name + "/exec"), "", {}, true,
                {"--data-binary", body.dump()});
  }
};

TEST_F(CorralApiTest, CreateExecStatsDelete) {
  StartDaemon(Config());
  json spec = {{"limits", {{"memory", "96m"}, {"pids", 64}, {"timeout", 20}}},
               {"env", {{"GREETING", "hello"}}}};
  auto created = Post("/sandboxes", {{"name", "api1"}, {"spec", spec}, {"idle_timeout", 0}});
  ASSERT_EQ(created.status, 201) << created.body << DaemonLog();
  json c = created.Json();
  EXPECT_EQ(c["name"], "api1");
  EXPECT_FALSE(c["id"].get<std::string>().empty());
  EXPECT_EQ(c["state"], "running");
  EXPECT_EQ(c["limits"]["memory_bytes"], 96ll << 20);
  EXPECT_EQ(c["limits"]["pids"], 64);
  EXPECT_EQ(c["spec"]["env"], json::array({json::array({"GREETING", "hello"})}));
  // The CLI's view: the same sandbox.
  auto info = runtime::InspectSandbox("api1");
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->record.spec.limits.memory_bytes, 96ll << 20);

  auto r = Exec("api1", {{"command", "echo $GREETING $EXTRA; echo err >&2; exit 3"},
                         {"env", {{"EXTRA", "world"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json o = r.Json();
  EXPECT_EQ(o["status"], "exited");
  EXPECT_EQ(o["exit_code"], 3);
  EXPECT_EQ(o["stdout"], "hello world\n");
  EXPECT_EQ(o["stderr"], "err\n");
  EXPECT_TRUE(o["limit"].is_null());
  EXPECT_TRUE(o.contains("wall_ms"));

  auto argv = Exec("api1", {{"argv", {"/bin/sh", "-c", "pwd"}}, {"workdir", "/tmp"}});
  EXPECT_EQ(argv.Json()["stdout"], "/tmp\n") << argv.body;

  auto timed = Exec("api1", {{"command", "sleep 30"}, {"timeout", 1}});
  ASSERT_EQ(timed.status, 200) << timed.body;
  EXPECT_EQ(timed.Json()["status"], "timed_out");
  EXPECT_EQ(timed.Json()["limit"], "wall_time");
  EXPECT_EQ(timed.Json()["exit_code"], 124);

  auto capped = Exec("api1", {{"command", "head -c 5000 /dev/zero"}, {"output_limit", 1000}});
  EXPECT_EQ(capped.Json()["stdout_bytes"], 5000) << capped.body;
  EXPECT_GT(capped.Json()["stdout_dropped_bytes"].get<int64_t>(), 0);

  auto stats = Get("/sandboxes/api1/stats");
  ASSERT_EQ(stats.status, 200) << stats.body;
  for (const char* key : {"memory_bytes", "cpu_user_usec", "pids", "oom_kills", "limits"}) {
    EXPECT_TRUE(stats.Json().contains(key)) << key << " in " << stats.body;
  }
  auto inspect = Get("/sandboxes/api1");
  EXPECT_EQ(inspect.Json()["spec"]["limits"]["memory_bytes"], 96ll << 20);
  auto list = Get("/sandboxes");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.Json()["count"], 1);
  EXPECT_EQ(list.Json()["sandboxes"][0]["name"], "api1");

  EXPECT_EQ(Post("/sandboxes", {{"name", "api1"}}).status, 409) << "the name is taken";
  auto removed = Api("DELETE", "/api/corral/v1/sandboxes/api1");
  EXPECT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(Get("/sandboxes/api1").status, 404);
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/sandboxes/api1").status, 404);
  EXPECT_FALSE(runtime::InspectSandbox("api1"));
}

// POST .../pause and .../resume; an exec into a paused sandbox resumes it first
// (sandbox.resume_on_call, on by default): the caller never sees "paused".
TEST_F(CorralApiTest, PauseResumeAndAnExecThatResumes) {
  StartDaemon(Config());
  ASSERT_EQ(Post("/sandboxes", {{"name", "pz1"}, {"idle_timeout", 0}}).status, 201);
  auto paused = Post("/sandboxes/pz1/pause", json::object());
  ASSERT_EQ(paused.status, 200) << paused.body << DaemonLog();
  EXPECT_EQ(paused.Json()["state"], "paused");
  EXPECT_TRUE(paused.Json().contains("paused_seconds"));
  EXPECT_EQ(Get("/sandboxes/pz1").Json()["state"], "paused");
  EXPECT_EQ(Post("/sandboxes/pz1/pause", json::object()).status, 200) << "idempotent";
  auto r = Exec("pz1", {{"command", "echo awake"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["stdout"], "awake\n");
  EXPECT_EQ(Get("/sandboxes/pz1").Json()["state"], "running");
  ASSERT_EQ(Post("/sandboxes/pz1/pause", json::object()).status, 200);
  auto resumed = Post("/sandboxes/pz1/resume", json::object());
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(resumed.Json()["state"], "running");
  EXPECT_EQ(Post("/sandboxes/nope/pause", json::object()).status, 404);
}

TEST_F(CorralApiTest, WithoutResumeOnCallAPausedSandboxIsA409) {
  std::string config = Config();
  config.replace(config.find("idle_timeout: 0"), 15, "idle_timeout: 0\n  resume_on_call: false");
  StartDaemon(config);
  ASSERT_EQ(Post("/sandboxes", {{"name", "pz2"}, {"idle_timeout", 0}}).status, 201);
  ASSERT_EQ(Post("/sandboxes/pz2/pause", json::object()).status, 200);
  auto r = Exec("pz2", {{"command", "true"}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("is paused"), std::string::npos) << r.body;
  auto file = Get("/sandboxes/pz2/files?path=/tmp");
  EXPECT_EQ(file.status, 409) << file.body;
  EXPECT_EQ(Get("/sandboxes/pz2").Json()["state"], "paused") << "nothing resumed it";
}

// Volumes over the API: made, mounted by a sandbox's spec, outliving it, refused while in
// use (409), removed; a host_path into corral's volumes is refused (it would bypass that).
TEST_F(CorralApiTest, VolumesAreMadeMountedKeptAndRemoved) {
  StartDaemon(Config());
  auto made = Post("/volumes", {{"name", "api.v1"}});
  ASSERT_EQ(made.status, 201) << made.body << DaemonLog();
  EXPECT_EQ(made.Json()["kind"], "directory");
  EXPECT_EQ(Post("/volumes", {{"name", "api.v1"}}).status, 409);
  EXPECT_EQ(Post("/volumes", {{"name", "../x"}}).status, 422);
  EXPECT_EQ(Post("/volumes", {{"name", "ok"}, {"size", "1M"}}).status, 422) << "too small";
  json mount = {{"volume", "api.v1"}, {"container_path", "/v"}, {"read_only", false}};
  auto sandbox = Post("/sandboxes", {{"name", "vs1"}, {"spec", {{"mounts", {mount}}}}});
  ASSERT_EQ(sandbox.status, 201) << sandbox.body << DaemonLog();
  auto wrote = Exec("vs1", {{"command", "echo kept > /v/f && stat -c %u /v/f"}});
  EXPECT_EQ(wrote.Json()["stdout"], "1000\n") << wrote.body;
  auto busy = Post("/sandboxes", {{"name", "vs2"}, {"spec", {{"mounts", {mount}}}}});
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_NE(busy.body.find("mounted by sandbox vs1 (rw)"), std::string::npos) << busy.body;
  auto in_use = Api("DELETE", "/api/corral/v1/volumes/api.v1");
  EXPECT_EQ(in_use.status, 409) << in_use.body;
  auto info = Get("/volumes/api.v1");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.Json()["mounted_by"], json::array({"sandbox vs1 (rw)"}));
  auto by_path = Post(
      "/sandboxes",
      {{"name", "vs3"},
       {"spec", {{"mounts", {{{"host_path", info.Json()["path"]}, {"container_path", "/v"}}}}}}});
  EXPECT_EQ(by_path.status, 422) << by_path.body;
  EXPECT_EQ(Field(by_path), "spec.mounts[0].host_path") << by_path.body;

  ASSERT_EQ(Api("DELETE", "/api/corral/v1/sandboxes/vs1").status, 200);
  json read_only = mount;
  read_only["read_only"] = true;
  ASSERT_EQ(Post("/sandboxes", {{"name", "vs4"}, {"spec", {{"mounts", {read_only}}}}}).status, 201);
  EXPECT_EQ(Exec("vs4", {{"command", "cat /v/f"}}).Json()["stdout"], "kept\n");
  auto missing = Post(
      "/sandboxes",
      {{"name", "vs5"}, {"spec", {{"mounts", {{{"volume", "nope"}, {"container_path", "/n"}}}}}}});
  EXPECT_EQ(missing.status, 404) << missing.body;
  auto list = Get("/volumes");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.Json()["count"], 1) << list.body;
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/volumes/api.v1?force=true").status, 200);
  EXPECT_EQ(Get("/volumes/api.v1").status, 404);
}

// A workspace overlay's review over the API: the sandbox made as `corral create
// --workspace-overlay` would (the API does not set thread directories), then diff, commit
// and discard.
TEST_F(CorralApiTest, DiffAndCommitAWorkspaceOverlay) {
  StartDaemon(Config());
  TempDir user_data;
  ASSERT_EQ(::chmod(user_data.path().c_str(), 0755), 0);
  runtime::CreateRequest create;
  create.name = "ws1";
  create.spec.user_data_dir = user_data.path();
  create.spec.workspace_overlay = true;
  auto record = runtime::CreateSandbox(create);
  ASSERT_TRUE(record) << record.error().message();
  auto wrote = Exec("ws1", {{"command", "cd /mnt/user-data/workspace && echo x > a && mkdir d"}});
  ASSERT_EQ(wrote.status, 200) << wrote.body;
  auto diff = Get("/sandboxes/ws1/diff");
  ASSERT_EQ(diff.status, 200) << diff.body << DaemonLog();
  EXPECT_EQ(diff.Json()["count"], 2);
  EXPECT_EQ(diff.Json()["changes"][0], (json{{"path", "a"}, {"kind", "added"}, {"type", "f"}}));
  auto commit = Post("/sandboxes/ws1/commit", json::object());
  ASSERT_EQ(commit.status, 200) << commit.body;
  EXPECT_EQ(commit.Json()["written"], 2);
  EXPECT_EQ(ReadFile(user_data.Join("workspace/a")).value(), "x\n");
  EXPECT_EQ(Get("/sandboxes/ws1/diff").Json()["count"], 0);
  ASSERT_EQ(Exec("ws1", {{"command", "echo y > /mnt/user-data/workspace/b"}}).status, 200);
  auto discard = Post("/sandboxes/ws1/commit", {{"discard", true}});
  ASSERT_EQ(discard.status, 200) << discard.body;
  EXPECT_EQ(discard.Json()["removed"], 1);
  EXPECT_EQ(Exec("ws1", {{"command", "ls /mnt/user-data/workspace"}}).Json()["stdout"], "a\nd\n");
  EXPECT_EQ(Post("/sandboxes/ws1/commit", {{"discard", "yes"}}).status, 422);
  ASSERT_EQ(Post("/sandboxes", {{"name", "plain1"}}).status, 201);
  EXPECT_EQ(Get("/sandboxes/plain1/diff").status, 409);
  EXPECT_EQ(Get("/sandboxes/nope/diff").status, 404);
}

TEST_F(CorralApiTest, SnapshotForkAndCreateFromASnapshot) {
  StartDaemon(Config());
  TempDir user_data;
  ASSERT_EQ(::chmod(user_data.path().c_str(), 0755), 0);
  runtime::CreateRequest create;
  create.name = "sn1";
  create.spec.user_data_dir = user_data.path();
  create.spec.workspace_overlay = true;
  auto record = runtime::CreateSandbox(create);
  ASSERT_TRUE(record) << record.error().message();
  ASSERT_EQ(Exec("sn1", {{"command", "echo one > /mnt/user-data/workspace/a"}}).status, 200);
  auto snap = Post("/sandboxes/sn1/snapshot", {{"tag", "s.1"}});
  ASSERT_EQ(snap.status, 201) << snap.body << DaemonLog();
  EXPECT_EQ(snap.Json()["tag"], "s.1");
  EXPECT_EQ(snap.Json()["sandbox"], "sn1");
  EXPECT_EQ(snap.Json()["used_by"], json::array({"sandbox sn1"}));
  EXPECT_EQ(Post("/sandboxes/sn1/snapshot", {{"tag", "s.1"}}).status, 409);
  EXPECT_EQ(Post("/sandboxes/sn1/snapshot", json::object()).status, 422);
  EXPECT_EQ(Post("/sandboxes/sn1/snapshot", {{"tag", "../x"}}).status, 422);

  auto fork = Post("/sandboxes/sn1/fork", {{"name", "fk1"}});
  ASSERT_EQ(fork.status, 201) << fork.body << DaemonLog();
  EXPECT_EQ(fork.Json()["snapshot"], "fk1-fork");
  auto from = Post("/sandboxes", {{"name", "fr1"}, {"from", "s.1"}});
  ASSERT_EQ(from.status, 201) << from.body << DaemonLog();
  ASSERT_EQ(Exec("sn1", {{"command", "echo parent > /mnt/user-data/workspace/a"}}).status, 200);
  ASSERT_EQ(Exec("fk1", {{"command", "echo fork > /mnt/user-data/workspace/b"}}).status, 200);
  auto cat = [&](const std::string& name) {
    return Exec(name, {{"command", "cd /mnt/user-data/workspace && cat *"}}).Json()["stdout"];
  };
  EXPECT_EQ(cat("sn1"), "parent\n");
  EXPECT_EQ(cat("fk1"), "one\nfork\n");
  EXPECT_EQ(cat("fr1"), "one\n");

  auto list = Get("/snapshots");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.Json()["count"], 2);
  EXPECT_GT(list.Json()["budget_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(Get("/snapshots/s.1").Json()["depth"], 1);
  EXPECT_EQ(Get("/snapshots/nope").status, 404);
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/snapshots/s.1", "").status, 409);
  EXPECT_EQ(Post("/sandboxes", {{"name", "fr2"}, {"from", "nope"}}).status, 404);
  EXPECT_EQ(Post("/sandboxes/sn1/fork", {{"name", "a/b"}}).status, 422);
  for (const char* name : {"fr1", "fk1", "sn1"}) {
    ASSERT_EQ(Api("DELETE", std::string("/api/corral/v1/sandboxes/") + name, "").status, 200);
  }
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/snapshots/fk1-fork", "").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/corral/v1/snapshots/s.1", "").status, 200);
  EXPECT_EQ(Get("/snapshots").Json()["count"], 0);
}

TEST_F(CorralApiTest, ErrorsNameTheField) {
  StartDaemon(Config());
  auto check = [&](const json& body, int status, const std::string& field) {
    auto a = Post("/sandboxes", body);
    EXPECT_EQ(a.status, status) << body.dump() << " -> " << a.body;
    EXPECT_EQ(Field(a), field) << body.dump() << " -> " << a.body;
    EXPECT_NE(a.Json()["error"]["message"].get<std::string>().find(field), std::string::npos)
        << "the message names the field: " << a.body;
  };
  check({{"spec", {{"limits", {{"memory", "lots"}}}}}}, 422, "spec.limits.memory");
  check({{"spec", {{"limits", {{"pids", 1}}}}}}, 422, "spec.limits.pids");
  check({{"spec", {{"limits", {{"cpus", 100000}}}}}}, 422, "spec.limits.cpus");
  check({{"spec", {{"limitz", {}}}}}, 422, "spec.limitz");
  check({{"spec", {{"unsafe", {{"allow_root", true}}}}}}, 422, "spec.unsafe");
  check({{"spec", {{"rootfs", "/"}}}}, 422, "spec.rootfs");
  check({{"spec", {{"seccomp", {{"profile", "/etc/passwd"}}}}}}, 422, "spec.seccomp.profile");
  check({{"spec", {{"mounts", {{{"host_path", "/etc"}, {"container_path", "/x"}}}}}}}, 422,
        "spec.mounts[0].host_path");
  check({{"spec",
          {{"mounts", {{{"host_path", dir_.Join("base/../run")}, {"container_path", "/x"}}}}}}},
        422, "spec.mounts[0].host_path");
  check({{"spec", {{"user", {{"uid", 0}}}}}}, 422, "spec.user.uid");
  check({{"name", "a/b"}}, 422, "name");
  check({{"idle_timeout", "soon"}}, 422, "idle_timeout");
  check({{"nmae", "x"}}, 422, "nmae");
  EXPECT_EQ(Api("POST", "/api/corral/v1/sandboxes", "{not json").status, 400);
  EXPECT_TRUE(runtime::ListSandboxes().empty()) << "nothing was created";

  // A mount under sandbox.base_dir is accepted.
  ASSERT_TRUE(dir_.MakeDirs("base/shared"));
  ASSERT_TRUE(dir_.WriteFile("base/shared/f.txt", "shared!"));
  auto ok = Post(
      "/sandboxes",
      {{"name", "m1"},
       {"spec",
        {{"mounts", {{{"host_path", dir_.Join("base/shared")}, {"container_path", "/data"}}}}}}});
  ASSERT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(Exec("m1", {{"argv", {"cat", "/data/f.txt"}}}).Json()["stdout"], "shared!");
  EXPECT_FALSE(ok.Json().contains("warnings")) << ok.body;
  // A read-write mount the sandbox user cannot write (root's, 0755): the create says so,
  // with the host's command that fixes it, as `corral create` does on its terminal.
  ASSERT_EQ(::chmod(dir_.Join("base/shared").c_str(), 0755), 0);
  auto unwritable = Post("/sandboxes", {{"name", "m2"},
                                        {"spec",
                                         {{"mounts",
                                           {{{"host_path", dir_.Join("base/shared")},
                                             {"container_path", "/data"},
                                             {"read_only", false}}}}}}});
  ASSERT_EQ(unwritable.status, 201) << unwritable.body;
  ASSERT_TRUE(unwritable.Json().contains("warnings")) << unwritable.body;
  EXPECT_NE(unwritable.Json()["warnings"].dump().find("On the host: chown -R "), std::string::npos)
      << unwritable.body;

  auto exec_check = [&](const json& body, const std::string& field) {
    auto a = Exec("m1", body);
    EXPECT_EQ(a.status, 422) << body.dump() << " -> " << a.body;
    EXPECT_EQ(Field(a), field) << body.dump() << " -> " << a.body;
  };
  exec_check({{"argv", "ls"}}, "argv");
  exec_check({{"argv", {"ls", 3}}}, "argv[1]");
  exec_check({{"argv", {"ls"}}, {"command", "ls"}}, "argv");
  exec_check(json::object(), "argv");
  exec_check({{"command", "ls"}, {"timeout", -1}}, "timeout");
  exec_check({{"command", "ls"}, {"env", {{"BAD NAME", "x"}}}}, "env.BAD NAME");
  exec_check({{"command", "ls"}, {"workdir", "tmp"}}, "workdir");
  exec_check({{"command", "ls"}, {"output_limit", "huge"}}, "output_limit");
  exec_check({{"command", "ls"}, {"stdin", "x"}}, "stdin");

  // 401 without the key, before routing; 404 for an unknown sandbox.
  EXPECT_EQ(Curl("GET", Url("/api/corral/v1/sandboxes"), "", {}, false).status, 401);
  EXPECT_EQ(Curl("GET", Url("/api/corral/v1/openapi.json"), "", {"X-API-Key: wrong"}, false).status,
            401);
  for (const char* path :
       {"/sandboxes/nosuch", "/sandboxes/nosuch/stats",
        "/sandboxes/nosuch/files?path=/etc/hostname", "/sandboxes/nosuch/ls?path=/"}) {
    auto a = Get(path);
    EXPECT_EQ(a.status, 404) << path << " " << a.body;
    EXPECT_EQ(a.Json()["error"]["code"], "not_found") << path << " " << a.body;
  }
  EXPECT_EQ(Exec("nosuch", {{"command", "true"}}).status, 404);
  EXPECT_EQ(Get("/nothing-here").status, 404);
  EXPECT_EQ(Api("PATCH", "/api/corral/v1/sandboxes/m1").status, 405);
}

TEST_F(CorralApiTest, FilesRoundTripAndEscapes) {
  StartDaemon(Config());
  ASSERT_EQ(Post("/sandboxes", {{"name", "f1"}}).status, 201);
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>(i * 7 % 256));
  auto put = Api("PUT", "/api/corral/v1/sandboxes/f1/files?path=/tmp/d/sub/blob.bin", bytes);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.Json()["bytes"], bytes.size());
  auto got = Get("/sandboxes/f1/files?path=/tmp/d/sub/blob.bin");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body, bytes) << "binary bytes come back unchanged";
  auto seen =
      Exec("f1", {{"command", "wc -c < /tmp/d/sub/blob.bin; stat -c %u /tmp/d/sub/blob.bin"}});
  EXPECT_EQ(seen.Json()["stdout"], "4096\n1000\n") << seen.body;
  auto ls = Get("/sandboxes/f1/ls?path=/tmp/d&depth=2");
  ASSERT_EQ(ls.status, 200) << ls.body;
  bool found = false;
  const json listing = ls.Json();
  for (const auto& e : listing["entries"]) {
    if (e["path"] == "/tmp/d/sub/blob.bin") {
      found = true;
      EXPECT_EQ(e["type"], "file");
      EXPECT_EQ(e["size"], 4096);
    }
  }
  EXPECT_TRUE(found) << ls.body;

  // Escapes: a host file outside the sandbox is neither read nor written. ".." stops at
  // the sandbox's root (so "/../../<host path>" names that path inside the sandbox), a
  // symlink resolves inside it, /proc/<pid>/root is refused.
  ASSERT_TRUE(dir_.WriteFile("secret.txt", "HOST-SECRET-31337"));
  const std::string host = dir_.Join("secret.txt");
  (void)Exec("f1", {{"command", "ln -s / /tmp/rootlink; ln -s /proc/1/root /tmp/initroot"}});
  for (const std::string& p :
       {"/../../../../" + host, "/proc/1/root" + host, "/tmp/rootlink/../.." + host,
        "/tmp/initroot/../../.." + host, "/proc/self/root/../../" + host, "/proc/1/cwd" + host}) {
    auto a = Get("/sandboxes/f1/files?path=" + p);
    EXPECT_EQ(a.body.find("HOST-SECRET"), std::string::npos) << p << " leaked the host file";
    (void)Api("PUT", "/api/corral/v1/sandboxes/f1/files?path=" + p, "overwritten");
  }
  std::ifstream in(host);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "HOST-SECRET-31337") << "the host file is unchanged";
  // The writes that were allowed landed inside the sandbox.
  auto inside = Exec("f1", {{"argv", {"cat", host}}});
  EXPECT_EQ(inside.Json()["stdout"], "overwritten") << inside.body;
  auto proc = Get("/sandboxes/f1/files?path=/proc/1/root" + host);
  EXPECT_EQ(proc.status, 403) << proc.body;
  auto relative = Get("/sandboxes/f1/files?path=tmp/x");
  EXPECT_EQ(relative.status, 422) << relative.body;
  EXPECT_EQ(Field(relative), "path");
  auto missing = Get("/sandboxes/f1/files");
  EXPECT_EQ(Field(missing), "path");
  EXPECT_EQ(Get("/sandboxes/f1/files?path=/tmp/none").status, 404);
  EXPECT_EQ(Get("/sandboxes/f1/files?path=/tmp/d").status, 422) << "a directory";
}

TEST_F(CorralApiTest, ProvisionerSandboxesAndParallelExecs) {
  StartDaemon(Config());
  ASSERT_EQ(Api("POST", "/api/sandboxes", CreateBody("p1", "t1")).status, 200) << DaemonLog();
  auto list = Get("/sandboxes");
  ASSERT_EQ(list.Json()["count"], 1) << list.body;
  EXPECT_EQ(list.Json()["sandboxes"][0]["name"], "df-p1");
  EXPECT_EQ(Exec("df-p1", {{"command", "ls -d /mnt/user-data"}}).Json()["stdout"],
            "/mnt/user-data\n");
  // More execs at once than the daemon has I/O threads (2) or workers (4); each answers
  // with its own output.
  std::vector<std::thread> threads;
  std::vector<json> outcomes(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      outcomes[i] = Exec("df-p1", {{"command", "sleep 1; echo " + std::to_string(i)}}).Json();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(outcomes[i]["stdout"], std::to_string(i) + "\n");
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/p1").status, 200);
}

TEST_F(CorralApiTest, ExecsBeyondMaxExecsGet429WithRetryAfter) {
  StartDaemon(Config("  max_execs: 1\n"));
  auto created = Post("/sandboxes", {{"name", "gate1"}, {"idle_timeout", 0}});
  ASSERT_EQ(created.status, 201) << created.body << DaemonLog();
  std::thread slow([&] { EXPECT_EQ(Exec("gate1", {{"command", "sleep 3"}}).status, 200); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto busy =
      Curl("POST", Url("/api/corral/v1/sandboxes/gate1/exec"), "", {}, true,
           {"--data-binary", json({{"command", "true"}}).dump(), "-D", dir_.Join("headers")});
  EXPECT_EQ(busy.status, 429) << busy.body;
  EXPECT_EQ(busy.Json()["error"]["code"], "too_many_execs") << busy.body;
  std::ifstream in(dir_.Join("headers"));
  std::stringstream headers;
  headers << in.rdbuf();
  EXPECT_NE(server::ToLower(headers.str()).find("retry-after: 1"), std::string::npos)
      << headers.str();
  // A code run counts against the same gate.
  auto code = Post("/sandboxes/gate1/code", {{"code", "print(1)"}});
  EXPECT_EQ(code.status, 429) << code.body;
  slow.join();
  // The slot is free again once the running exec has answered.
  auto after = Exec("gate1", {{"command", "echo free"}});
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.Json()["stdout"], "free\n");
}

TEST_F(CorralApiTest, IdleTimeoutRemovesTheSandbox) {
  StartDaemon(Config());
  auto created = Post("/sandboxes", {{"name", "idle1"}, {"idle_timeout", 1}});
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["idle_timeout_seconds"], 1.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Past its idle timeout: gone from the list (and so from the host) the next time anyone
  // looks, as with `corral ps`; the daemon's reaper thread also removes it on its own.
  EXPECT_EQ(Get("/sandboxes").Json()["count"], 0);
  EXPECT_EQ(Get("/sandboxes/idle1").status, 404);
}

// POST .../code: `corral code run --sandbox` over HTTP, under the daemon's python: policy
// (a request cannot change it); the Python module's daemon mode creates, runs and removes.
TEST_F(CorralApiTest, CodeRouteRunsUnderTheDaemonsPolicy) {
  StartDaemon(Config() + "python:\n  allowlist: [json]\n");
  ASSERT_EQ(Post("/sandboxes", {{"name", "code1"}}).status, 201) << DaemonLog();
  auto ok = Post("/sandboxes/code1/code", {{"code", "import json\nprint(json.dumps([1]))\n"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.Json()["status"], "ok") << ok.body;
  EXPECT_EQ(ok.Json()["stdout"], "[1]\n");
  EXPECT_EQ(ok.Json()["exit_code"], 0);

  auto refused = Post("/sandboxes/code1/code", {{"code", "import json\n\neval('1')\n"}});
  ASSERT_EQ(refused.status, 200) << refused.body;
  json r = refused.Json();
  EXPECT_EQ(r["status"], "refused") << refused.body;
  ASSERT_EQ(r["findings"].size(), 1u) << refused.body;
  EXPECT_EQ(r["findings"][0]["line"], 3);
  EXPECT_EQ(r["findings"][0]["name"], "eval");
  EXPECT_EQ(r["findings"][0]["key"], "python.scan.deny_calls");

  auto denied = Post("/sandboxes/code1/code", {{"code", "import requests\n"}});
  EXPECT_EQ(denied.Json()["status"], "error") << denied.body;
  EXPECT_NE(denied.Json()["stderr"].get<std::string>().find(
                "module 'requests' is not allowed (python.allowlist)"),
            std::string::npos)
      << denied.body;

  auto timed = Post("/sandboxes/code1/code", {{"code", "while True:\n    pass\n"}, {"timeout", 1}});
  EXPECT_EQ(timed.Json()["status"], "timeout") << timed.body;
  EXPECT_EQ(timed.Json()["limit"], "wall_time");

  EXPECT_EQ(Field(Post("/sandboxes/code1/code", {{"code", 3}})), "code");
  EXPECT_EQ(Field(Post("/sandboxes/code1/code", {{"code", "1"}, {"lang", "ruby"}})), "lang");
  EXPECT_EQ(Field(Post("/sandboxes/code1/code", {{"code", "1"}, {"policy", {}}})), "policy");
  EXPECT_EQ(Post("/sandboxes/nosuch/code", {{"code", "1"}}).status, 404);

  // corral.Executor against the daemon: a sandbox of its own, removed by close().
  ASSERT_TRUE(dir_.WriteFile("client.py", R"PY(
import json, sys
from corral import Executor
with Executor(url=sys.argv[1], api_key=sys.argv[2]) as ex:
    r = ex.run("print(6 * 7)")
    print(json.dumps({"stdout": r.stdout, "status": r.status, "sandbox": ex.sandbox}))
)PY"));
  RunOptions options;
  options.env = {"PYTHONPATH=" + SourceDir() + "/python"};
  auto client = RunProgram("/usr/bin/python3", {dir_.Join("client.py"), Url(""), kKey}, options);
  ASSERT_TRUE(client) << client.error().message();
  ASSERT_EQ(client->exit_code, 0) << client->Describe();
  json c = json::parse(client->out, nullptr, false);
  EXPECT_EQ(c["stdout"], "42\n") << client->out;
  EXPECT_EQ(c["status"], "ok");
  EXPECT_EQ(Get("/sandboxes").Json()["count"], 1) << "the client's sandbox is gone; code1 stays";
}

// Every operation of the OpenAPI document reaches a handler of the running daemon (not the
// router's unknown-route 404, not 405), and every route CorralApi serves is documented.
TEST_F(CorralApiTest, OpenApiDocumentMatchesTheRoutes) {
  StartDaemon(Config());
  auto doc = Get("/openapi.json");
  ASSERT_EQ(doc.status, 200);
  json d = doc.Json();
  ASSERT_TRUE(d.is_object()) << "openapi.json parses";
  EXPECT_EQ(d["openapi"].get<std::string>().rfind("3.", 0), 0u);
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : d["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") continue;
      std::string upper = method;
      for (char& ch : upper) ch = static_cast<char>(std::toupper(ch));
      documented.emplace(upper, path);
      std::string concrete = path;
      for (const char* p : {"{name}", "{sandbox_id}"}) {
        if (size_t at = concrete.find(p); at != std::string::npos) {
          concrete.replace(at, std::string(p).size(), "nosuch");
        }
      }
      if (concrete.find("/files") != std::string::npos ||
          concrete.find("/ls") != std::string::npos) {
        concrete += "?path=/tmp";
      }
      auto a = Curl(upper, Url(concrete), upper == "POST" || upper == "PUT" ? "{}" : "");
      EXPECT_NE(a.status, 405) << upper << " " << concrete << " " << a.body;
      EXPECT_NE(a.status, 0) << upper << " " << concrete;
      EXPECT_EQ(a.body.find("no route"), std::string::npos) << upper << " " << concrete;
      EXPECT_NE(a.body, R"({"detail":"Not Found"})") << upper << " " << concrete;
    }
  }
  for (const auto& route : server::CorralApi::Routes()) {
    EXPECT_EQ(documented.count(route), 1u) << route.first << " " << route.second;
  }
  for (const auto& route : documented) {
    if (route.second.rfind("/api/corral/v1/", 0) != 0) continue;
    auto routes = server::CorralApi::Routes();
    EXPECT_NE(std::find(routes.begin(), routes.end(), route), routes.end())
        << "documented but not served: " << route.first << " " << route.second;
  }
}

}  // namespace
}  // namespace corral::test
