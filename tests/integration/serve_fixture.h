// A real `corral serve` for black-box tests: started on 127.0.0.1 with port 0 (the daemon
// prints the port it bound), a temp base dir and a temp runtime dir ($CORRAL_RUNTIME_DIR,
// set in this process for the fixture's lifetime so that the daemon and the in-process
// clean-up see the same sandboxes), spoken to with curl (the usual requests) and with raw
// sockets (what curl will not send: a slow client, a lying Content-Length). Root only.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "runtime/sandboxes/persistent.h"
#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace corral::test {

struct HttpAnswer {
  int status = 0;
  std::string body;
  nlohmann::json Json() const { return nlohmann::json::parse(body, nullptr, false); }
};

class ServeTest : public LeakCheckedTest {
 protected:
  static constexpr const char* kKey = "test-key-7f3a9c2e5b1d4f60";

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "corral serve creates jails: needs root";
    ASSERT_TRUE(dir_.MakeDirs("base"));
    ASSERT_TRUE(dir_.MakeDirs("run", 0700));
    ::setenv("CORRAL_RUNTIME_DIR", dir_.Join("run").c_str(), 1);
    ::setenv("CORRAL_STATE_DIR", dir_.Join("state").c_str(), 1);  // volumes
  }
  void TearDown() override {
    // SIGTERM, as an operator stops it: the daemon removes its warm sandboxes (a SIGKILL
    // mid-create of one would leave its cgroups to the next daemon's start).
    StopDaemon(SIGTERM);
    std::vector<runtime::UnreadableRecord> unreadable;
    for (const auto& info : runtime::ListSandboxes(&unreadable)) {
      (void)runtime::RemoveSandbox(info.record.name);
    }
    for (const auto& u : unreadable) (void)runtime::RemoveSandbox(u.name);
    ::unsetenv("CORRAL_RUNTIME_DIR");
    ::unsetenv("CORRAL_STATE_DIR");
  }

  // The config of the daemon; `extra_server` lines go under `server:`.
  std::string Config(const std::string& extra_server = "", int port = 0) const {
    return "server:\n  listen: 127.0.0.1:" + std::to_string(port) +
           "\n  api_key: " + std::string(kKey) +
           "\n  header_timeout: 2\n  keepalive_timeout: 2\n  body_timeout: 3\n"
           "  max_body_bytes: 1m\n  access_log: " +
           dir_.Join("access.log") + "\n" + extra_server +
           "sandbox:\n  base_dir: " + dir_.Join("base") +
           "\n  idle_timeout: 0\n  replicas: 50\n"
           "limits:\n  timeout: 30\n";
  }

  // Starts the daemon and waits until it answers /health.
  void StartDaemon(const std::string& config) {
    ASSERT_TRUE(dir_.WriteFile("corral.yaml", config));
    const std::string log = dir_.Join("serve.log");
    ::truncate(log.c_str(), 0);
    std::vector<std::string> argv = {CorralBinary(), "serve", "--config", dir_.Join("corral.yaml")};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    int err = posix_spawn(&daemon_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ASSERT_EQ(err, 0);
    RecordSpawnedPid(daemon_);
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::string text = DaemonLog();
      size_t at = text.find(marker);
      if (at != std::string::npos) port_ = std::atoi(text.c_str() + at + marker.size());
      int status;
      if (::waitpid(daemon_, &status, WNOHANG) == daemon_) {
        daemon_ = -1;
        FAIL() << "corral serve exited at start:\n" << text;
      }
    }
    ASSERT_NE(port_, 0) << "corral serve did not start:\n" << DaemonLog();
  }

  // Sends `sig`, waits for the exit; returns the wait status (-1: no daemon).
  int StopDaemon(int sig, std::chrono::seconds wait = std::chrono::seconds(20)) {
    if (daemon_ <= 0) return -1;
    ::kill(daemon_, sig);
    int status = -1;
    auto end = std::chrono::steady_clock::now() + wait;
    while (::waitpid(daemon_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(daemon_, SIGKILL);
        ::waitpid(daemon_, &status, 0);
        ADD_FAILURE() << "corral serve did not exit after signal " << sig;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    daemon_ = -1;
    port_ = 0;
    return status;
  }

  std::string DaemonLog() const {
    std::ifstream in(dir_.Join("serve.log"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string Authority() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string Url(const std::string& path) const { return "http://" + Authority() + path; }

  // One request with curl. `headers` are "Name: value"; `key` adds X-API-Key.
  HttpAnswer Curl(const std::string& method, const std::string& url, const std::string& body = "",
                  std::vector<std::string> headers = {}, bool key = true,
                  std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"-sS", "--max-time",    "30", "-X", method,
                                     "-w",  "\n%{http_code}"};
    if (key) headers.push_back(std::string("X-API-Key: ") + kKey);
    for (const auto& h : headers) args.insert(args.end(), {"-H", h});
    if (!body.empty()) {
      EXPECT_TRUE(dir_.WriteFile("body", body));
      args.insert(args.end(), {"-H", "Content-Type: application/json", "--data-binary",
                               "@" + dir_.Join("body")});
    }
    args.insert(args.end(), more.begin(), more.end());
    args.push_back(url);
    auto r = RunProgram("/usr/bin/curl", args);
    HttpAnswer a;
    if (!r) return a;
    size_t nl = r->out.rfind('\n');
    if (nl == std::string::npos) return a;
    a.status = std::atoi(r->out.c_str() + nl + 1);
    a.body = r->out.substr(0, nl);
    return a;
  }
  HttpAnswer Api(const std::string& method, const std::string& path, const std::string& body = "") {
    return Curl(method, Url(path), body);
  }

  // Raw TCP to the daemon; sends `bytes`, then reads until EOF or `timeout`.
  struct RawResult {
    std::string received;
    bool closed = false;  // the server closed the connection
  };
  RawResult Raw(const std::string& bytes, std::chrono::milliseconds timeout) {
    RawResult out;
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port_));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return out;
    (void)!::write(fd.get(), bytes.data(), bytes.size());
    auto end = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n <= 0) {
        out.closed = true;
        break;
      }
      out.received.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  std::string CreateBody(const std::string& id, const std::string& thread) const {
    return nlohmann::json{{"sandbox_id", id}, {"thread_id", thread}, {"user_id", "default"}}.dump();
  }

  TempDir dir_;
  pid_t daemon_ = -1;
  int port_ = 0;
};

}  // namespace corral::test
