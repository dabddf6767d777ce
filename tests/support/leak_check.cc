#include "tests/support/leak_check.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/files.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr int kCgroupDepth = 4;
const char* const kTempDirs[] = {"/tmp", "/var/tmp", "/dev/shm", "/run"};
const char* const kMountPrefixes[] = {"/tmp/", "/var/tmp/", "/dev/shm/"};

std::mutex g_spawned_mu;
std::set<pid_t> g_spawned;

struct ProcInfo {
  std::string comm;
  char state = '?';
  pid_t ppid = 0;
};

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Directory entries of `path` that are real directories (symlinks excluded: on hybrid
// hosts /sys/fs/cgroup/cpu is a symlink to cpu,cpuacct and would be counted twice).
std::vector<std::string> ListEntries(const std::string& path, bool dirs_only) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return names;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (dirs_only) {
      struct stat st;
      if (lstat((path + "/" + name).c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
    }
    names.push_back(name);
  }
  closedir(d);
  return names;
}

// /proc/<pid>/stat: "pid (comm) state ppid ...". comm may hold spaces and parentheses,
// so it ends at the last ')'.
std::map<pid_t, ProcInfo> ReadProcTable() {
  std::map<pid_t, ProcInfo> table;
  for (const std::string& name : ListEntries("/proc", false)) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    Result<std::string> stat = ReadFile("/proc/" + name + "/stat");
    if (!stat) continue;  // exited meanwhile
    size_t open = stat->find('('), close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 > stat->size()) {
      continue;
    }
    ProcInfo info;
    info.comm = stat->substr(open + 1, close - open - 1);
    info.state = (*stat)[close + 2];
    info.ppid = static_cast<pid_t>(std::atol(stat->c_str() + close + 4));
    table[static_cast<pid_t>(std::atol(name.c_str()))] = info;
  }
  return table;
}

std::set<pid_t> DescendantsOf(const std::map<pid_t, ProcInfo>& table, pid_t root) {
  std::set<pid_t> result;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, info] : table) {
      if (info.ppid == parent && result.insert(pid).second) frontier.push_back(pid);
    }
  }
  return result;
}

std::string DescribeProc(pid_t pid, const ProcInfo& info) {
  std::ostringstream out;
  out << pid << " (" << info.comm << ") state " << info.state << " ppid " << info.ppid;
  return out.str();
}

void CollectCgroupTree(const std::string& path, int depth, std::set<std::string>* out) {
  out->insert(path);
  if (depth >= kCgroupDepth) return;
  for (const std::string& name : ListEntries(path, true)) {
    CollectCgroupTree(path + "/" + name, depth + 1, out);
  }
}

std::set<std::string> ScanCgroups() {
  std::set<std::string> found;
  for (const std::string& top : ListEntries(kCgroupRoot, true)) {
    std::string top_path = std::string(kCgroupRoot) + "/" + top;
    if (StartsWith(top, "corral")) {
      CollectCgroupTree(top_path, 1, &found);
      continue;
    }
    for (const std::string& name : ListEntries(top_path, true)) {
      if (StartsWith(name, "corral")) CollectCgroupTree(top_path + "/" + name, 1, &found);
    }
  }
  return found;
}

// corral's runtime directory is shared infrastructure, like the cgroup parent "corral":
// the first run on a fresh machine creates it (and its seccomp cache). What lives in its
// sandboxes/ directory belongs to someone, and is checked.
constexpr char kRuntimeDir[] = "/run/corral";

std::set<std::string> ScanTempEntries() {
  std::set<std::string> found;
  for (const char* dir : kTempDirs) {
    for (const std::string& name : ListEntries(dir, false)) {
      std::string path = std::string(dir) + "/" + name;
      if (path == kRuntimeDir) continue;
      if (StartsWith(name, "corral")) found.insert(path);
    }
  }
  for (const std::string& name : ListEntries(std::string(kRuntimeDir) + "/sandboxes", false)) {
    found.insert(std::string(kRuntimeDir) + "/sandboxes/" + name);
  }
  return found;
}

// mountinfo fields: id parent dev root mount_point options [optional...] - fstype source ...
std::multiset<std::string> ScanMounts() {
  std::multiset<std::string> found;
  Result<std::string> info = ReadFile("/proc/self/mountinfo");
  if (!info) return found;
  std::istringstream lines(*info);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || f.end() - dash < 3) continue;
    const std::string& mount_point = f[4];
    bool relevant = mount_point.find("corral") != std::string::npos;
    for (const char* prefix : kMountPrefixes)
      relevant = relevant || StartsWith(mount_point, prefix);
    if (relevant) found.insert(mount_point + " " + dash[1] + " " + dash[2]);
  }
  return found;
}

