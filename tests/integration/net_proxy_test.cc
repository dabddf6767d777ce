// corral-netproxy as a black box, the way corral's supervisor starts it: fd 3 a network
// namespace, fd 4 the readiness pipe. The namespace is a fresh one this test makes (only
// `lo`); clients run inside it (curl under nsenter, or sockets a thread made there). The
// one upstream is a small HTTP server of the test on the host's 127.0.0.1, reached as
// "allowed.test" through unsafe.network_resolve. Nothing leaves the machine.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "runtime/net/policy.h"
#include "tests/support/leak_check.h"
#include "tests/support/must_run.h"
#include "tests/support/run_corral.h"
#include "tests/support/temp_dir.h"

#ifndef CORRAL_NETPROXY
#error "needs CORRAL_NETPROXY (tests/CMakeLists.txt)"
#endif

extern char** environ;

namespace corral::test {
namespace {

using namespace std::chrono_literals;

// $CORRAL_TEST_NETPROXY overrides the built one (e.g. a sanitizer build of the proxy).
std::string NetproxyBinary() {
  const char* v = std::getenv("CORRAL_TEST_NETPROXY");
  return v != nullptr && *v != '\0' ? v : CORRAL_NETPROXY;
}

// ---- the test's upstream: HTTP/1.1 on the host's 127.0.0.1, one request per connection.
//   /hello      a short text         /big?n=N   N bytes
//   /head...    the request head it received, as the body
class TestServer {
 public:
  TestServer() {
    listener_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listener_.get(), 64) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "test server: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TestServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    for (std::thread& t : workers_) t.join();
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  void AcceptLoop() {
    for (;;) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      workers_.emplace_back([this, fd] { Serve(UniqueFd(fd)); });
    }
  }
  void Serve(UniqueFd fd) {
    timeval timeout{10, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
      ssize_t n = ::read(fd.get(), buf, sizeof(buf));
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    ++requests_;
    const std::string path =
        head.substr(head.find(' ') + 1, head.find(' ', head.find(' ') + 1) - head.find(' ') - 1);
    std::string body;
    size_t big = 0;
    if (path == "/hello") {
      body = "hello from allowed.test\n";
    } else if (path.rfind("/head", 0) == 0) {
      body = head;
    } else if (path.rfind("/big?n=", 0) == 0) {
      big = std::stoull(path.substr(7));
    } else {
      return Send(fd.get(),
                  "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
    const size_t length = big > 0 ? big : body.size();
    Send(fd.get(), "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(length) +
                       "\r\nConnection: close\r\n\r\n" + body);
    const std::string chunk(256 * 1024, 'x');
    for (size_t sent = 0; sent < big;) {
      const size_t n = std::min(chunk.size(), big - sent);
      ssize_t w = ::send(fd.get(), chunk.data(), n, MSG_NOSIGNAL);
      if (w <= 0) return;
      sent += static_cast<size_t>(w);
    }
  }
  static void Send(int fd, const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::vector<std::thread> workers_;  // touched by the accept thread only, until joined
  std::atomic<int> requests_{0};
};

// ---- network namespaces: made and used on helper threads (setns is per thread).
UniqueFd NewNetns() {
  UniqueFd out;
  std::thread([&out] {
    if (::unshare(CLONE_NEWNET) == 0)
      out.Reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  }).join();
  return out;
}

// A socket of `type` created inside the namespace (it stays there, whoever uses it).
UniqueFd SocketIn(int netns, int type) {
  UniqueFd out;
  std::thread([&out, netns, type] {
    if (::setns(netns, CLONE_NEWNET) == 0) out.Reset(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  }).join();
  return out;
}

sockaddr_in Loopback(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

// Connects a TCP socket inside the namespace to ip:port there.
UniqueFd ConnectIn(int netns, const char* ip, uint16_t port) {
  UniqueFd s = SocketIn(netns, SOCK_STREAM);
  sockaddr_in a = Loopback(ip, port);
  if (!s || ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return UniqueFd();
  timeval timeout{10, 0};
  ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return s;
}

void SendAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;  // the peer may close early (a refusal); the caller checks replies
    done += static_cast<size_t>(n);
  }
}

// Everything until the peer closes (or 10 s of silence).
std::string ReadAll(int fd) {
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- DNS by hand: a query for (name, type), and the parts of an answer the tests read.
std::string DnsQuery(const std::string& name, uint16_t type, uint16_t id = 0x4242) {
  std::string q = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (size_t start = 0; start <= name.size();) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<char>(dot - start));
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q.push_back(0);
  q += {static_cast<char>(type >> 8), static_cast<char>(type & 0xFF), 0, 1};
  return q;
}
struct DnsReply {
  int rcode = -1;
  int answers = 0;
  std::string last_a;  // the A record's address, when the reply ends with one
};
DnsReply ParseDns(const std::string& r) {
  DnsReply out;
  if (r.size() < 12) return out;
  out.rcode = r[3] & 0x0F;
  out.answers = static_cast<uint8_t>(r[6]) << 8 | static_cast<uint8_t>(r[7]);
  if (out.answers > 0 && r.size() >= 16) {
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, r.data() + r.size() - 4, text, sizeof(text));
    out.last_a = text;
  }
  return out;
}

// A TLS ClientHello record naming `sni`, as a client sends it first in a tunnel.
std::string ClientHello(const std::string& sni) {
  auto u16 = [](size_t v) {
    return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xFF)};
  };
  std::string list = std::string(1, '\0') + u16(sni.size()) + sni;
  std::string ext = u16(0) + u16(list.size() + 2) + u16(list.size()) + list;
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') +
                     u16(2) + std::string("\x13\x01", 2) + std::string("\x01\x00", 2) +
                     u16(ext.size()) + ext;
  std::string handshake = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
  return std::string("\x16\x03\x01", 3) + u16(handshake.size()) + handshake;
}

class NetProxyTest : public LeakCheckedTest {
 protected:
  void SetUp() override {
    RequireRoot();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(::access(NetproxyBinary().c_str(), X_OK), 0)
        << "corral-netproxy missing: " << NetproxyBinary();
    ASSERT_NE(server_.port(), 0);
    netns_ = NewNetns();
    ASSERT_TRUE(netns_) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    ASSERT_NO_FATAL_FAILURE(StartProxy(DefaultPolicy()));
  }
  void TearDown() override {
    if (proxy_ > 0) {
      ::kill(proxy_, SIGTERM);
      EXPECT_EQ(WaitProxy(10s), 0) << "corral-netproxy did not exit 0 on SIGTERM\n"
                                   << FileText(dir_.Join("stderr"));
    }
  }

  runtime::NetworkSpec DefaultPolicy() const {
    runtime::NetworkSpec network;
    network.mode = runtime::NetworkMode::kAllowlist;
    network.allow = {"allowed.test:" + std::to_string(server_.port()), "other.test"};
    network.deny = {"bad.allowed.test"};
    return network;
  }

  // Starts corral-netproxy for `network` (fd 3: netns_, fd 4: a pipe) and waits for "ready".
  void StartProxy(const runtime::NetworkSpec& network,
                  const std::vector<std::string>& extra_args = {}) {
    runtime::UnsafeSpec unsafe;
    unsafe.network_resolve = {{"allowed.test", "127.0.0.1"}};
    Result<runtime::net::Policy> policy = runtime::net::Policy::FromSpec(network, unsafe);
    ASSERT_TRUE(policy) << policy.error().message();
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    UniqueFd ready_read(pipe_fds[0]), ready_write(pipe_fds[1]);
    UniqueFd stderr_file(
        ::open(dir_.Join("stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    const std::string program = NetproxyBinary();
    std::vector<std::string> args = {
        program, "--sandbox", "nettest",   "--policy-json", policy->ToJson().dump(),
        "--log", LogPath(),   "--summary", SummaryPath()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, netns_.get(), 3);
    posix_spawn_file_actions_adddup2(&actions, ready_write.get(), 4);
    posix_spawn_file_actions_adddup2(&actions, stderr_file.get(), 2);
    const int rc = ::posix_spawn(&proxy_, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << std::strerror(rc);
    RecordSpawnedPid(proxy_);
    ready_write.Reset();
    std::string line;
    pollfd p{ready_read.get(), POLLIN, 0};
    char buf[256];
    while (::poll(&p, 1, 10000) == 1) {
      ssize_t n = ::read(ready_read.get(), buf, sizeof(buf));
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    ASSERT_EQ(line, "ready\n") << FileText(dir_.Join("stderr"));
  }

  // The proxy's exit code once it has ended (-1: still running after `limit`, then killed).
  int WaitProxy(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(proxy_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(proxy_, SIGKILL);
        ::waitpid(proxy_, &status, 0);
        proxy_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    proxy_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // `program args...` inside the namespace (nsenter), e.g. curl.
  RunResult InNetns(const std::vector<std::string>& command) {
    std::vector<std::string> args = {"--net=/proc/" + std::to_string(::getpid()) + "/fd/" +
                                     std::to_string(netns_.get())};
    args.insert(args.end(), command.begin(), command.end());
    Result<RunResult> r = RunProgram("/usr/bin/nsenter", args);
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : RunResult{};
  }
  RunResult Curl(const std::vector<std::string>& curl_args) {
    std::vector<std::string> command = {"curl", "-sS", "--max-time", "20"};
    command.insert(command.end(), curl_args.begin(), curl_args.end());
    return InNetns(command);
  }
  std::string Url(const std::string& path, const std::string& host = "allowed.test") const {
    return "http://" + host + ":" + std::to_string(server_.port()) + path;
  }

  // One DNS query over UDP to the jail's 127.0.0.1:53.
  DnsReply AskDns(const std::string& name, uint16_t type) {
    UniqueFd s = SocketIn(netns_.get(), SOCK_DGRAM);
    sockaddr_in a = Loopback("127.0.0.1", 53);
    timeval timeout{5, 0};
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    const std::string q = DnsQuery(name, type);
    ::sendto(s.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    char buf[1500];
    ssize_t n = ::recv(s.get(), buf, sizeof(buf), 0);
    return n > 0 ? ParseDns(std::string(buf, static_cast<size_t>(n))) : DnsReply{};
  }

  std::vector<nlohmann::json> LogLines() {
    std::vector<nlohmann::json> lines;
    std::istringstream in(FileText(LogPath()));
    for (std::string line; std::getline(in, line);) {
      lines.push_back(nlohmann::json::parse(line, nullptr, false));
      EXPECT_FALSE(lines.back().is_discarded()) << line;
    }
    return lines;
  }
  // Whether a log line has every field of `want` with that value.
  bool Logged(const nlohmann::json& want) {
    for (const nlohmann::json& line : LogLines()) {
      bool all = true;
      for (const auto& [key, value] : want.items())
        all = all && line.contains(key) && line[key] == value;
      if (all) return true;
    }
    return false;
  }
  std::string LogPath() const { return dir_.Join("decisions.jsonl"); }
  std::string SummaryPath() const { return dir_.Join("summary.json"); }

  TempDir dir_;
  TestServer server_;
  UniqueFd netns_;
  pid_t proxy_ = -1;
};

TEST_F(NetProxyTest, HttpForwardReachesAnAllowedNameInOriginForm) {
  RunResult r =
      Curl({"-x", "http://127.0.0.1:3128", "-H", "Proxy-Connection: keep-alive", Url("/head?x=1")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("GET /head?x=1 HTTP/1.1\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Host: allowed.test:" + std::to_string(server_.port()) + "\r\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Connection: close\r\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Proxy-Connection"), std::string::npos) << r.out;
  EXPECT_TRUE(Logged({{"via", "http"},
                      {"host", "allowed.test"},
                      {"decision", "allow"},
                      {"address", "127.0.0.1"}}));
}

TEST_F(NetProxyTest, ConnectAndSocksTunnelsReachAnAllowedName) {
  RunResult connect = Curl({"-p", "-x", "http://127.0.0.1:3128", Url("/hello")});
  EXPECT_EQ(connect.exit_code, 0) << connect.Describe();
  EXPECT_EQ(connect.out, "hello from allowed.test\n");
  RunResult socks = Curl({"--socks5-hostname", "127.0.0.1:1080", Url("/hello")});
  EXPECT_EQ(socks.exit_code, 0) << socks.Describe();
  EXPECT_EQ(socks.out, "hello from allowed.test\n");
  EXPECT_TRUE(Logged({{"via", "connect"}, {"decision", "allow"}}));
  EXPECT_TRUE(Logged({{"via", "socks"}, {"decision", "allow"}}));
}

TEST_F(NetProxyTest, NamesNotAllowedAreRefusedInBand) {
  RunResult http = Curl({"-i", "-x", "http://127.0.0.1:3128", "http://denied.test/"});
  EXPECT_NE(http.out.find("HTTP/1.1 403"), std::string::npos) << http.Describe();
  EXPECT_NE(http.out.find("X-Corral-Denied: not on the allow-list"), std::string::npos) << http.out;
  RunResult deny_rule = Curl({"-i", "-x", "http://127.0.0.1:3128", "http://bad.allowed.test/"});
  EXPECT_NE(deny_rule.out.find("X-Corral-Denied: denied by 'bad.allowed.test'"), std::string::npos)
      << deny_rule.out;
  RunResult port = Curl({"-i", "-x", "http://127.0.0.1:3128", "http://allowed.test:1/"});
  EXPECT_NE(port.out.find("HTTP/1.1 403"), std::string::npos) << port.Describe();
  RunResult connect = Curl({"-p", "-x", "http://127.0.0.1:3128", "http://denied.test/"});
  EXPECT_NE(connect.exit_code, 0);
  EXPECT_NE(connect.err.find("403"), std::string::npos) << connect.Describe();
  RunResult socks = Curl({"--socks5-hostname", "127.0.0.1:1080", "http://denied.test/"});
  EXPECT_EQ(socks.exit_code, 97) << socks.Describe();  // curl: "SOCKS5 connect failed"
  EXPECT_EQ(server_.requests(), 0);
  EXPECT_TRUE(Logged({{"via", "http"},
                      {"host", "denied.test"},
                      {"decision", "deny"},
                      {"reason", "not on the allow-list"}}));
  EXPECT_TRUE(Logged({{"via", "socks"}, {"host", "denied.test"}, {"decision", "deny"}}));
}

TEST_F(NetProxyTest, IpLiteralsAndTheMetadataAddressAreRefused) {
  for (const std::string& url :
       {"http://127.0.0.1:" + std::to_string(server_.port()) + "/hello",
        std::string("http://169.254.169.254/latest/meta-data/"), std::string("http://[::1]/")}) {
    RunResult r = Curl({"-i", "-x", "http://127.0.0.1:3128", url});
    EXPECT_NE(r.out.find("HTTP/1.1 403"), std::string::npos) << r.Describe();
    EXPECT_NE(r.out.find("X-Corral-Denied:"), std::string::npos) << r.out;
  }
  RunResult socks = Curl({"--socks5", "127.0.0.1:1080", "http://169.254.169.254/"});
  EXPECT_EQ(socks.exit_code, 97) << socks.Describe();
  EXPECT_EQ(server_.requests(), 0);
  EXPECT_TRUE(Logged({{"host", "169.254.169.254"}, {"decision", "deny"}}));
}

TEST_F(NetProxyTest, ResolverAnswersAllowedNamesWithCaptureAddressesOnly) {
  DnsReply a = AskDns("Allowed.Test", 1);
  EXPECT_EQ(a.rcode, 0);
  ASSERT_EQ(a.answers, 1);
  EXPECT_EQ(a.last_a.rfind("127.100.", 0), 0u) << a.last_a;
  EXPECT_EQ(AskDns("allowed.test", 1).last_a, a.last_a) << "stable";
  DnsReply aaaa = AskDns("allowed.test", 28);
  EXPECT_EQ(aaaa.rcode, 0);
  EXPECT_EQ(aaaa.answers, 0);
  EXPECT_EQ(AskDns("unknown.test", 1).rcode, 3) << "NXDOMAIN";
  EXPECT_EQ(AskDns("bad.allowed.test", 1).rcode, 3);
  EXPECT_TRUE(
      Logged({{"via", "dns"}, {"host", "unknown.test"}, {"port", 0}, {"decision", "deny"}}));

  // Over TCP too (2-byte length prefix).
  UniqueFd tcp = ConnectIn(netns_.get(), "127.0.0.1", 53);
  ASSERT_TRUE(tcp);
  const std::string q = DnsQuery("allowed.test", 1);
  SendAll(tcp.get(), std::string{0, static_cast<char>(q.size())} + q);
  char buf[512];
  ssize_t n = ::read(tcp.get(), buf, sizeof(buf));
  ASSERT_GT(n, 2);
  EXPECT_EQ(ParseDns(std::string(buf + 2, static_cast<size_t>(n - 2))).last_a, a.last_a);

  // A client that ignores proxies connects to the capture address and is proxied as "tcp".
  RunResult plain =
      Curl({"--resolve", "allowed.test:" + std::to_string(server_.port()) + ":" + a.last_a,
            Url("/hello")});
  EXPECT_EQ(plain.exit_code, 0) << plain.Describe();
  EXPECT_EQ(plain.out, "hello from allowed.test\n");
  EXPECT_TRUE(Logged({{"via", "tcp"}, {"host", "allowed.test"}, {"decision", "allow"}}));
  // SOCKS5 with local resolution sends the capture address; it stands for the name.
  RunResult socks =
      Curl({"--socks5", "127.0.0.1:1080", "--resolve",
            "allowed.test:" + std::to_string(server_.port()) + ":" + a.last_a, Url("/hello")});
  EXPECT_EQ(socks.out, "hello from allowed.test\n") << socks.Describe();
}

TEST_F(NetProxyTest, TlsServerNameMustMatchTheTunnel) {
  UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 3128);
  ASSERT_TRUE(s);
  const std::string target = "allowed.test:" + std::to_string(server_.port());
  SendAll(s.get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  char buf[256];
  ssize_t n = ::read(s.get(), buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)).rfind("HTTP/1.1 200", 0), 0u);
  SendAll(s.get(), ClientHello("evil.test"));
  EXPECT_EQ(ReadAll(s.get()), "") << "closed without a byte from upstream";
  EXPECT_TRUE(Logged({{"via", "connect"},
                      {"decision", "deny"},
                      {"reason", "SNI evil.test does not match CONNECT allowed.test"}}));
}

TEST_F(NetProxyTest, GarbageAndHugeHeadsDoNotStopIt) {
  {
    UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 3128);
    SendAll(s.get(), "GET http://allowed.test/ HTTP/1.1\r\nX-Big: " + std::string(100 * 1024, 'a') +
                         "\r\n\r\n");
    ::shutdown(s.get(), SHUT_WR);
    EXPECT_EQ(ReadAll(s.get()).rfind("HTTP/1.1 431", 0), 0u);
  }
  {
    UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 3128);
    SendAll(s.get(), std::string("\x16\x03\x01\x00\xff garbage \x01\x02\r\n\r\n", 20));
    ::shutdown(s.get(), SHUT_WR);
    EXPECT_EQ(ReadAll(s.get()).rfind("HTTP/1.1 400", 0), 0u);
  }
  {
    UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 3128);
    SendAll(s.get(), "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");  // not a proxy request
    ::shutdown(s.get(), SHUT_WR);
    EXPECT_EQ(ReadAll(s.get()).rfind("HTTP/1.1 400", 0), 0u);
  }
  {
    UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 1080);
    SendAll(s.get(), "GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(ReadAll(s.get()), "") << "not SOCKS5: closed";
  }
  {
    UniqueFd s = ConnectIn(netns_.get(), "127.0.0.1", 1080);
    SendAll(s.get(), std::string("\x05\x01\x00\x05\x03\x00\x01\x01\x01\x01\x01\x00\x35",
                                 13));  // UDP ASSOCIATE
    EXPECT_EQ(ReadAll(s.get()).substr(2, 2), std::string("\x05\x07", 2)) << "command not supported";
  }
  {
    UniqueFd u = SocketIn(netns_.get(), SOCK_DGRAM);
    sockaddr_in a = Loopback("127.0.0.1", 53);
    ::sendto(u.get(), "\x01\x02\x03", 3, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  RunResult r = Curl({"-x", "http://127.0.0.1:3128", Url("/hello")});
  EXPECT_EQ(r.out, "hello from allowed.test\n") << r.Describe();
  EXPECT_EQ(AskDns("allowed.test", 1).answers, 1);
}

TEST_F(NetProxyTest, SummaryAndLogRecordTheDecisionsAndItExitsOnSigterm) {
  ASSERT_EQ(Curl({"-x", "http://127.0.0.1:3128", Url("/big?n=100000")}).exit_code, 0);
  Curl({"-x", "http://127.0.0.1:3128", "http://denied.test/"});
  AskDns("unknown.test", 1);
  ::kill(proxy_, SIGTERM);
  ASSERT_EQ(WaitProxy(10s), 0);
  nlohmann::json summary = nlohmann::json::parse(FileText(SummaryPath()), nullptr, false);
  ASSERT_TRUE(summary.is_object()) << FileText(SummaryPath());
  EXPECT_EQ(summary["mode"], "allowlist");
  EXPECT_EQ(summary["connections"], 2) << summary;
  EXPECT_EQ(summary["allowed"], 1) << summary;
  EXPECT_EQ(summary["denied_count"], 2) << summary;
  EXPECT_GT(summary["bytes_in"].get<int64_t>(), 100000) << summary;
  EXPECT_GT(summary["bytes_out"].get<int64_t>(), 0) << summary;
  nlohmann::json want_http = {
      {"host", "denied.test"}, {"port", 80}, {"reason", "not on the allow-list"}, {"via", "http"}};
  nlohmann::json want_dns = {
      {"host", "unknown.test"}, {"port", 0}, {"reason", "not on the allow-list"}, {"via", "dns"}};
  EXPECT_EQ(summary["denied"], (nlohmann::json{want_http, want_dns})) << summary;
  EXPECT_TRUE(Logged({{"event", "close"}, {"via", "http"}, {"host", "allowed.test"}}));
  for (const nlohmann::json& line : LogLines()) {
    EXPECT_EQ(line["sandbox"], "nettest");
    EXPECT_TRUE(line["time"].is_string());
  }
}

TEST_F(NetProxyTest, ConnectionLimitRefusesTheOneTooMany) {
  ::kill(proxy_, SIGTERM);
  ASSERT_EQ(WaitProxy(10s), 0);
  runtime::NetworkSpec network = DefaultPolicy();
  network.max_connections = 1;
  ASSERT_NO_FATAL_FAILURE(StartProxy(network));
  // Holds the one slot: a tunnel that stays open.
  UniqueFd held = ConnectIn(netns_.get(), "127.0.0.1", 3128);
  const std::string target = "allowed.test:" + std::to_string(server_.port());
  SendAll(held.get(), "CONNECT " + target + " HTTP/1.1\r\n\r\n");
  char buf[256];
  ASSERT_GT(::read(held.get(), buf, sizeof(buf)), 0);
  RunResult r = Curl({"-i", "-x", "http://127.0.0.1:3128", Url("/hello")});
  EXPECT_NE(r.out.find("HTTP/1.1 503"), std::string::npos) << r.Describe();
  EXPECT_NE(r.out.find("X-Corral-Denied: connection limit"), std::string::npos) << r.out;
  held.Reset();
  EXPECT_TRUE(Logged({{"decision", "deny"}, {"reason", "connection limit"}}));
}

TEST_F(NetProxyTest, ByteCapCutsTheConnectionAndRefusesNewOnes) {
  ::kill(proxy_, SIGTERM);
  ASSERT_EQ(WaitProxy(10s), 0);
  runtime::NetworkSpec network = DefaultPolicy();
  network.max_bytes = 100000;
  ASSERT_NO_FATAL_FAILURE(StartProxy(network));
  RunResult cut = Curl({"-x", "http://127.0.0.1:3128", "-o", "/dev/null", Url("/big?n=10000000")});
  EXPECT_NE(cut.exit_code, 0) << cut.Describe();
  RunResult refused = Curl({"-i", "-x", "http://127.0.0.1:3128", Url("/hello")});
  EXPECT_NE(refused.out.find("HTTP/1.1 503"), std::string::npos) << refused.Describe();
  EXPECT_NE(refused.out.find("X-Corral-Denied: byte limit"), std::string::npos) << refused.out;
  EXPECT_TRUE(Logged({{"event", "close"}, {"reason", "byte limit"}}));
  ::kill(proxy_, SIGTERM);
  ASSERT_EQ(WaitProxy(10s), 0);
  nlohmann::json summary = nlohmann::json::parse(FileText(SummaryPath()), nullptr, false);
  ASSERT_TRUE(summary.is_object());
  EXPECT_LE(summary["bytes_in"].get<int64_t>() + summary["bytes_out"].get<int64_t>(), 100000)
      << summary;
}

TEST_F(NetProxyTest, ExitsWhenTheWatchedProcessExits) {
  ::kill(proxy_, SIGTERM);
  ASSERT_EQ(WaitProxy(10s), 0);
  Result<pid_t> sleeper = StartProgram({"/bin/sleep", "60"});
  ASSERT_TRUE(sleeper) << sleeper.error().message();
  ASSERT_NO_FATAL_FAILURE(StartProxy(DefaultPolicy(), {"--watch-pid", std::to_string(*sleeper)}));
  ::kill(*sleeper, SIGKILL);
  ::waitpid(*sleeper, nullptr, 0);
  EXPECT_EQ(WaitProxy(10s), 0) << "still running after the watched process ended";
  // The sandbox it served is gone: so is its summary.
  EXPECT_NE(::access(SummaryPath().c_str(), F_OK), 0) << SummaryPath() << " left behind";
}

// Not an assertion: what the proxy costs, printed. 100 MiB through the HTTP proxy vs the
// same download straight from the host, and 20 small requests each way.
TEST_F(NetProxyTest, PrintsThroughputAndLatencyFigures) {
  // curl's time_total and speed_download for `path`, through the proxy or directly.
  auto timing = [this](bool proxied, const std::string& path) {
    std::vector<std::string> args = {"curl",      "-sS", "-o",
                                     "/dev/null", "-w",  "%{time_total} %{speed_download}"};
    RunResult r;
    if (proxied) {
      args.insert(args.end(), {"-x", "http://127.0.0.1:3128", Url(path)});
      r = InNetns(args);
    } else {
      args.push_back("http://127.0.0.1:" + std::to_string(server_.port()) + path);
      Result<RunResult> direct =
          RunProgram("/usr/bin/curl", std::vector<std::string>(args.begin() + 1, args.end()));
      if (direct) r = *direct;
    }
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    std::pair<double, double> out{0, 0};
    std::istringstream(r.out) >> out.first >> out.second;
    return out;
  };
  const std::string big = "/big?n=" + std::to_string(100 * 1024 * 1024);
  const auto direct = timing(false, big);
  const auto proxied = timing(true, big);
  std::printf(
      "[ figures  ] 100 MiB: direct %.0f MB/s (%.3f s), through the proxy %.0f MB/s (%.3f s)\n",
      direct.second / 1e6, direct.first, proxied.second / 1e6, proxied.first);
  constexpr int kRequests = 20;
  double direct_sum = 0, proxied_sum = 0;
  for (int i = 0; i < kRequests; ++i) {
    direct_sum += timing(false, "/hello").first;
    proxied_sum += timing(true, "/hello").first;
  }
  std::printf(
      "[ figures  ] small request, mean of %d: direct %.2f ms, through the proxy %.2f ms (+%.2f "
      "ms)\n",
      kRequests, 1000 * direct_sum / kRequests, 1000 * proxied_sum / kRequests,
      1000 * (proxied_sum - direct_sum) / kRequests);
}

}  // namespace
}  // namespace corral::test
