// How much of the host kernel a command reaches from inside `corral run` with the defaults:
// the /proc masks (runtime/run/root_layout.cc, README.md "What the command sees") and the
// seccomp socket rules (seccomp-profiles/default.json). Black-box, through the corral binary
// and the static probe's read-paths and try-sockets. Root only; every test is leak-checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/jail_test.h"

namespace corral::test {
namespace {

using nlohmann::json;

class KernelSurfaceTest : public JailTest {
 protected:
  // read-paths for those of `paths` that exist on the host (same kernel, same /proc names);
  // `present` gets the ones asked for.
  void ReadPaths(const std::vector<std::string>& paths, json* results,
                 std::vector<std::string>* present) {
    std::vector<std::string> args = {"read-paths"};
    for (const std::string& path : paths) {
      if (access(path.c_str(), F_OK) == 0) present->push_back(path);
    }
    ASSERT_FALSE(present->empty());
    args.insert(args.end(), present->begin(), present->end());
    JailRun run;
    ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, args, &run));
    *results = run.probe["results"];
  }

  // `corral run --json [flags] -- argv...`: requires exit 0 and returns its stdout.
  void RunTool(const std::vector<std::string>& flags, const std::vector<std::string>& argv,
               std::string* out) {
    std::vector<std::string> args = {"run", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    Result<JailRun> run = RunJailed(CorralBinary(), args);
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_EQ(run->outcome["status"], "exited") << run->Describe();
    ASSERT_EQ(run->outcome["exit_code"], 0) << run->Describe();
    *out = run->outcome["stdout"];
  }
};

// The review's two (config.gz, key-users), Docker's masked files, and the rest of the host
// kernel's configuration, memory layout and activity counters. A masked file is the host's
// /dev/null (1:3) mounted over it: it reads as empty, and writes to it are discarded.
TEST_F(KernelSurfaceTest, HostKernelFilesInProcAreMasked) {
  json results;
  std::vector<std::string> present;
  ASSERT_NO_FATAL_FAILURE(ReadPaths(
      {"/proc/config.gz",  "/proc/key-users",   "/proc/keys",          "/proc/kcore",
       "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats", "/proc/sysrq-trigger",
       "/proc/cmdline",    "/proc/kallsyms",    "/proc/kmsg",          "/proc/modules",
       "/proc/kpagecount", "/proc/kpageflags",  "/proc/kpagecgroup",   "/proc/iomem",
       "/proc/ioports",    "/proc/vmallocinfo", "/proc/slabinfo",      "/proc/pagetypeinfo",
       "/proc/zoneinfo",   "/proc/buddyinfo",   "/proc/interrupts",    "/proc/softirqs",
       "/proc/schedstat",  "/proc/diskstats",   "/proc/partitions",    "/proc/devices",
       "/proc/dma",        "/proc/mtrr",        "/proc/consoles",      "/proc/crypto",
       "/proc/misc"},
      &results, &present));
  for (const std::string& path : present) {
    json r = results[path];  // a copy: operator[] of a const json must not miss a key
    EXPECT_EQ(r["read"], "ok") << path << ": " << r.dump();
    EXPECT_EQ(r.value("bytes", -1), 0) << path << " shows host content: " << r.dump();
    EXPECT_EQ(r["kind"], "chardev") << path << ": " << r.dump();
    EXPECT_EQ(r["rdev"], "1:3") << path << ": " << r.dump();
  }
  RecordProperty("masked_files", json(present).dump());
}

TEST_F(KernelSurfaceTest, HostDirectoriesInProcAreEmpty) {
  json results;
  std::vector<std::string> present;
  ASSERT_NO_FATAL_FAILURE(ReadPaths({"/proc/acpi", "/proc/scsi", "/proc/asound", "/proc/bus",
                                     "/proc/fs", "/proc/irq", "/proc/driver", "/proc/pressure"},
                                    &results, &present));
  for (const std::string& path : present) {
    json r = results[path];  // a copy: operator[] of a const json must not miss a key
    EXPECT_EQ(r["kind"], "dir") << path << ": " << r.dump();
    EXPECT_EQ(r["read"], "ok") << path << ": " << r.dump();
    EXPECT_EQ(r.value("entries", -1), 0) << path << " lists host entries: " << r.dump();
  }
}

// What ps, top, free, python and node read stays readable and has content.
TEST_F(KernelSurfaceTest, ProcFilesThatToolsNeedStay) {
  json results;
  std::vector<std::string> present;
  std::vector<std::string> needed = {"/proc/meminfo",     "/proc/cpuinfo",
                                     "/proc/stat",        "/proc/uptime",
                                     "/proc/loadavg",     "/proc/mounts",
                                     "/proc/version",     "/proc/filesystems",
                                     "/proc/vmstat",      "/proc/self/status",
                                     "/proc/self/maps",   "/proc/1/cmdline",
                                     "/proc/1/stat",      "/proc/sys/kernel/pid_max",
                                     "/proc/tty/drivers", "/proc/net/dev"};
  ASSERT_NO_FATAL_FAILURE(ReadPaths(needed, &results, &present));
  EXPECT_EQ(present.size(), needed.size());
  for (const std::string& path : present) {
    json r = results[path];  // a copy: operator[] of a const json must not miss a key
    EXPECT_EQ(r["read"], "ok") << path << ": " << r.dump();
    EXPECT_GT(r.value("bytes", 0), 0) << path << ": " << r.dump();
  }
}

// /proc/sys is a read-only mount: root in the jail (unsafe.allow_root) could not write it
// either. Checked on the mount options, since uid 1000 is refused by the file modes first.
TEST_F(KernelSurfaceTest, ProcSysIsAReadOnlyMount) {
  json r;
  ASSERT_NO_FATAL_FAILURE(Report({}, &r));
  std::map<std::string, std::string> options;  // last mount wins, as in path lookup
  for (const json& m : r["mounts"]) options[m["mount_point"]] = m["options"];
  ASSERT_TRUE(options.count("/proc/sys")) << r["mounts"].dump();
  EXPECT_NE(("," + options["/proc/sys"] + ",").find(",ro,"), std::string::npos)
      << options["/proc/sys"];
}

TEST_F(KernelSurfaceTest, SysIsNotMounted) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"read-paths", "/sys"}, &run));
  EXPECT_EQ(run.probe["results"]["/sys"]["kind"], "missing") << run.Describe();
}

