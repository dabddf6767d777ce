#include "runtime/net/netproxy_launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/fd_pair.h"
#include "base/trusted_files.h"

namespace corral::runtime::net {
namespace {

constexpr int kReadyTimeoutMs = 10000;
constexpr int kStopTimeoutMs = 3000;

std::mutex own_mu;
std::vector<std::pair<IpAddress, uint16_t>> own_endpoints;

std::vector<std::pair<IpAddress, uint16_t>> OwnEndpoints() {
  std::lock_guard lock(own_mu);
  return own_endpoints;
}

}  // namespace

Result<std::string> FindNetproxyProgram() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CORRAL_NETPROXY_PROGRAM"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    candidates = {OwnExecutableDir() + "/corral-netproxy", CORRAL_NETPROXY_INSTALL_PATH,
                  CORRAL_NETPROXY_BUILD_PATH};
  }
  std::string tried;
  for (const auto& path : candidates) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    RETURN_IF_ERROR(CheckOwnedByRootOrUs(path, st));
    return path;
  }
  return Error(ErrorCode::kNotFound,
               "network.mode allowlist needs corral-netproxy, not found (tried " + tried + ")");
}

namespace {

// A new network namespace, made on a thread of its own so that ours stays the host's.
Result<UniqueFd> NewNetworkNamespace() {
  Result<UniqueFd> out = Error(ErrorCode::kInternal, "no namespace");
  std::thread([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      out = Error::FromErrno(errno, "unshare(CLONE_NEWNET) for the proxy's namespace");
      return;
    }
    UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!fd) {
      out = Error::FromErrno(errno, "/proc/thread-self/ns/net");
      return;
    }
    out = std::move(fd);
  }).join();
  return out;
}

struct Spawned {
  pid_t pid = -1;
  UniqueFd ready;  // the read end of the proxy's fd 4
};

// The child's half: syscalls only (the caller may be a multithreaded daemon). For a
// detached proxy a raw fork() makes the grandchild (no atfork handlers run in a child of a
// multithreaded process) and reports its pid on `pid_w`.
[[noreturn]] void ChildExec(const std::vector<char*>& argv, int netns_fd, int ready_w, int pid_w,
                            bool detached, pid_t parent) {
  if (detached) {
    ::setsid();
    long grandchild = ::syscall(SYS_fork);
    if (grandchild != 0) {
      pid_t p = static_cast<pid_t>(grandchild);
      (void)!::write(pid_w, &p, sizeof p);
      ::_exit(grandchild < 0 ? 1 : 0);
    }
  } else {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
  }
  // The mask survives exec: a proxy started from a thread that blocks every signal (a
  // pool's refill thread, a server's worker) would be deaf to the SIGTERM that ends it.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Move both fds above 4 first, so that neither dup2 below clobbers the other.
  int ns = ::fcntl(netns_fd, F_DUPFD, 10);
  int ready = ::fcntl(ready_w, F_DUPFD, 10);
  int null = ::open("/dev/null", O_RDWR);
  if (ns < 0 || ready < 0 || null < 0 || ::dup2(ns, 3) < 0 || ::dup2(ready, 4) < 0 ||
      ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || (detached && ::dup2(null, 2) < 0)) {
    ::_exit(126);
  }
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

Result<Spawned> Spawn(const std::vector<std::string>& args, int netns_fd, bool detached) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ASSIGN_OR_RETURN(Pipe ready, MakePipe());
  UniqueFd ready_r = std::move(ready.read), ready_w = std::move(ready.write);
  ASSIGN_OR_RETURN(Pipe pids, MakePipe());
  UniqueFd pid_r = std::move(pids.read), pid_w = std::move(pids.write);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork for corral-netproxy");
  if (pid == 0) ChildExec(argv, netns_fd, ready_w.get(), pid_w.get(), detached, parent);
  ready_w.Reset();
  pid_w.Reset();
  Spawned s;
  s.pid = pid;
  s.ready = std::move(ready_r);
  if (detached) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid_t grandchild = -1;
    if (::read(pid_r.get(), &grandchild, sizeof grandchild) != sizeof grandchild ||
        grandchild <= 0) {
      return Error(ErrorCode::kIo, "starting corral-netproxy detached failed");
    }
    s.pid = grandchild;
  }
  return s;
}

// Reads the proxy's "ready\n" or "error: ...\n".
Status AwaitReady(int fd) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadyTimeoutMs);
  while (line.find('\n') == std::string::npos) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    pollfd p{fd, POLLIN, 0};
    int r = left > 0 ? ::poll(&p, 1, left) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Error(ErrorCode::kIo, "corral-netproxy did not get ready in 10 s");
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  if (line.rfind("ready", 0) == 0) return Ok();
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return Error(
      ErrorCode::kSetupFailed,
      "corral-netproxy: " + (line.empty() ? std::string("exited before it was ready") : line));
}