std::set<pid_t> DigitTokens(const std::string& s) {
  std::set<pid_t> tokens;
  for (size_t i = 0; i < s.size();) {
    if (!isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j - i <= 9) tokens.insert(static_cast<pid_t>(std::atol(s.substr(i, j - i).c_str())));
    i = j;
  }
  return tokens;
}

// True for /sys/fs/cgroup/corral and /sys/fs/cgroup/<hierarchy>/corral, and their runs/
// (one-shot runs' parent): the shared parents, made on first use and kept.
bool IsSharedCgroupParent(const std::string& path) {
  std::string rest = path.substr(std::string(kCgroupRoot).size());
  for (const char* parent : {"/corral", "/corral/runs"}) {
    if (rest == parent) return true;
    size_t slash = rest.find('/', 1);
    if (slash != std::string::npos && rest.substr(slash) == parent) return true;
  }
  return false;
}

// /tmp/corral-test-<pid>-* of another live test process is that process's business.
bool IsOtherTestsTempDir(const std::string& path) {
  size_t pos = path.find("corral-test-");
  if (pos == std::string::npos) return false;
  pid_t owner = static_cast<pid_t>(std::atol(path.c_str() + pos + 12));
  return owner != getpid();
}

void ReapZombieChildren() {
  for (const auto& [pid, info] : ReadProcTable()) {
    if (info.ppid == getpid() && info.state == 'Z') waitpid(pid, nullptr, WNOHANG);
  }
}

}  // namespace

void RecordSpawnedPid(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_spawned_mu);
  g_spawned.insert(pid);
}

HostSnapshot TakeHostSnapshot() {
  HostSnapshot snap;
  snap.mounts = ScanMounts();
  snap.cgroups = ScanCgroups();
  snap.temp_entries = ScanTempEntries();
  std::map<pid_t, ProcInfo> table = ReadProcTable();
  std::set<pid_t> ours = DescendantsOf(table, getpid());
  for (pid_t pid : ours) snap.descendants[pid] = DescribeProc(pid, table[pid]);
  for (const auto& [pid, info] : table) {
    if (pid != getpid() && !ours.count(pid) && StartsWith(info.comm, "corral")) {
      snap.foreign_corrals.push_back(std::to_string(pid) + " (" + info.comm + ")");
    }
  }
  return snap;
}

std::string Leak::Describe() const {
  switch (kind) {
    case Kind::kMount:
      return "mount " + what;
    case Kind::kCgroup:
      return "cgroup " + what;
    case Kind::kProcess:
      return "process " + what;
    case Kind::kTempEntry:
      return "temp entry " + what;
  }
  return what;
}

std::vector<Leak> CompareSnapshots(const HostSnapshot& before, const HostSnapshot& after) {
  std::set<pid_t> ours = {getpid()};
  {
    std::lock_guard<std::mutex> lock(g_spawned_mu);
    ours.insert(g_spawned.begin(), g_spawned.end());
  }
  for (const auto& [pid, line] : before.descendants) ours.insert(pid);
  for (const auto& [pid, line] : after.descendants) ours.insert(pid);
  bool no_foreign = before.foreign_corrals.empty() && after.foreign_corrals.empty();
  auto attributed = [&](const std::string& what) {
    if (no_foreign) return true;
    for (pid_t token : DigitTokens(what)) {
      if (ours.count(token)) return true;
    }
    return false;
  };

  std::vector<Leak> leaks;
  for (const auto& [pid, line] : after.descendants) {
    if (!before.descendants.count(pid)) leaks.push_back({Leak::Kind::kProcess, line, pid, true});
  }
  for (auto it = after.mounts.begin(); it != after.mounts.end();
       it = after.mounts.upper_bound(*it)) {
    if (after.mounts.count(*it) > before.mounts.count(*it)) {
      leaks.push_back({Leak::Kind::kMount, *it, 0, attributed(*it)});
    }
  }
  for (const std::string& path : after.cgroups) {
    if (before.cgroups.count(path) || IsSharedCgroupParent(path)) continue;
    leaks.push_back({Leak::Kind::kCgroup, path, 0, attributed(path)});
  }
  for (const std::string& path : after.temp_entries) {
    if (before.temp_entries.count(path) || IsOtherTestsTempDir(path)) continue;
    leaks.push_back({Leak::Kind::kTempEntry, path, 0, attributed(path)});
  }
  return leaks;
}