TEST_F(KernelSurfaceTest, CommonToolsWorkOnTheMaskedProc) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(
      RunTool({}, {"bash", "-c", "ps -eo pid,comm && free -m && uptime"}, &out));
  EXPECT_NE(out.find("corral-init"), std::string::npos) << out;
  EXPECT_NE(out.find("Mem:"), std::string::npos) << out;
  EXPECT_NE(out.find("load average"), std::string::npos) << out;
  if (access("/usr/bin/python3", X_OK) == 0) {
    ASSERT_NO_FATAL_FAILURE(
        RunTool({},
                {"/usr/bin/python3", "-c",
                 "import os, socket; print(os.cpu_count() > 0, socket.if_nameindex()[0][1], "
                 "len(socket.getaddrinfo('localhost', 80, flags=socket.AI_ADDRCONFIG)) > 0)"},
                &out));
    EXPECT_EQ(out, "True lo True\n");
  }
  if (access("/usr/bin/node", X_OK) == 0) {
    ASSERT_NO_FATAL_FAILURE(RunTool(
        {},
        {"/usr/bin/node", "-e",
         "const os = require('os'); console.log(Object.keys(os.networkInterfaces()).join(), "
         "os.cpus().length > 0, os.totalmem() > 0)"},
        &out));
    EXPECT_EQ(out, "lo true true\n");
  }
}