Result<std::vector<std::string>> Arguments(const JailSpec& spec, const LaunchOptions& options,
                                           std::optional<pid_t> watch) {
  ASSIGN_OR_RETURN(std::string program, FindNetproxyProgram());
  ASSIGN_OR_RETURN(Policy policy, Policy::FromSpec(spec.network, spec.unsafe));
  for (const auto& [address, port] : options.never) policy.AddNever(address, port);
  for (const auto& [address, port] : OwnEndpoints()) policy.AddNever(address, port);
  std::vector<std::string> args = {program,
                                   "--sandbox",
                                   options.sandbox,
                                   "--policy-json",
                                   policy.ToJson().dump(),
                                   "--log",
                                   DecisionsLogPath(options.runtime_dir),
                                   "--summary",
                                   options.summary_path};
  if (watch) {
    args.push_back("--watch-pid");
    args.push_back(std::to_string(*watch));
  }
  return args;
}

// Whether `pid` exited within `timeout_ms` (reaped if it is our child). Waits on a pidfd
// where the kernel has them: Finish() is on the way to a run's answer, where polling in
// steps would add up to a step to every run.
bool WaitExit(pid_t pid, bool own_child, int timeout_ms) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd) {
    pollfd p{pidfd.get(), POLLIN, 0};
    int r;
    while ((r = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    if (r <= 0) return false;
    if (own_child) {
      int status;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    return true;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (own_child) {
      int status;
      if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    } else if (::kill(pid, 0) != 0 && errno == ESRCH) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace

void AddOwnEndpoint(const std::string& host, uint16_t port) {
  auto address = IpAddress::Parse(host);
  if (!address) return;
  std::vector<IpAddress> addresses;
  if (ForbiddenRange(*address) == "unspecified") {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) == 0) {
      for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr) continue;
        char text[INET6_ADDRSTRLEN] = {};
        if (i->ifa_addr->sa_family == AF_INET) {
          ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                      sizeof text);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
          ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, text,
                      sizeof text);
        }
        if (auto a = IpAddress::Parse(text)) addresses.push_back(*a);
      }
      ::freeifaddrs(list);
    }
  }
  addresses.push_back(*address);
  std::lock_guard lock(own_mu);
  for (const auto& a : addresses) own_endpoints.emplace_back(a, port);
}

std::string DecisionsLogPath(const std::string& runtime_dir) {
  return runtime_dir + "/network.jsonl";
}

std::string ReadSummary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  return nlohmann::json::accept(text) ? text : "";
}

Result<NetworkService> NetworkService::StartInNewNamespace(const JailSpec& spec,
                                                           const LaunchOptions& options) {
  ASSIGN_OR_RETURN(auto args, Arguments(spec, options, std::nullopt));
  NetworkService service;
  ASSIGN_OR_RETURN(service.netns_, NewNetworkNamespace());
  ASSIGN_OR_RETURN(Spawned spawned, Spawn(args, service.netns_.get(), /*detached=*/false));
  service.pid_ = spawned.pid;
  service.own_child_ = true;
  service.sandbox_ = options.sandbox;
  service.summary_path_ = options.summary_path;
  RETURN_IF_ERROR(AwaitReady(spawned.ready.get()));  // on error the destructor ends it
  return service;
}

Result<NetworkService> NetworkService::StartForSandbox(const JailSpec& spec, pid_t init_pid,
                                                       const LaunchOptions& options) {
  ASSIGN_OR_RETURN(auto args, Arguments(spec, options, init_pid));
  NetworkService service;
  std::string ns_path = "/proc/" + std::to_string(init_pid) + "/ns/net";
  service.netns_ = UniqueFd(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!service.netns_) return Error::FromErrno(errno, ns_path);
  ASSIGN_OR_RETURN(Spawned spawned, Spawn(args, service.netns_.get(), /*detached=*/true));
  service.pid_ = spawned.pid;
  service.sandbox_ = options.sandbox;
  service.summary_path_ = options.summary_path;
  RETURN_IF_ERROR(AwaitReady(spawned.ready.get()));
  return service;
}

NetworkService::NetworkService(NetworkService&& other) noexcept
    : netns_(std::move(other.netns_)),
      pid_(std::exchange(other.pid_, -1)),
      own_child_(other.own_child_),
      sandbox_(std::move(other.sandbox_)),
      summary_path_(std::move(other.summary_path_)) {}

NetworkService& NetworkService::operator=(NetworkService&& other) noexcept {
  if (this != &other) {
    (void)Finish();
    netns_ = std::move(other.netns_);
    pid_ = std::exchange(other.pid_, -1);
    own_child_ = other.own_child_;
    sandbox_ = std::move(other.sandbox_);
    summary_path_ = std::move(other.summary_path_);
  }
  return *this;
}

NetworkService::~NetworkService() { (void)Finish(); }

std::string NetworkService::Finish() {
  if (pid_ <= 0) return "";
  ::kill(pid_, SIGTERM);
  if (!WaitExit(pid_, own_child_, kStopTimeoutMs)) {
    ::kill(pid_, SIGKILL);
    WaitExit(pid_, own_child_, kStopTimeoutMs);
  }
  pid_ = -1;
  std::string summary = ReadSummary(summary_path_);
  ::unlink(summary_path_.c_str());
  if (summary.empty()) return summary;
  nlohmann::json j = nlohmann::json::parse(summary, nullptr, false);
  if (!j.is_object()) return summary;
  j["sandbox"] = sandbox_;
  return j.dump();
}

}  // namespace corral::runtime::net
