#include "runtime/pool_protocol.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "runtime/runtime_dir.h"

namespace corral::runtime {

namespace {

constexpr size_t kMaxFrameFds = 8;

// Reads exactly `size` bytes; false at EOF or on an error (errno set; 0 for EOF).
bool ReceiveAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

nlohmann::json StreamToJson(const StreamOutcome& s) {
  return {{"text", s.text}, {"bytes", s.bytes}, {"dropped_bytes", s.dropped_bytes}};
}

StreamOutcome StreamFromJson(const nlohmann::json& j) {
  StreamOutcome s;
  j.at("text").get_to(s.text);
  j.at("bytes").get_to(s.bytes);
  j.at("dropped_bytes").get_to(s.dropped_bytes);
  return s;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> Optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

}  // namespace

Status SendFrames(int socket_fd, const std::vector<std::string_view>& bodies,
                  const std::vector<int>& fds) {
  if (fds.size() > kMaxFrameFds)
    return Error(ErrorCode::kInvalidArgument, "pool socket: too many fds");
  std::vector<std::array<unsigned char, 4>> headers(bodies.size());
  std::vector<iovec> iov;
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (bodies[i].size() > kMaxPoolFrameBytes) {
      return Error(ErrorCode::kInvalidArgument, "pool socket: frame too large");
    }
    auto size = static_cast<uint32_t>(bodies[i].size());
    headers[i] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                  static_cast<unsigned char>(size >> 16), static_cast<unsigned char>(size >> 24)};
    iov.push_back({headers[i].data(), headers[i].size()});
    if (size > 0) iov.push_back({const_cast<char*>(bodies[i].data()), bodies[i].size()});
  }
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFrameFds * sizeof(int))] = {};
  msghdr msg{};
  if (!fds.empty()) {  // attached to the first byte
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  // Everything in one sendmsg where the socket buffer takes it: each send wakes the peer.
  size_t first = 0;
  while (first < iov.size()) {
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "pool socket: send");
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    auto sent = static_cast<size_t>(n);
    while (first < iov.size() && sent >= iov[first].iov_len) sent -= iov[first++].iov_len;
    if (sent > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + sent;
      iov[first].iov_len -= sent;
    }
  }
  return Ok();
}

Status SendFrame(int socket_fd, const std::string& body, const std::vector<int>& fds) {
  return SendFrames(socket_fd, {body}, fds);
}

Result<std::string> ReceiveFrame(int socket_fd, std::vector<UniqueFd>* fds) {
  unsigned char header[4];
  iovec iov{header, sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxFrameFds * sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error::FromErrno(errno, "pool socket: receive");
  if (n == 0) return Error(ErrorCode::kNotFound, "pool socket: closed");
  // Take ownership of whatever fds came, before anything can fail.
  std::vector<UniqueFd> received;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      received.emplace_back(fd);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    return Error(ErrorCode::kIo, "pool socket: too many descriptors in a frame");
  }
  if (n < static_cast<ssize_t>(sizeof header) &&
      !ReceiveAll(socket_fd, reinterpret_cast<char*>(header) + n, sizeof header - n)) {
    return Error(ErrorCode::kIo, "pool socket: frame cut short");
  }
  uint32_t size =
      header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
  if (size > kMaxPoolFrameBytes) return Error(ErrorCode::kIo, "pool socket: frame too large");
  std::string body(size, '\0');
  if (!ReceiveAll(socket_fd, body.data(), size)) {
    return Error(ErrorCode::kIo, "pool socket: frame cut short");
  }
  if (fds != nullptr) *fds = std::move(received);
  return body;
}

std::string OutcomeToWire(const RunOutcome& o) {
  nlohmann::json j = {
      {"status", static_cast<int>(o.status)},
      {"exit_code", o.exit_code},
      {"signal", OrNull(o.signal)},
      {"limit", o.limit ? nlohmann::json(static_cast<int>(*o.limit)) : nlohmann::json(nullptr)},
      {"wall_ms", o.wall_ms},
      {"cpu_user_ms", o.cpu_user_ms},
      {"cpu_system_ms", o.cpu_system_ms},
      {"memory_peak_bytes", OrNull(o.memory_peak_bytes)},
      {"pids_peak", OrNull(o.pids_peak)},
      {"captured", o.captured},
      {"stdout", StreamToJson(o.stdout_stream)},
      {"stderr", StreamToJson(o.stderr_stream)},
      {"interrupted_by", OrNull(o.interrupted_by)},
      {"pooled", o.pooled},
      {"warnings", o.warnings}};
  if (o.setup_error) {
    j["setup_error"] = {{"step", static_cast<uint32_t>(o.setup_error->step)},
                        {"err", o.setup_error->err},
                        {"message", o.setup_error->message}};
  } else {
    j["setup_error"] = nullptr;
  }
  try {
    return j.dump();
  } catch (const nlohmann::json::type_error&) {
    // Captured output is bytes and JSON strings must be UTF-8: binary output travels as
    // a byte array instead.
    for (auto [key, stream] :
         {std::pair{"stdout", &o.stdout_stream}, {"stderr", &o.stderr_stream}}) {
      j[key]["text"] = nullptr;
      j[key]["raw"] = std::vector<uint8_t>(stream->text.begin(), stream->text.end());
    }
    return j.dump();
  }
}

Result<RunOutcome> OutcomeFromWire(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    RunOutcome o;
    int status = j.at("status").get<int>();
    if (status < 0 || status > static_cast<int>(RunStatus::kSetupFailed)) {
      return Error(ErrorCode::kIo, "pool reply: unknown status");
    }
    o.status = static_cast<RunStatus>(status);
    j.at("exit_code").get_to(o.exit_code);
    o.signal = Optional<int>(j, "signal");
    if (auto limit = Optional<int>(j, "limit")) {
      if (*limit < 0 || *limit > static_cast<int>(LimitKind::kFileSize)) {
        return Error(ErrorCode::kIo, "pool reply: unknown limit");
      }
      o.limit = static_cast<LimitKind>(*limit);
    }
    j.at("wall_ms").get_to(o.wall_ms);
    j.at("cpu_user_ms").get_to(o.cpu_user_ms);
    j.at("cpu_system_ms").get_to(o.cpu_system_ms);
    o.memory_peak_bytes = Optional<int64_t>(j, "memory_peak_bytes");
    o.pids_peak = Optional<int64_t>(j, "pids_peak");
    j.at("captured").get_to(o.captured);
    for (auto [key, stream] :
         {std::pair{"stdout", &o.stdout_stream}, {"stderr", &o.stderr_stream}}) {
      const nlohmann::json& s = j.at(key);
      if (s.at("text").is_null()) {
        auto raw = s.at("raw").get<std::vector<uint8_t>>();
        nlohmann::json copy = s;
        copy["text"] = "";
        *stream = StreamFromJson(copy);
        stream->text.assign(raw.begin(), raw.end());
      } else {
        *stream = StreamFromJson(s);
      }
    }
    o.interrupted_by = Optional<int>(j, "interrupted_by");
    j.at("pooled").get_to(o.pooled);
    j.at("warnings").get_to(o.warnings);
    if (!j.at("setup_error").is_null()) {
      const nlohmann::json& e = j.at("setup_error");
      o.setup_error =
          jail::SetupFailure{static_cast<jail::SetupStep>(e.at("step").get<uint32_t>()),
                             e.at("err").get<int>(), e.at("message").get<std::string>()};
    }
    return o;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, std::string("pool reply: ") + e.what());
  }
}

std::string DefaultPoolSocket() { return RuntimeDir() + "/pool.sock"; }

}  // namespace corral::runtime