// Pins what README.md says of noexec: /dev/shm refuses execve and ld.so alike, and that is
// all it does. /tmp runs what the command wrote, and so does a memfd. If one of the last two
// starts failing, the README's wording must change with it.
TEST_F(KernelSurfaceTest, NoexecIsHygieneNotABoundary) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(RunTool({},
                                  {"bash", "-c",
                                   "cp /bin/true /dev/shm/t; /dev/shm/t 2>/dev/null; echo shm=$?; "
                                   "/lib64/ld-linux-x86-64.so.2 /dev/shm/t 2>/dev/null; "
                                   "echo ldso=$?; cp /bin/true /tmp/t; /tmp/t; echo tmp=$?"},
                                  &out));
  EXPECT_EQ(out, "shm=126\nldso=127\ntmp=0\n");
  if (access("/usr/bin/python3", X_OK) != 0) return;
  ASSERT_NO_FATAL_FAILURE(RunTool(
      {},
      {"/usr/bin/python3", "-c",
       "import os\nfd = os.memfd_create('t', 0)\nos.write(fd, open('/bin/true', 'rb').read())\n"
       "pid = os.fork()\nif pid == 0: os.execve(fd, ['t'], {})\n"
       "print('memfd', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))"},
      &out));
  EXPECT_EQ(out, "memfd 0\n");
}

// NETLINK_ROUTE only; every other netlink protocol answers EPROTONOSUPPORT, as a kernel
// without it would, so libaudit and shadow's tools carry on instead of aborting.
TEST_F(KernelSurfaceTest, NetlinkIsRouteOnly) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"try-sockets"}, &run));
  json results = run.probe["results"];  // a copy: a missing key reads as null
  EXPECT_EQ(results["netlink_route"], "ok") << results.dump();
  EXPECT_EQ(results["netlink_route_dgram"], "ok") << results.dump();
  int netlink_refused = 0;
  for (const auto& [name, result] : results.items()) {
    if (name.rfind("netlink_", 0) != 0 || name.rfind("netlink_route", 0) == 0) continue;
    EXPECT_EQ(result, "EPROTONOSUPPORT") << name;
    ++netlink_refused;
  }
  EXPECT_GE(netlink_refused, 15);
  EXPECT_EQ(results["netlink_audit"], "EPROTONOSUPPORT");
  EXPECT_EQ(results["netlink_netfilter"], "EPROTONOSUPPORT");
  EXPECT_EQ(results["netlink_route_high_bits"], "EPROTONOSUPPORT");
  // ip talks NETLINK_ROUTE; ss falls back to /proc/net when NETLINK_SOCK_DIAG is refused.
  std::string out;
  ASSERT_NO_FATAL_FAILURE(RunTool({}, {"bash", "-c", "ip -br link && ss -tln"}, &out));
  EXPECT_EQ(out.rfind("lo ", 0), 0u) << out;
  EXPECT_NE(out.find("State"), std::string::npos) << out;
}

TEST_F(KernelSurfaceTest, OnlyUnixInetInet6AndNetlinkSocketsExist) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({}, {"try-sockets"}, &run));
  json results = run.probe["results"];  // a copy: a missing key reads as null
  for (const char* name : {"unix_stream", "inet_tcp", "inet_udp", "inet6_tcp"}) {
    EXPECT_EQ(results[name], "ok") << name;
  }
  EXPECT_EQ(results["inet_raw_icmp"], "EPERM") << "raw sockets need CAP_NET_RAW";
  int refused = 0;
  for (const auto& [name, result] : results.items()) {
    if (name.rfind("netlink_", 0) == 0 || name.rfind("inet", 0) == 0 || name == "unix_stream") {
      continue;
    }
    EXPECT_EQ(result, "EPERM") << name << " (the profile refuses every other family)";
    ++refused;
  }
  EXPECT_GE(refused, 20);
  for (const char* name : {"packet", "vsock", "alg", "key", "xdp", "bluetooth", "can", "tipc"}) {
    EXPECT_EQ(results[name], "EPERM") << name;
  }
}

// `strict` creates AF_UNIX sockets only: netlink, even NETLINK_ROUTE, is EPERM there.
TEST_F(KernelSurfaceTest, StrictProfileHasNoNetlinkAtAll) {
  JailRun run;
  ASSERT_NO_FATAL_FAILURE(RunProbeOk({"--seccomp", "strict"}, {"try-sockets"}, &run));
  json results = run.probe["results"];  // a copy: a missing key reads as null
  EXPECT_EQ(results["unix_stream"], "ok");
  EXPECT_EQ(results["netlink_route"], "EPERM");
  EXPECT_EQ(results["netlink_audit"], "EPERM");
  EXPECT_EQ(results["inet_tcp"], "EPERM");
}

}  // namespace
}  // namespace corral::test