std::vector<Leak> WaitForNoLeaks(const HostSnapshot& before, std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    ReapZombieChildren();
    std::vector<Leak> leaks = CompareSnapshots(before, TakeHostSnapshot());
    bool any = std::any_of(leaks.begin(), leaks.end(), [](const Leak& l) { return l.attributed; });
    if (!any || std::chrono::steady_clock::now() >= deadline) return leaks;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

namespace {

// Kills by pid, but only pids that are still our descendants: between the snapshot and
// now a leaked process may have exited and its pid been reused by someone else's.
void KillLeakedProcesses(const std::vector<Leak>& leaks) {
  std::set<pid_t> ours = DescendantsOf(ReadProcTable(), getpid());
  std::vector<pid_t> killed;
  for (const Leak& leak : leaks) {
    if (leak.kind != Leak::Kind::kProcess || !ours.count(leak.pid)) continue;
    if (kill(leak.pid, SIGKILL) == 0) killed.push_back(leak.pid);
  }
  // Orphaned grandchildren are reparented to us (subreaper) and reaped here too.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    ReapZombieChildren();
    bool alive =
        std::any_of(killed.begin(), killed.end(), [](pid_t pid) { return kill(pid, 0) == 0; });
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Deepest first, so children go before their parents. Processes still inside are in a
// cgroup that a corral we started created; they are killed by pid before the rmdir.
std::vector<std::string> RemoveLeakedCgroups(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  std::vector<std::string> failed;
  for (const std::string& path : paths) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (rmdir(path.c_str()) < 0 && errno == EBUSY &&
           std::chrono::steady_clock::now() < deadline) {
      Result<std::string> procs = ReadFile(path + "/cgroup.procs");
      std::istringstream in(procs ? *procs : "");
      for (pid_t pid; in >> pid;) kill(pid, SIGKILL);
      ReapZombieChildren();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (access(path.c_str(), F_OK) == 0) failed.push_back("cgroup " + path);
  }
  return failed;
}

}  // namespace

std::vector<std::string> CleanUpLeaks(const std::vector<Leak>& leaks) {
  KillLeakedProcesses(leaks);
  std::vector<std::string> cgroups;
  std::vector<std::string> failed;
  for (const Leak& leak : leaks) {
    if (!leak.attributed) continue;
    if (leak.kind == Leak::Kind::kCgroup) cgroups.push_back(leak.what);
    if (leak.kind == Leak::Kind::kMount) {
      std::string mount_point = leak.what.substr(0, leak.what.find(' '));
      if (umount2(mount_point.c_str(), MNT_DETACH) < 0) failed.push_back(leak.Describe());
    }
  }
  for (const std::string& f : RemoveLeakedCgroups(cgroups)) failed.push_back(f);
  for (const Leak& leak : leaks) {
    if (!leak.attributed || leak.kind != Leak::Kind::kTempEntry) continue;
    Status s = RemoveTree(leak.what);
    if (!s) failed.push_back(leak.Describe() + ": " + s.error().message());
  }
  for (const Leak& leak : leaks) {
    if (leak.kind == Leak::Kind::kProcess && kill(leak.pid, 0) == 0) {
      failed.push_back(leak.Describe());
    }
  }
  return failed;
}

LeakCheckedTest::LeakCheckedTest() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  before_ = TakeHostSnapshot();
}

LeakCheckedTest::~LeakCheckedTest() {
  std::vector<Leak> leaks = WaitForNoLeaks(before_, kGrace);
  std::string attributed, unattributed;
  for (const Leak& leak : leaks) {
    (leak.attributed ? attributed : unattributed) += "\n  " + leak.Describe();
  }
  if (!unattributed.empty()) {
    std::fprintf(stderr,
                 "[leak check] new during this test, not attributed to it (another "
                 "corral was running):%s\n",
                 unattributed.c_str());
  }
  if (attributed.empty()) return;
  ADD_FAILURE() << "test leaked (still present " << kGrace.count()
                << " ms after it ended):" << attributed;
  for (const std::string& f : CleanUpLeaks(leaks)) {
    ADD_FAILURE() << "leak check could not clean up: " << f;
  }
}

}  // namespace corral::test
