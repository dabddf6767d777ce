// `report`: what the probe sees from inside the jail. Every fact is read from the kernel
// (procfs, syscalls), never inferred, so the tests check the jail rather than the probe.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

extern char** environ;

namespace corral::probe {
namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> SplitSpaces(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (start < line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    if (end > start) fields.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return fields;
}

void AddIds(JsonWriter& j) {
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  getresuid(&ruid, &euid, &suid);
  getresgid(&rgid, &egid, &sgid);
  j.Field("uid", static_cast<long long>(ruid)).Field("euid", static_cast<long long>(euid));
  j.Field("suid", static_cast<long long>(suid)).Field("gid", static_cast<long long>(rgid));
  j.Field("egid", static_cast<long long>(egid)).Field("sgid", static_cast<long long>(sgid));
  std::vector<gid_t> groups(NGROUPS_MAX);  // 256 KiB: too much for a small jail stack
  int n = getgroups(static_cast<int>(groups.size()), groups.data());
  j.Key("groups").BeginArray();
  for (int i = 0; i < n; ++i) j.Int(groups[i]);
  j.EndArray();
}

void AddProcessInfo(JsonWriter& j) {
  pid_t pid = getpid();
  j.Field("pid", static_cast<long long>(pid)).Field("ppid", static_cast<long long>(getppid()));
  j.Field("sid", static_cast<long long>(getsid(0)));
  j.Field("pgid", static_cast<long long>(getpgid(0)));
  j.Field("session_leader", getsid(0) == pid);
  std::string cmdline;
  int err = ReadWholeFile("/proc/1/cmdline", &cmdline);
  j.ErrnoField("proc1_cmdline_errno", err);
  j.Key("proc1_argv").BeginArray();
  size_t start = 0;
  while (start < cmdline.size()) {
    size_t end = cmdline.find('\0', start);
    if (end == std::string::npos) end = cmdline.size();
    j.String(cmdline.substr(start, end - start));
    start = end + 1;
  }
  j.EndArray();
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();
  j.Field("proc1_cmdline", cmdline);
  char cwd[PATH_MAX];
  j.Key("cwd");
  if (getcwd(cwd, sizeof(cwd))) {
    j.String(cwd);
  } else {
    j.Null();
  }
}

void AddUts(JsonWriter& j) {
  struct utsname u;
  if (uname(&u) == 0) {
    j.Field("hostname", u.nodename).Field("domainname", u.domainname);
    j.Field("kernel", u.release);
  }
}

// CapEff and friends stay hex strings (as the kernel prints them) so a test failure shows
// exactly which bits leaked.
void AddStatus(JsonWriter& j) {
  std::string status;
  int err = ReadWholeFile("/proc/self/status", &status);
  j.ErrnoField("status_errno", err);
  static const char* kStringKeys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
  static const char* kIntKeys[] = {"NoNewPrivs", "Seccomp", "Seccomp_filters"};
  for (const std::string& line : SplitLines(status)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    for (const char* k : kStringKeys) {
      if (key == k) j.Field(key, value);
    }
    for (const char* k : kIntKeys) {
      long long v;
      if (key == k && ParseNumber(value, &v)) j.Field(key, v);
    }
  }
}

void AddInterfaces(JsonWriter& j) {
  std::string dev;
  int err = ReadWholeFile("/proc/net/dev", &dev);
  j.ErrnoField("net_dev_errno", err);
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  j.Key("interfaces").BeginArray();
  for (const std::string& line : SplitLines(dev)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    j.BeginObject().Field("name", name).Key("up");
    struct ifreq ifr = {};
    name.copy(ifr.ifr_name, IFNAMSIZ - 1);
    if (sock >= 0 && ioctl(sock, SIOCGIFFLAGS, &ifr) == 0) {
      j.Bool(ifr.ifr_flags & IFF_UP).Field("loopback", (ifr.ifr_flags & IFF_LOOPBACK) != 0);
    } else {
      j.Null();
    }
    j.EndObject();
  }
  j.EndArray();
  if (sock >= 0) close(sock);
}

void AddPids(JsonWriter& j) {
  std::vector<long long> pids;
  DIR* d = opendir("/proc");
  if (d) {
    while (struct dirent* e = readdir(d)) {
      long long pid;
      if (ParseNumber(e->d_name, &pid)) pids.push_back(pid);
    }
    closedir(d);
  }
  std::sort(pids.begin(), pids.end());
  j.Field("pids_visible", static_cast<long long>(pids.size())).Key("pids").BeginArray();
  for (long long p : pids) j.Int(p);
  j.EndArray();
}

void AddFds(JsonWriter& j) {
  j.Key("fds").BeginArray();
  DIR* d = opendir("/proc/self/fd");
  if (d) {
    int self = dirfd(d);
    while (struct dirent* e = readdir(d)) {
      long long fd;
      if (!ParseNumber(e->d_name, &fd) || fd == self) continue;
      char target[PATH_MAX];
      ssize_t n = readlinkat(self, e->d_name, target, sizeof(target) - 1);
      target[n < 0 ? 0 : n] = '\0';
      j.BeginObject().Field("fd", fd).Field("target", target);
      j.Field("tty", isatty(static_cast<int>(fd)) == 1).EndObject();
    }
    closedir(d);
  }
  j.EndArray();
  // A new session has no controlling terminal, so this must fail (ENXIO).
  int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  j.ErrnoField("dev_tty_errno", tty < 0 ? errno : 0);
  if (tty >= 0) close(tty);
}

void AddEnvAndFiles(JsonWriter& j) {
  j.Key("env").BeginArray();
  for (char** e = environ; e && *e; ++e) j.String(*e);
  j.EndArray();
  static const char* kSensitive[] = {"/etc/shadow",          "/etc/gshadow",    "/etc/sudoers",
                                     "/etc/sudoers.d",       "/etc/ssh",        "/root/.ssh",
                                     "/var/run/docker.sock", "/run/docker.sock"};
  j.Key("exists").BeginObject();
  for (const char* path : kSensitive) {
    struct stat st;
    j.Field(path, lstat(path, &st) == 0);
  }
  j.EndObject();
}

// mountinfo: "id parent major:minor root mount_point mount_opts [optional...] - fstype
// source super_opts".
void AddMounts(JsonWriter& j) {
  std::string info;
  int err = ReadWholeFile("/proc/self/mountinfo", &info);
  j.ErrnoField("mountinfo_errno", err);
  j.Key("mounts").BeginArray();
  for (const std::string& line : SplitLines(info)) {
    std::vector<std::string> f = SplitSpaces(line);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash == f.end() || f.end() - dash < 4) continue;
    j.BeginObject().Field("mount_point", f[4]).Field("root", f[3]).Field("options", f[5]);
    j.Field("fstype", dash[1]).Field("source", dash[2]).Field("super_options", dash[3]);
    j.EndObject();
  }
  j.EndArray();
}

void AddCgroupAndLimits(JsonWriter& j) {
  std::string cg;
  int err = ReadWholeFile("/proc/self/cgroup", &cg);
  j.ErrnoField("cgroup_errno", err).Key("cgroup").BeginArray();
  for (const std::string& line : SplitLines(cg)) j.String(line);
  j.EndArray();
  static const struct {
    const char* name;
    int resource;
  } kLimits[] = {{"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}, {"fsize", RLIMIT_FSIZE},
                 {"cpu", RLIMIT_CPU},       {"as", RLIMIT_AS},       {"core", RLIMIT_CORE}};
  j.Key("rlimits").BeginObject();
  for (const auto& l : kLimits) {
    struct rlimit r;
    if (getrlimit(l.resource, &r) != 0) continue;
    auto value = [](rlim_t v) { return v == RLIM_INFINITY ? -1LL : static_cast<long long>(v); };
    j.Key(l.name).BeginArray().Int(value(r.rlim_cur)).Int(value(r.rlim_max)).EndArray();
  }
  j.EndObject();
}

}  // namespace

int CmdReport(const Args& args) {
  if (!args.empty()) return UsageError("report takes no arguments");
  JsonWriter j;
  j.BeginObject().Field("command", "report");
  AddProcessInfo(j);
  AddIds(j);
  AddUts(j);
  AddStatus(j);
  AddInterfaces(j);
  AddPids(j);
  AddFds(j);
  AddEnvAndFiles(j);
  AddMounts(j);
  AddCgroupAndLimits(j);
  j.EndObject();
  return PrintJson(j) ? 0 : 1;
}

}  // namespace corral::probe
