// `corral serve` under faults (docs/reliability.md): kill -9 in the middle of a long
// command and of a file write, SIGTERM under load, a full disk under one thread's data, a
// record in the store that cannot be read, and hundreds of slow clients. Each drill checks
// that no sandbox, file or background process is lost and that the rest is served. Root
// only; leak-checked.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/files.h"
#include "base/scope_guard.h"
#include "tests/integration/serve_fixture.h"

namespace corral::test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class ServeFaultsTest : public ServeTest {
 protected:
  // The host path of a thread's /mnt/user-data/workspace.
  std::string Workspace(const std::string& thread) const {
    return dir_.Join("base/users/default/threads/" + thread + "/user-data/workspace");
  }
  // `config` (the fixture's by default) with one `key: value` of its server section changed.
  std::string ConfigWith(const std::string& key, const std::string& value,
                         std::string config = "") const {
    if (config.empty()) config = Config();
    const size_t at = config.find("  " + key + ": ");
    EXPECT_NE(at, std::string::npos) << key;
    const size_t end = config.find('\n', at);
    return config.replace(at, end - at, "  " + key + ": " + value);
  }
  std::string Create(const std::string& id, const std::string& thread) {
    auto created = Api("POST", "/api/sandboxes", CreateBody(id, thread));
    EXPECT_EQ(created.status, 200) << created.body << DaemonLog();
    return created.status == 200 ? created.Json()["sandbox_url"].get<std::string>() : "";
  }
  // A JSON POST to a sandbox URL. Small bodies go on curl's command line, so that calls
  // from several threads never share the fixture's body file.
  HttpAnswer Post(const std::string& url, const json& body) {
    const std::string text = body.dump();
    if (text.size() > 64 * 1024) return Curl("POST", url, text, {}, false);
    return Curl("POST", url, "", {"Content-Type: application/json"}, false,
                {"--data-binary", text});
  }
  HttpAnswer Shell(const std::string& url, const std::string& command) {
    return Post(url + "/v1/shell/exec", {{"command", command}});
  }
  HttpAnswer WriteFile(const std::string& url, const std::string& path, const std::string& text) {
    return Post(url + "/v1/file/write", {{"file", path}, {"content", text}});
  }
  // The daemon again on the same port: sandbox URLs name it.
  void Restart(const std::string& extra_server = "") {
    const int port = port_;
    StopDaemon(SIGKILL);
    StartDaemon(Config(extra_server, port));
  }
  static std::string Contents(const std::string& path) {
    auto text = ReadFile(path);
    return text ? *text : "";
  }
  // Names in `dir` left by writes that did not finish.
  std::vector<std::string> Partials(const std::string& dir) const {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename();
      if (name.find(".corral-partial-") != std::string::npos) out.push_back(name);
    }
    return out;
  }
};

// A record that cannot be read: the daemon starts, names it and why, removes what was
// left of its own sandbox (a create of the id then makes a new one over the same thread
// files), and serves the other sandboxes; `corral ps` names a corrupt record of another
// sandbox instead of leaving a silent gap, and `corral rm` removes it.
TEST_F(ServeFaultsTest, AnUnreadableRecordIsNamedAndTheRestIsServed) {
  StartDaemon(Config());
  const std::string bad = Create("rec1", "t-rec1"), good = Create("rec2", "t-rec2");
  ASSERT_FALSE(bad.empty() || good.empty());
  ASSERT_EQ(WriteFile(bad, "/mnt/user-data/workspace/kept.txt", "thread data").status, 200);
  ASSERT_EQ(Shell(good, "echo before > /mnt/user-data/workspace/g.txt").status, 200);
  auto plain = RunCorral({"create", "--name", "plain-rec"});
  ASSERT_TRUE(plain && plain->exit_code == 0) << (plain ? plain->err : "");
  const int port = port_;
  StopDaemon(SIGKILL);
  const std::string store = dir_.Join("run/sandboxes/");
  ASSERT_TRUE(corral::WriteFile(store + "df-rec1/state.json", "{\"name\": \"df-rec1\", \"sp"));
  ASSERT_TRUE(corral::WriteFile(store + "plain-rec/state.json", "not json at all"));

  StartDaemon(Config("", port));
  const std::string log = DaemonLog();
  EXPECT_NE(log.find("df-rec1: its record " + store + "df-rec1/state.json cannot be read"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("plain-rec: its record"), std::string::npos) << log;
  EXPECT_EQ(Shell(good, "cat /mnt/user-data/workspace/g.txt").Json()["data"]["output"], "before\n");
  const std::string again = Create("rec1", "t-rec1");
  ASSERT_FALSE(again.empty());
  auto kept = Shell(again, "cat /mnt/user-data/workspace/kept.txt");
  EXPECT_EQ(kept.Json()["data"]["output"], "thread data") << kept.body;

  auto ps = RunCorral({"ps"});
  ASSERT_TRUE(ps);
  EXPECT_EQ(ps->exit_code, 0);
  EXPECT_NE(ps->err.find("sandbox plain-rec is not listed: its record cannot be read"),
            std::string::npos)
      << ps->err;
  auto rm = RunCorral({"rm", "plain-rec"});
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->exit_code, 0) << rm->err;
  auto after = RunCorral({"ps"});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->err.find("plain-rec"), std::string::npos) << after->err;
  EXPECT_FALSE(std::filesystem::exists(store + "plain-rec"));
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/rec1").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/rec2").status, 200);
}

