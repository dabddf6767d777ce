// Small one-shot commands: file access, signals, exec of a setuid copy, exit codes.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {

int CmdWrite(const Args& args) {
  if (args.empty() || args.size() > 2) return UsageError("write PATH [CONTENT]");
  const std::string& path = args[0];
  std::string content = args.size() > 1 ? args[1] : "written by corral_probe\n";
  JsonWriter j;
  j.BeginObject().Field("command", "write").Field("path", path);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  int err = 0;
  const char* step = "open";
  if (fd >= 0) {
    step = "write";
    ssize_t n = write(fd, content.data(), content.size());
    if (n < 0) err = errno;
    if (n >= 0 && static_cast<size_t>(n) != content.size()) err = EIO;
    if (close(fd) < 0 && err == 0) {
      err = errno;
      step = "close";
    }
  } else {
    err = errno;
  }
  j.Field("ok", err == 0).ErrnoField("errno", err);
  if (err != 0) j.Field("step", step);
  j.EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdRead(const Args& args) {
  if (args.size() != 1) return UsageError("read PATH");
  std::string content;
  int err = ReadWholeFile(args[0], &content);
  constexpr size_t kMaxContent = 64 * 1024;
  bool truncated = content.size() > kMaxContent;
  if (truncated) content.resize(kMaxContent);
  JsonWriter j;
  j.BeginObject().Field("command", "read").Field("path", args[0]).Field("ok", err == 0);
  j.ErrnoField("errno", err).Key("content");
  if (err == 0) {
    j.String(content);
  } else {
    j.Null();
  }
  j.Field("truncated", truncated).EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdKill(const Args& args) {
  long long pid, sig = 0;
  if (args.empty() || args.size() > 2 || !ParseNumber(args[0], &pid) ||
      (args.size() == 2 && !ParseNumber(args[1], &sig))) {
    return UsageError("kill PID [SIG]");
  }
  int rc = kill(static_cast<pid_t>(pid), static_cast<int>(sig));
  int err = rc < 0 ? errno : 0;
  JsonWriter j;
  j.BeginObject().Field("command", "kill").Field("pid", pid).Field("signal", sig);
  j.Field("ok", rc == 0).ErrnoField("errno", err).EndObject();
  return PrintJson(j) ? 0 : 1;
}

// Execs PATH (meant to be a setuid-root copy of this probe) with `report`. What proves the
// point is the report printed by the new image: euid must still be the jail's uid.
int CmdSetuidTest(const Args& args) {
  if (args.size() != 1) return UsageError("setuid-test PATH");
  const std::string& path = args[0];
  struct stat st;
  bool setuid_bit = stat(path.c_str(), &st) == 0 && (st.st_mode & S_ISUID);
  char* argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>("report"), nullptr};
  execv(path.c_str(), argv);
  int err = errno;
  JsonWriter j;
  j.BeginObject().Field("command", "setuid-test").Field("path", path);
  j.Field("setuid_bit", setuid_bit).ErrnoField("exec_errno", err).EndObject();
  PrintJson(j);
  return 1;
}

int CmdExit(const Args& args) {
  long long code;
  if (args.size() != 1 || !ParseNumber(args[0], &code) || code > 255) {
    return UsageError("exit N (0..255)");
  }
  return static_cast<int>(code);
}

int CmdSleep(const Args& args) {
  long long seconds;
  if (args.size() != 1 || !ParseNumber(args[0], &seconds)) return UsageError("sleep SECONDS");
  SleepSeconds(static_cast<double>(seconds));
  JsonWriter j;
  j.BeginObject().Field("command", "sleep").Field("slept", seconds).EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdFdCount(const Args& args) {
  if (!args.empty()) return UsageError("fd-count takes no arguments");
  JsonWriter j;
  j.BeginObject().Field("command", "fd-count").Key("fds").BeginArray();
  long long count = 0;
  DIR* d = opendir("/proc/self/fd");
  int err = d ? 0 : errno;
  if (d) {
    while (struct dirent* e = readdir(d)) {
      long long fd;
      if (!ParseNumber(e->d_name, &fd) || fd == dirfd(d)) continue;
      j.Int(fd);
      ++count;
    }
    closedir(d);
  }
  j.EndArray().Field("fd_count", count).ErrnoField("errno", err).EndObject();
  return PrintJson(j) ? 0 : 1;
}

}  // namespace corral::probe
