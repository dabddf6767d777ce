// Streamed exec of corral's own API (server/corral_api/stream.h), black-box: a real
// `corral serve` on loopback and a raw-socket client that decodes the chunked body and the
// server-sent events as they arrive. The command waits for a file the test creates only
// after it has seen the first event: a server that buffered the output until the end
// would never send that event, and the test would fail (bounded wait), never hang.
// Also: the output cap, the timeout, the client's going ending the command, and bad
// input. Root only; leak-checked.
#include <dirent.h>
#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <sstream>

#include "tests/integration/serve_fixture.h"

namespace corral::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct SseEvent {
  std::string name;
  json data;
};

// One streamed request over a raw socket, read incrementally.
class EventReader {
 public:
  EventReader(int port, const std::string& request) {
    fd_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      connected_ = ::write(fd_.get(), request.data(), request.size()) ==
                   static_cast<ssize_t>(request.size());
    }
  }
  bool connected() const { return connected_; }
  const std::string& head() const { return head_; }
  bool ended() const { return ended_; }
  void Close() { fd_.Reset(); }

  // The next event, or nullopt at the end of the body or after `wait`.
  std::optional<SseEvent> Next(std::chrono::seconds wait = std::chrono::seconds(30)) {
    const auto until = Clock::now() + wait;
    for (;;) {
      if (auto e = TakeEvent()) return e;
      if (ended_ || !fd_.valid() || Clock::now() >= until) return std::nullopt;
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[8192];
      ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n <= 0) {
        fd_.Reset();
        continue;
      }
      raw_.append(buf, static_cast<size_t>(n));
      Decode();
    }
  }
  // Every remaining event up to the end of the body.
  std::vector<SseEvent> Rest() {
    std::vector<SseEvent> all;
    while (auto e = Next()) all.push_back(std::move(*e));
    return all;
  }

 private:
  // Header, then chunked framing, into `body_`.
  void Decode() {
    if (head_.empty()) {
      size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      head_ = raw_.substr(0, end + 4);
      raw_.erase(0, end + 4);
    }
    for (;;) {
      size_t eol = raw_.find("\r\n");
      if (eol == std::string::npos) return;
      const size_t size = std::stoul(raw_.substr(0, eol), nullptr, 16);
      if (raw_.size() < eol + 2 + size + 2) return;
      if (size == 0) {
        ended_ = true;
        return;
      }
      body_.append(raw_, eol + 2, size);
      raw_.erase(0, eol + 2 + size + 2);
    }
  }
  std::optional<SseEvent> TakeEvent() {
    size_t end = body_.find("\n\n");
    if (end == std::string::npos) return std::nullopt;
    std::string block = body_.substr(0, end);
    body_.erase(0, end + 2);
    SseEvent e;
    std::istringstream lines(block);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("event: ", 0) == 0) e.name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) e.data = json::parse(line.substr(6), nullptr, false);
    }
    return e;
  }

  UniqueFd fd_;
  bool connected_ = false;
  std::string raw_, head_, body_;
  bool ended_ = false;
};

// Host pids whose command line contains `needle` (the test is root in the host's pid
// namespace, so it sees the sandbox's processes too).
std::vector<pid_t> PidsRunning(const std::string& needle) {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(needle) != std::string::npos) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

class ExecStreamTest : public ServeTest {
 protected:
  void CreateSandbox(const std::string& name) {
    auto created =
        Api("POST", "/api/corral/v1/sandboxes", json{{"name", name}, {"idle_timeout", 0}}.dump());
    ASSERT_EQ(created.status, 201) << created.body << DaemonLog();
  }
  std::string StreamRequest(const std::string& name, const json& body,
                            const std::string& extra_headers = "") {
    const std::string b = body.dump();
    return "POST /api/corral/v1/sandboxes/" + name + "/exec HTTP/1.1\r\nHost: " + Authority() +
           "\r\nX-API-Key: " + kKey + "\r\nContent-Type: application/json\r\n" + extra_headers +
           "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  }
  // The text of every `which` event, concatenated.
  static std::string Text(const std::vector<SseEvent>& events, const std::string& which) {
    std::string all;
    for (const auto& e : events) {
      if (e.name == which) all += e.data["text"].get<std::string>();
    }
    return all;
  }
  json Exec(const std::string& name, const std::string& command) {
    return Curl("POST", Url("/api/corral/v1/sandboxes/" + name + "/exec"), "", {}, true,
                {"--data-binary", json{{"command", command}}.dump()})
        .Json();
  }
};

TEST_F(ExecStreamTest, OutputArrivesWhileTheCommandRuns) {
  StartDaemon(Config());
  CreateSandbox("st1");
  EventReader reader(port_,
                     StreamRequest("st1", {{"command",
                                            "echo first; echo warn >&2; while [ ! -e /tmp/go ]; do "
                                            "sleep 0.05; done; echo second; exit 4"},
                                           {"stream", true}}));
  ASSERT_TRUE(reader.connected());
  // The first stdout event comes while the command is still waiting for /tmp/go.
  std::vector<SseEvent> early;
  while (Text(early, "stdout").find("first") == std::string::npos) {
    auto e = reader.Next();
    ASSERT_TRUE(e) << "no stdout event while the command runs; head: " << reader.head();
    ASSERT_NE(e->name, "exit") << "the command ended without the test's go";
    early.push_back(std::move(*e));
  }
  EXPECT_NE(reader.head().find("200"), std::string::npos) << reader.head();
  EXPECT_NE(reader.head().find("text/event-stream"), std::string::npos) << reader.head();
  EXPECT_NE(reader.head().find("chunked"), std::string::npos) << reader.head();
  EXPECT_EQ(Exec("st1", "touch /tmp/go")["exit_code"], 0);

  std::vector<SseEvent> events = early;
  for (auto& e : reader.Rest()) events.push_back(std::move(e));
  EXPECT_TRUE(reader.ended()) << "no last chunk";
  EXPECT_EQ(Text(events, "stdout"), "first\nsecond\n");
  EXPECT_EQ(Text(events, "stderr"), "warn\n");
  ASSERT_FALSE(events.empty());
  const SseEvent& last = events.back();
  ASSERT_EQ(last.name, "exit");
  EXPECT_EQ(last.data["status"], "exited");
  EXPECT_EQ(last.data["exit_code"], 4);
  EXPECT_EQ(last.data["stdout_bytes"], 13);
  EXPECT_EQ(last.data["stderr_bytes"], 5);
  EXPECT_FALSE(last.data.contains("stdout")) << "the output went as events";

  // Accept: text/event-stream asks for the same without the body field.
  EventReader by_header(
      port_, StreamRequest("st1", {{"argv", {"echo", "hdr"}}}, "Accept: text/event-stream\r\n"));
  auto rest = by_header.Rest();
  EXPECT_EQ(Text(rest, "stdout"), "hdr\n");
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.back().name, "exit");
}