// One thread's data on a full disk (a 2 MiB tmpfs under its thread directory): the write
// that does not fit fails with a clear message and keeps the old content of the file it
// would have replaced; that sandbox's shell and the other sandboxes work on; once space is
// freed the same write succeeds.
TEST_F(ServeFaultsTest, AFullDiskFailsTheWriteClearlyAndNothingElse) {
  const std::string thread_dir = dir_.Join("base/users/default/threads/t-full");
  ASSERT_EQ(std::system(("mkdir -p " + thread_dir).c_str()), 0);
  ASSERT_EQ(::mount("tmpfs", thread_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=2m"), 0)
      << std::strerror(errno);
  ScopeGuard unmount([&] { ::umount2(thread_dir.c_str(), MNT_DETACH); });
  StartDaemon(Config());
  const std::string full = Create("full1", "t-full"), other = Create("roomy1", "t-roomy");
  ASSERT_FALSE(full.empty() || other.empty());
  const std::string a(600 * 1024, 'a'), b(600 * 1024, 'b'), c(900 * 1024, 'c');
  ASSERT_EQ(WriteFile(full, "/mnt/user-data/workspace/a.txt", a).Json()["success"], true);
  ASSERT_EQ(WriteFile(full, "/mnt/user-data/workspace/b.txt", b).Json()["success"], true);

  auto no_room = WriteFile(full, "/mnt/user-data/workspace/c.txt", c);
  EXPECT_EQ(no_room.Json()["success"], false) << no_room.body.substr(0, 300);
  EXPECT_NE(no_room.body.find("No space left on device"), std::string::npos)
      << no_room.body.substr(0, 300);
  // Replacing a.txt does not fit either: a.txt keeps its old content, whole.
  auto replace = WriteFile(full, "/mnt/user-data/workspace/a.txt", c);
  EXPECT_EQ(replace.Json()["success"], false) << replace.body.substr(0, 300);
  EXPECT_EQ(Contents(Workspace("t-full") + "/a.txt"), a);
  EXPECT_TRUE(Partials(Workspace("t-full")).empty());

  EXPECT_EQ(Shell(full, "echo still here").Json()["data"]["output"], "still here\n");
  EXPECT_EQ(WriteFile(other, "/mnt/user-data/workspace/c.txt", c).Json()["success"], true);
  EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200);

  ASSERT_EQ(Shell(full, "rm /mnt/user-data/workspace/b.txt").status, 200);
  EXPECT_EQ(WriteFile(full, "/mnt/user-data/workspace/c.txt", c).Json()["success"], true);
  EXPECT_EQ(Contents(Workspace("t-full") + "/c.txt"), c);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/full1").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/roomy1").status, 200);
}

