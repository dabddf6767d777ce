#include "jail/user_ns.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string>
#include <vector>

#include "jail/setup_record.h"

extern char** environ;

namespace corral::jail {

namespace {

// One write(2): the kernel parses a map only from a single write at offset 0.
Status WriteProcFile(pid_t pid, const char* name, const std::string& text) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno(errno, "open " + path);
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return Error::FromErrno(n < 0 ? err : EIO, "write " + path + " (" + text + ")");
  }
  return Ok();
}

// newuidmap PID INSIDE OUTSIDE COUNT...: the setuid helper checks the ranges against
// /etc/subuid (or /etc/subgid) for the caller and writes the map for us.
Status RunMapHelper(const std::string& helper, pid_t pid, const std::vector<IdMapping>& map) {
  std::vector<std::string> args = {helper, std::to_string(pid)};
  for (const IdMapping& m : map) {
    args.push_back(std::to_string(m.inside));
    args.push_back(std::to_string(m.outside));
    args.push_back(std::to_string(m.count));
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = -1;
  int err = ::posix_spawn(&child, helper.c_str(), nullptr, nullptr, argv.data(), environ);
  if (err != 0) return Error::FromErrno(err, "run " + helper);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "wait for " + helper);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string line = helper;
    for (size_t i = 1; i < args.size(); ++i) line += " " + args[i];
    return Error(ErrorCode::kPermissionDenied,
                 line +
                     " failed (its message is above); check the ranges in /etc/subuid and "
                     "/etc/subgid for this user");
  }
  return Ok();
}

bool ParseU32(std::string_view text, uint32_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<SubordinateRange> FindSubordinateRange(const std::string& file_text,
                                                     const std::string& user_name, uint32_t id) {
  size_t start = 0;
  while (start < file_text.size()) {
    size_t end = file_text.find('\n', start);
    if (end == std::string::npos) end = file_text.size();
    std::string_view line(file_text.data() + start, end - start);
    start = end + 1;
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view who = line.substr(0, c1);
    uint32_t who_id = 0;
    bool match =
        (!user_name.empty() && who == user_name) || (ParseU32(who, &who_id) && who_id == id);
    SubordinateRange range;
    if (match && ParseU32(line.substr(c1 + 1, c2 - c1 - 1), &range.start) &&
        ParseU32(line.substr(c2 + 1), &range.count) && range.count > 0) {
      return range;
    }
  }
  return std::nullopt;
}

std::string IdMapText(const std::vector<IdMapping>& map) {
  std::string text;
  for (const IdMapping& m : map) {
    text += std::to_string(m.inside) + " " + std::to_string(m.outside) + " " +
            std::to_string(m.count) + "\n";
  }
  return text;
}

Status WriteIdMaps(pid_t pid, const UserNamespacePlan& plan) {
  if (!plan.newuidmap.empty()) {
    RETURN_IF_ERROR(RunMapHelper(plan.newuidmap, pid, plan.uid_map));
  } else {
    RETURN_IF_ERROR(WriteProcFile(pid, "uid_map", IdMapText(plan.uid_map)));
  }
  if (!plan.newgidmap.empty()) return RunMapHelper(plan.newgidmap, pid, plan.gid_map);
  // Without CAP_SETGID over the parent namespace the kernel takes a gid_map only once
  // setgroups is off, so that dropping a group cannot grant access (a "deny" ACL by group).
  if (plan.deny_setgroups) RETURN_IF_ERROR(WriteProcFile(pid, "setgroups", "deny"));
  return WriteProcFile(pid, "gid_map", IdMapText(plan.gid_map));
}

Status SignalIdMapsWritten(int setup_fd) {
  const char go = 'u';
  if (::send(setup_fd, &go, 1, MSG_NOSIGNAL) != 1) {
    return Error::FromErrno(errno, "telling the jail its id maps are written");
  }
  return Ok();
}

bool AwaitIdMaps(int setup_fd) {
  char go = 0;
  ssize_t n;
  do {
    n = ::recv(setup_fd, &go, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || go != 'u') {
    ReportSetupFailure(setup_fd, SetupStep::kUserNamespace, n < 0 ? errno : EPIPE,
                       "waiting for the parent to write the id maps");
    return false;
  }
  return true;
}

bool TakeInitIds(const JailPlan& plan, int setup_fd) {
  // Raw syscalls, as in ids.cc. No id here is the namespace's root as the kernel sees it
  // before the change unless the new one is too, so the capabilities in the namespace
  // stay (capabilities(7), "Effect of user ID changes on capabilities").
  const UserNamespacePlan& ns = plan.user_ns;
  if (::syscall(SYS_setresgid, ns.init_gid, ns.init_gid, ns.init_gid) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kUserNamespace, errno, "init setresgid");
    return false;
  }
  if (::syscall(SYS_setresuid, ns.init_uid, ns.init_uid, ns.init_uid) != 0) {
    ReportSetupFailure(setup_fd, SetupStep::kUserNamespace, errno, "init setresuid");
    return false;
  }
  return true;
}

}  // namespace corral::jail
