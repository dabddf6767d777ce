// Leak checking for tests that run real jails: proves a test left the host as it found it.
//
// A snapshot records, in the host's namespaces as seen by this test process:
//   - mounts whose mount point contains "corral" or lies under /tmp, /var/tmp, /dev/shm;
//   - cgroup directories /sys/fs/cgroup/corral* and /sys/fs/cgroup/<hierarchy>/corral*,
//     with their subdirectories down to depth 4;
//   - descendant processes of this process (ppid chains in /proc/*/stat);
//   - entries named corral* in /tmp, /var/tmp, /dev/shm and /run.
// Anything present after a test and not before is a leak.
//
// Other engineers and CI jobs may run corral on the same host at the same time, so a new
// mount, cgroup or temp entry is only blamed on this process ("attributed") when its path
// carries the pid of this process or of a process it spawned (corral names one-shot
// cgroups run-<pid>-<n>), or when no foreign corral process (a process named corral*
// outside our tree) was seen while checking. Unattributed ones are printed as warnings.
// Descendant processes are always ours. The top directory "corral" of each cgroup hierarchy
// is the shared parent of every corral cgroup and may be created by the first run; it is
// not a leak (anything below it is).
//
// The checker makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so a process
// that daemonizes out of a corral we started is reparented to us and stays visible.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace corral::test {

// Remembers a pid this process spawned (RunProgram calls it) for attribution.
void RecordSpawnedPid(pid_t pid);

struct HostSnapshot {
  std::multiset<std::string> mounts;         // "<mount point> <fstype> <source>"
  std::set<std::string> cgroups;             // directory paths
  std::map<pid_t, std::string> descendants;  // pid -> "pid (comm) state S ppid P"
  std::set<std::string> temp_entries;        // paths
  std::vector<std::string> foreign_corrals;  // "pid (comm)" of corral* processes not ours
};

HostSnapshot TakeHostSnapshot();

struct Leak {
  enum class Kind { kMount, kCgroup, kProcess, kTempEntry };
  Kind kind;
  std::string what;  // mount line, cgroup path, process line or temp path
  pid_t pid = 0;     // kProcess only
  bool attributed = true;

  std::string Describe() const;  // "process 123 (sleep) state S ppid 100"
};

// What is in `after` and not in `before`.
std::vector<Leak> CompareSnapshots(const HostSnapshot& before, const HostSnapshot& after);

// Re-snapshots every 50 ms until no attributed leak is left or `grace` has passed, reaping
// zombie children in between (a killed jail's processes take a moment to disappear).
// Returns the leaks of the last snapshot.
std::vector<Leak> WaitForNoLeaks(const HostSnapshot& before, std::chrono::milliseconds grace);

// Removes attributed leaks so one leaky test does not spoil the next: SIGKILLs leaked
// processes by pid and reaps them, kills the processes inside leaked cgroups and removes the
// directories, detaches leaked mounts, removes leaked temp entries. Returns the leaks it
// could not remove, described.
std::vector<std::string> CleanUpLeaks(const std::vector<Leak>& leaks);

// Fixture base for tests that run jails. The constructor snapshots the host; the destructor
// (which runs after the derived fixture's members, e.g. TempDirs, are gone) waits briefly,
// fails the test naming every attributed leak, and cleans up what leaked.
class LeakCheckedTest : public ::testing::Test {
 protected:
  LeakCheckedTest();
  ~LeakCheckedTest() override;

  // How long the destructor waits for leftovers to disappear.
  static constexpr std::chrono::milliseconds kGrace{3000};

 private:
  HostSnapshot before_;
};

}  // namespace corral::test
