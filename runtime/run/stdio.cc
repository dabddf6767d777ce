#include "runtime/run/stdio.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/run/pty.h"

namespace corral::runtime {

namespace {

bool OnFs(int fd, long magic) {
  struct statfs fs;
  return ::fstatfs(fd, &fs) == 0 && static_cast<long>(fs.f_type) == magic;
}

// /dev/null, zero, full, random, urandom: the same names inside; a benchmark's `> /dev/null`
// must stay a direct write.
bool HarmlessMemDevice(const struct stat& st) {
  if (major(st.st_rdev) != 1) return false;
  unsigned m = minor(st.st_rdev);
  return m == 3 || m == 5 || m == 7 || m == 8 || m == 9;
}

bool SameFile(int a, int b) {
  struct stat sa, sb;
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// write() that reports EPIPE instead of raising SIGPIPE (a named FIFO's reader, or the
// command's stdin, may be gone): blocked for this thread, a pending one consumed.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t n = ::write(fd, data, size);
  if (n < 0 && errno == EPIPE) {
    timespec zero{};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
    errno = EPIPE;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return n;
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = WriteNoSigpipe(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the caller's stdout is gone (EPIPE, EIO): what a command would get
    data += n;
    size -= static_cast<size_t>(n);
  }
}

OutputRelay RelayTo(int dest, CallerFdKind kind) {
  OutputRelay relay;
  relay.dest = dest;
  if (kind == CallerFdKind::kTerminal) {
    relay.filter.emplace();
  } else {
    relay.splice = true;
  }
  return relay;
}

// A raw relay's pipe holds 1 MiB (where the limit allows): a command writing a large
// file then wakes corral a sixteenth as often as with the default 64 KiB.
constexpr int kRawRelayPipeBytes = 1 << 20;

}  // namespace

CallerFdKind ClassifyCallerFd(int fd, bool relay_pipes) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return CallerFdKind::kGiven;  // closed: the child's dup2 says so
  const CallerFdKind pipe = relay_pipes ? CallerFdKind::kHeldPipe : CallerFdKind::kGiven;
  switch (st.st_mode & S_IFMT) {
    case S_IFSOCK:
      return pipe;  // its link is socket:[N], bound or not
    case S_IFIFO:
      return OnFs(fd, PIPEFS_MAGIC) ? pipe : CallerFdKind::kHostPath;
    case S_IFCHR:
      if (::isatty(fd)) return CallerFdKind::kTerminal;
      return HarmlessMemDevice(st) ? CallerFdKind::kGiven : CallerFdKind::kHostPath;
    case 0:  // eventfd, signalfd, ...: anon_inode:[...]
      return OnFs(fd, ANON_INODE_FS_MAGIC) ? CallerFdKind::kGiven : CallerFdKind::kHostPath;
    default:  // regular files (memfds too), directories, block devices
      return CallerFdKind::kHostPath;
  }
}

void OutputRelay::Write(const char* data, size_t size) {
  if (!filter) {
    WriteAll(dest, data, size);
    return;
  }
  std::string out;
  filter->Feed(data, size, &out);
  WriteAll(dest, out.data(), out.size());
}

std::optional<bool> OutputRelay::Splice(int pipe) {
  // Until the pipe is empty, bounded: the wait loop has other fds to serve too.
  for (int moved = 0; moved < 16;) {
    ssize_t n = ::splice(pipe, nullptr, dest, nullptr, kRawRelayPipeBytes, SPLICE_F_NONBLOCK);
    if (n > 0) {
      ++moved;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    if (moved == 0 && (errno == EINVAL || errno == ENOSYS)) {
      splice = false;  // O_APPEND, a device without splice: read and write instead
      return std::nullopt;
    }
    // EPIPE, EIO, ENOSPC: what the command's own write would have met. After some data,
    // the next call reports it.
    return moved > 0;
  }
  return true;
}

void OutputRelay::Finish() {
  if (!filter) return;
  std::string out;
  filter->Finish(&out);
  WriteAll(dest, out.data(), out.size());
}

bool InputRelay::ReadSource() {
  char buf[65536];
  ssize_t n = ::read(source, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    source = -1;
    if (eof_as_eot) {
      pending.assign(1, '\x04');
      offset = 0;
      return WriteSink();
    }
    sink.Reset();  // EOF for the command
    return false;
  }
  pending.assign(buf, static_cast<size_t>(n));
  offset = 0;
  return WriteSink();
}

bool InputRelay::WriteSink() {
  while (offset < pending.size()) {
    ssize_t n = WriteNoSigpipe(sink.get(), pending.data() + offset, pending.size() - offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;  // the command reads slower: poll for room
    if (n <= 0) {  // the command closed its stdin: nothing more to relay
      sink.Reset();
      source = -1;
      return false;
    }
    offset += static_cast<size_t>(n);
  }
  if (source < 0 && !eof_as_eot) sink.Reset();
  return source >= 0;
}

Stdio::Stdio(Stdio&& other) noexcept = default;
Stdio& Stdio::operator=(Stdio&& other) noexcept = default;
Stdio::~Stdio() = default;

int Stdio::child_stdin() const {
  if (tty_socket.write) return tty_socket.write.get();
  if (in.read) return in.read.get();
  return pass_stdin ? caller_stdin : dev_null.get();
}

int Stdio::child_stdout() const {
  if (tty_socket.write) return tty_socket.write.get();
  return out.write ? out.write.get() : caller_stdout;
}

int Stdio::child_stderr() const {
  if (tty_socket.write) return tty_socket.write.get();
  if (shared_pipe) return out.write.get();
  return err.write ? err.write.get() : caller_stderr;
}

void Stdio::CloseChildEnds() {
  out.write.Reset();
  err.write.Reset();
  in.read.Reset();
  tty_socket.write.Reset();
}

void Stdio::FinishRelays() {
  if (out_relay) out_relay->Finish();
  if (err_relay) err_relay->Finish();
}

namespace {

// -i: the caller's stdin, or a pipe the wait loop copies it into.
Status RelayStdin(Stdio& io) {
  if (ClassifyCallerFd(io.caller_stdin) == CallerFdKind::kGiven) return {};
  ASSIGN_OR_RETURN(io.in, MakePipe());
  ::fcntl(io.in.write.get(), F_SETFL, O_NONBLOCK);
  io.in_relay.emplace();
  io.in_relay->source = io.caller_stdin;
  io.in_relay->sink = std::move(io.in.write);
  return {};
}

// Output that is not captured: given as it is, or relayed (see the header).
Status RelayOutput(Stdio& io) {
  CallerFdKind out_kind = ClassifyCallerFd(io.caller_stdout, io.relay_pipes);
  CallerFdKind err_kind = ClassifyCallerFd(io.caller_stderr, io.relay_pipes);
  if (out_kind != CallerFdKind::kGiven) {
    ASSIGN_OR_RETURN(io.out, MakePipe());
    io.out_relay = RelayTo(io.caller_stdout, out_kind);
    if (out_kind == CallerFdKind::kHostPath) {
      (void)::fcntl(io.out.read.get(), F_SETPIPE_SZ, kRawRelayPipeBytes);
    }
  }
  if (err_kind == CallerFdKind::kGiven) return {};
  if (out_kind == err_kind && SameFile(io.caller_stdout, io.caller_stderr)) {
    io.shared_pipe = true;  // 2>&1: one pipe, one filter, the order kept
    return {};
  }
  ASSIGN_OR_RETURN(io.err, MakePipe());
  io.err_relay = RelayTo(io.caller_stderr, err_kind);
  if (err_kind == CallerFdKind::kHostPath) {
    (void)::fcntl(io.err.read.get(), F_SETPIPE_SZ, kRawRelayPipeBytes);
  }
  return {};
}

}  // namespace

Result<Stdio> MakeStdio(const RunOptions& options) {
  Stdio io;
  io.capture = options.capture_output;
  io.pass_stdin = options.pass_stdin;
  io.caller_stdin = options.stdin_fd;
  io.caller_stdout = options.stdout_fd;
  io.caller_stderr = options.stderr_fd;
  io.relay_pipes = options.relay_pipes;
  if (options.tty) {
    if (options.capture_output) {
      return Error(ErrorCode::kInvalidArgument, "a terminal's output cannot be captured");
    }
    ASSIGN_OR_RETURN(SocketPair tty_socket, MakeSocketPair());
    io.tty_socket = Pipe{std::move(tty_socket.one), std::move(tty_socket.other)};
    return io;
  }
  if (!options.pass_stdin) {
    io.dev_null.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!io.dev_null) return Error::FromErrno(errno, "/dev/null");
  } else {
    RETURN_IF_ERROR(RelayStdin(io));
  }
  if (options.capture_output) {
    ASSIGN_OR_RETURN(io.out, MakePipe());
    ASSIGN_OR_RETURN(io.err, MakePipe());
  } else {
    RETURN_IF_ERROR(RelayOutput(io));
  }
  return io;
}

}  // namespace corral::runtime