// kill -9 of the daemon while it writes a large file over an older one: after a restart
// the name holds the old content or the new, whole — never a truncated or mixed file.
// The kill is sent the moment the write is seen under way (its temporary file exists, or
// — for a writer that writes in place — the file has a size between old and new).
TEST_F(ServeFaultsTest, KillNineDuringAFileWriteLeavesTheOldContentOrTheNew) {
  // The fixture's 3 s to read a body is too short for 48 MiB into an ASan build.
  StartDaemon(ConfigWith("body_timeout", "60", ConfigWith("max_body_bytes", "300m")));
  const std::string url = Create("fw1", "t-fw");
  ASSERT_FALSE(url.empty());
  const std::string old_text(8 << 20, 'o'), new_text(48 << 20, 'n');
  const std::string file = Workspace("t-fw") + "/big.txt";
  ASSERT_EQ(WriteFile(url, "/mnt/user-data/workspace/big.txt", old_text).Json()["success"], true);
  ASSERT_TRUE(dir_.WriteFile(
      "body", json({{"file", "/mnt/user-data/workspace/big.txt"}, {"content", new_text}}).dump()));
  Result<RunResult> written = Error(ErrorCode::kIo, "not run");
  std::thread writer([&] {
    written = RunProgram("/usr/bin/curl", {"-sS", "--max-time", "60", "-X", "POST", "-H",
                                           "Content-Type: application/json", "--data-binary",
                                           "@" + dir_.Join("body"), url + "/v1/file/write"});
  });
  bool under_way = false;
  for (auto end = Clock::now() + std::chrono::seconds(60); !under_way && Clock::now() < end;) {
    struct stat st {};
    const bool in_place = ::stat(file.c_str(), &st) == 0 && st.st_size != (8 << 20);
    under_way = in_place || !Partials(Workspace("t-fw")).empty();
    if (!under_way) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const int port = port_;
  StopDaemon(SIGKILL);
  writer.join();
  ASSERT_TRUE(under_way) << "the write was never seen under way; curl: "
                         << (written ? written->out.substr(0, 300) + written->err
                                     : written.error().message())
                         << "\n"
                         << DaemonLog();

  StartDaemon(Config("", port));
  auto content = ReadFile(file);
  ASSERT_TRUE(content);
  EXPECT_TRUE(*content == old_text || *content == new_text)
      << "big.txt holds " << content->size() << " bytes, neither the old file nor the new";
  std::cerr << "[figure] kill -9 during a 48 MiB write: big.txt held the "
            << (*content == old_text ? "old" : "new")
            << " content; leftover temporary files: " << Partials(Workspace("t-fw")).size() << "\n";
  EXPECT_EQ(Shell(url, "wc -c < /mnt/user-data/workspace/big.txt").status, 200);
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/fw1").status, 200);
}

// kill -9 of the daemon while a shell command runs: after a restart the sandbox answers
// on the same URL, its files are there, and a background process started before the kill
// still runs.
TEST_F(ServeFaultsTest, KillNineDuringALongCommandKeepsTheSandboxAndItsBackgroundProcess) {
  StartDaemon(Config());
  const std::string url = Create("lc1", "t-lc");
  ASSERT_FALSE(url.empty());
  ASSERT_EQ(WriteFile(url, "/mnt/user-data/workspace/note.txt", "written before").status, 200);
  auto started = Shell(url,
                       "nohup sh -c 'while :; do date +%s%N > /mnt/user-data/workspace/tick; "
                       "sleep 0.1; done' > /dev/null 2>&1 & echo started");
  ASSERT_EQ(started.Json()["data"]["output"], "started\n") << started.body;
  std::thread caller([&] { Shell(url, "sleep 30"); });
  std::this_thread::sleep_for(milliseconds(1000));
  Restart();
  caller.join();

  auto read_tick = [&] { return Contents(Workspace("t-lc") + "/tick"); };
  const std::string first = read_tick();
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_NE(read_tick(), first) << "the background process stopped with the daemon";
  auto note = Shell(url, "cat /mnt/user-data/workspace/note.txt");
  EXPECT_EQ(note.Json()["data"]["output"], "written before") << note.body;
  EXPECT_EQ(Api("DELETE", "/api/sandboxes/lc1").status, 200);
}

// SIGTERM while 16 clients keep calling: the daemon exits 0 within shutdown_grace and a
// little, every call that got an answer got 200 or 503 (never a 500), and the sandboxes
// are kept for the next daemon.
TEST_F(ServeFaultsTest, SigtermUnderLoadDrainsWithinItsDeadline) {
  StartDaemon(Config("  shutdown_grace: 3\n"));
  constexpr int kSandboxes = 4, kClients = 16;
  std::vector<std::string> urls;
  for (int i = 0; i < kSandboxes; ++i) {
    urls.push_back(Create("term" + std::to_string(i), "t-term" + std::to_string(i)));
    ASSERT_FALSE(urls.back().empty());
  }
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<int, int> answers;  // HTTP status (0: no answer: refused or closed) -> count
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const std::string& url = urls[c % kSandboxes];
      for (int i = 0; !stop; ++i) {
        HttpAnswer a = i % 2 ? Shell(url, "sleep 0.2; echo " + std::to_string(i))
                             : WriteFile(url, "/mnt/user-data/workspace/c" + std::to_string(c),
                                         std::to_string(i));
        std::lock_guard<std::mutex> lock(mu);
        ++answers[a.status];
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(2000));
  const auto signalled = Clock::now();
  const int port = port_;
  const int status = StopDaemon(SIGTERM);
  const double seconds = std::chrono::duration<double>(Clock::now() - signalled).count();
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << DaemonLog();
  EXPECT_LT(seconds, 3 + 2.0) << "shutdown_grace is 3 s";
  std::string seen;
  for (const auto& [code, n] : answers)
    seen += std::to_string(code) + ":" + std::to_string(n) + " ";
  std::cerr << "[figure] SIGTERM under " << kClients << " clients: exit after " << seconds
            << " s; answers by status " << seen << "\n";
  for (const auto& [code, n] : answers) {
    EXPECT_TRUE(code == 200 || code == 503 || code == 0) << n << " answers of " << code;
  }
  EXPECT_GT(answers[200], kClients) << seen;
  StartDaemon(Config("", port));
  for (int i = 0; i < kSandboxes; ++i) {
    EXPECT_EQ(Shell(urls[i], "echo back").Json()["data"]["output"], "back\n") << i;
    EXPECT_EQ(Api("DELETE", "/api/sandboxes/term" + std::to_string(i)).status, 200);
  }
}

// 500 slow connections from ten loopback addresses (each under the per-address limit)
// that send their headers a byte at a time: /health and a whole create / command / delete
// of another client still answer within 2 s each, and no slow connection is refused.
TEST_F(ServeFaultsTest, FiveHundredSlowClientsDoNotStarveTheOthers) {
  StartDaemon(ConfigWith("header_timeout", "20"));
  constexpr int kAddresses = 10, kPerAddress = 50;
  std::vector<UniqueFd> slow;
  const std::string partial = "GET /health HTTP/1.1\r\nHost: " + Authority() + "\r\nX-Slow: ";
  for (int a = 0; a < kAddresses; ++a) {
    for (int i = 0; i < kPerAddress; ++i) {
      UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in from{}, to{};
      from.sin_family = to.sin_family = AF_INET;
      from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 2 + a);  // 127.0.0.2 ...
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      to.sin_port = htons(static_cast<uint16_t>(port_));
      ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
      ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&to), sizeof to), 0)
          << std::strerror(errno);
      ASSERT_EQ(::write(fd.get(), partial.data(), 1), 1);
      slow.push_back(std::move(fd));
    }
  }
  // A few more bytes each, so that every connection is a live slow client.
  for (int round = 1; round <= 3; ++round) {
    for (auto& fd : slow) (void)!::write(fd.get(), partial.data() + round, 1);
    std::this_thread::sleep_for(milliseconds(200));
  }
  auto timed = [&](const char* what, auto call) {
    const auto start = Clock::now();
    call();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << what;
    std::cerr << "[figure] with " << slow.size() << " slow connections open: " << what << " in "
              << seconds * 1000 << " ms\n";
  };
  timed("GET /health", [&] { EXPECT_EQ(Curl("GET", Url("/health"), "", {}, false).status, 200); });
  std::string url;
  timed("create", [&] { url = Create("busy1", "t-busy"); });
  ASSERT_FALSE(url.empty());
  timed("shell/exec", [&] { EXPECT_EQ(Shell(url, "echo ok").Json()["data"]["output"], "ok\n"); });
  timed("delete", [&] { EXPECT_EQ(Api("DELETE", "/api/sandboxes/busy1").status, 200); });
  // The slow connections were all still open and unanswered: none was refused.
  size_t open = 0;
  for (auto& fd : slow) {
    pollfd p{fd.get(), POLLIN, 0};
    open += ::poll(&p, 1, 0) == 0;
  }
  EXPECT_EQ(open, slow.size());
}

}  // namespace
}  // namespace corral::test