TEST_F(ExecStreamTest, OutputCapAndTimeoutHold) {
  StartDaemon(Config());
  CreateSandbox("st2");
  EventReader capped(port_,
                     StreamRequest("st2", {{"command", "head -c 5000 /dev/zero | tr '\\0' a"},
                                           {"output_limit", 1000},
                                           {"stream", true}}));
  auto events = capped.Rest();
  EXPECT_EQ(Text(events, "stdout"), std::string(1000, 'a'));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "exit");
  EXPECT_EQ(events.back().data["stdout_bytes"], 5000);
  EXPECT_EQ(events.back().data["stdout_dropped_bytes"], 4000);
  EXPECT_EQ(events.back().data["limit"], "output");

  // Multi-byte characters split across reads arrive whole.
  EventReader utf8(
      port_, StreamRequest("st2", {{"command", "printf '\\303'; sleep 0.2; printf '\\251\\n'"},
                                   {"stream", true}}));
  EXPECT_EQ(Text(utf8.Rest(), "stdout"), "\xc3\xa9\n");

  EventReader timed(
      port_, StreamRequest(
                 "st2", {{"command", "echo begun; sleep 30"}, {"timeout", 1}, {"stream", true}}));
  events = timed.Rest();
  EXPECT_EQ(Text(events, "stdout"), "begun\n");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "exit");
  EXPECT_EQ(events.back().data["status"], "timed_out");
  EXPECT_EQ(events.back().data["exit_code"], 124);
}

TEST_F(ExecStreamTest, ClientGoingEndsTheCommand) {
  StartDaemon(Config());
  CreateSandbox("st3");
  const std::string marker = "sleep 4321";
  EventReader reader(
      port_,
      StreamRequest("st3", {{"command", "echo up; " + marker + "; echo never"}, {"stream", true}}));
  auto e = reader.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "stdout");
  // The command's sleep is running now (it starts right after the echo).
  auto until = Clock::now() + std::chrono::seconds(10);
  while (PidsRunning(marker).empty() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(PidsRunning(marker).empty()) << "the streamed command is not running";
  reader.Close();
  until = Clock::now() + std::chrono::seconds(10);
  while (!PidsRunning(marker).empty() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(PidsRunning(marker).empty()) << "the command outlived its client";
  // The daemon is fine, and the exec slot was given back (a plain exec runs).
  EXPECT_EQ(Exec("st3", "echo ok")["stdout"], "ok\n");
}

TEST_F(ExecStreamTest, BadRequestsAreRefusedBeforeStreaming) {
  StartDaemon(Config());
  CreateSandbox("st4");
  auto wrong_type = Curl("POST", Url("/api/corral/v1/sandboxes/st4/exec"), "", {}, true,
                         {"--data-binary", R"({"command":"true","stream":"yes"})"});
  EXPECT_EQ(wrong_type.status, 422) << wrong_type.body;
  EXPECT_EQ(wrong_type.Json()["error"]["field"], "stream");
  auto unknown =
      Curl("POST", Url("/api/corral/v1/sandboxes/nosuch/exec"), "", {"Accept: text/event-stream"},
           true, {"--data-binary", R"({"command":"true"})"});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  // "stream": false wins over the Accept header: a plain JSON outcome.
  auto plain =
      Curl("POST", Url("/api/corral/v1/sandboxes/st4/exec"), "", {"Accept: text/event-stream"},
           true, {"--data-binary", R"({"command":"echo x","stream":false})"});
  EXPECT_EQ(plain.Json()["stdout"], "x\n") << plain.body;
}

}  // namespace
}  // namespace corral::test
