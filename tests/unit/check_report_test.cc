#include "runtime/host/check_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>

#include "runtime/host/host_info.h"

namespace corral::runtime {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// A root host like our development machines: every namespace, seccomp, cgroups hybrid
// with the v1 controllers and no v2 controllers, no Landlock.
HostInfo HybridHost() {
  HostInfo h;
  h.kernel_release = "6.1.0-test";
  h.machine = "x86_64";
  h.euid = 0;
  h.is_root = true;
  h.online_cpus = 2;
  for (const char* name : {"pid", "mnt", "uts", "ipc", "net", "cgroup", "user", "time"}) {
    h.namespaces.push_back({name, true, true, 0, false});
  }
  h.max_user_namespaces = 1000;
  h.unprivileged_userns_ok = true;
  h.seccomp_filter = true;
  h.seccomp_actions = {"kill_process", "kill_thread", "trap", "errno",
                       "user_notif",   "trace",       "log",  "allow"};
  h.landlock_abi = 0;
  h.landlock_errno = ENOSYS;
  cgroups::HierarchyInfo cg;
  cg.v2_mounted = true;
  cg.v2_mount = "/sys/fs/cgroup/unified";
  for (const char* c : {"memory", "cpu", "cpuacct", "pids", "freezer"}) {
    cg.v1_mounts.emplace_back(c, std::string("/sys/fs/cgroup/") + c);
  }
  cg.driver = cgroups::Driver::kV1;
  h.cgroups.hierarchies = cg;
  h.cgroups.auto_driver = cgroups::Driver::kV1;
  h.cgroups.v1_memsw = true;
  h.cgroups.writable = true;
  h.overlayfs = true;
  h.syscalls = {true, true, true, true, true};
  h.no_new_privs = true;
  h.cap_sys_resource = true;
  h.cap_sys_admin = true;
  h.swap_enabled = false;
  return h;
}

// The same host without the v1 pids controller: no cgroup driver works.
HostInfo NoPidsHost() {
  HostInfo h = HybridHost();
  auto& mounts = h.cgroups.hierarchies->v1_mounts;
  mounts.erase(mounts.begin() + 3);
  h.cgroups.hierarchies->driver.reset();
  h.cgroups.hierarchies->unusable_reason = "cgroup v1 lacks mounted controllers pids";
  h.cgroups.auto_driver.reset();
  h.cgroups.auto_error = "cgroup v1 lacks mounted controllers pids";
  h.cgroups.missing_controllers = {"pids"};
  return h;
}

void BreakNamespace(HostInfo& h, const std::string& name, int err) {
  for (NamespaceSupport& ns : h.namespaces) {
    if (ns.name == name) {
      ns.unshare_ok = false;
      ns.unshare_errno = err;
    }
  }
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

TEST(CheckReport, FormatsOneLinePerItemWithAStatusColumn) {
  const std::string report = FormatCheckReport(HybridHost());
  EXPECT_THAT(report, HasSubstr("corral check: Linux 6.1.0-test (x86_64), 2 online CPUs\n"));
  EXPECT_THAT(report, HasSubstr("\n  ok    running as root\n"));
  EXPECT_THAT(report, HasSubstr("\n  ok    pid namespace\n"));
  EXPECT_THAT(report, HasSubstr("\n  ok    time namespace\n"));
  EXPECT_THAT(report, HasSubstr("\n  MISSING landlock (kernel has no Landlock LSM)\n"));
  EXPECT_THAT(report, HasSubstr("\n  info  cgroups: hybrid (v1 controllers: memory cpu cpuacct "
                                "pids freezer; v2 has none) -> driver v1\n"));
  EXPECT_THAT(report, HasSubstr("\n  ok    memory, cpu and pids limits (cgroup v1)\n"));
  EXPECT_THAT(report, HasSubstr("\n  info  CLONE_INTO_CGROUP unused (driver v1"));
  EXPECT_THAT(report, HasSubstr("\n  ok    clone3 syscall\n"));
  EXPECT_THAT(report, HasSubstr("\n  ok    seccomp filters (actions: kill_process"));
}

TEST(CheckReport, GoodHostCanRunTheDefaults) {
  const CheckVerdict v = EvaluateHost(HybridHost(), JailSpec{});
  EXPECT_TRUE(v.can_run) << Joined(v.refusals);
  EXPECT_EQ(v.refusals, std::vector<std::string>{});
  EXPECT_EQ(v.warnings, std::vector<std::string>{});
  EXPECT_THAT(v.enforced, Contains("memory 512 MiB (no swap), cpus 1, pids 256 via cgroup v1"));
  EXPECT_THAT(v.enforced,
              Contains("namespaces: mnt pid uts ipc net cgroup (network: loopback only)"));
  EXPECT_THAT(v.enforced, Contains("seccomp profile default"));
  EXPECT_THAT(v.enforced, Contains("wall clock 600 s (SIGTERM, SIGKILL 2 s later)"));
  EXPECT_THAT(v.enforced, Contains("rlimits: file size 1 GiB, open files 1024"));
  const std::string report = FormatCheckReport(HybridHost());
  EXPECT_THAT(report, HasSubstr("Verdict: corral run can run the default config on this host."));
  EXPECT_THAT(report,
              HasSubstr("\n  - memory 512 MiB (no swap), cpus 1, pids 256 via cgroup v1\n"));
  EXPECT_THAT(report, Not(HasSubstr("REFUSES")));
}

TEST(CheckReport, MissingControllerIsRefusedUnlessAllowMissingLimits) {
  const HostInfo host = NoPidsHost();
  CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  ASSERT_EQ(v.refusals.size(), 1u) << Joined(v.refusals);  // no driver: all three at once
  EXPECT_EQ(v.refusals[0],
            "cgroup limits (memory 512 MiB (no swap), cpus 1, pids 256) cannot be enforced: "
            "cgroup v1 lacks mounted controllers pids; refused unless "
            "unsafe.allow_missing_limits: true");
  const std::string report = FormatCheckReport(host);
  EXPECT_THAT(report, HasSubstr("Verdict: corral run REFUSES the default config on this host:"));
  EXPECT_THAT(report,
              HasSubstr("  MISSING cgroup limits: cgroup v1 lacks mounted controllers pids"));

  JailSpec spec;
  spec.unsafe.allow_missing_limits = true;
  v = EvaluateHost(host, spec);
  EXPECT_TRUE(v.can_run) << Joined(v.refusals);
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_THAT(v.warnings[0], HasSubstr("pids 256) NOT enforced: cgroup v1 lacks"));
}

TEST(CheckReport, LandlockIsReportedWithWhatWouldBeEnforced) {
  HostInfo host = HybridHost();
  // auto on a kernel without Landlock: runs (the item says MISSING); true refuses.
  JailSpec spec;
  spec.landlock.enabled = LandlockMode::kOn;
  CheckVerdict v = EvaluateHost(host, spec);
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(v.refusals, Contains(HasSubstr("landlock.enabled: true, but no usable Landlock")));

  host.landlock_abi = 7;
  host.landlock_errno = 0;
  v = EvaluateHost(host, JailSpec{});
  EXPECT_TRUE(v.can_run) << Joined(v.refusals);
  EXPECT_THAT(v.enforced,
              Contains("Landlock ABI 7: writes only beneath the jail's read-write mounts, reads "
                       "and executes only beneath its mounts; TCP not fenced (network.mode: none: "
                       "the jail's own loopback is all there is)"));
  spec = JailSpec{};
  spec.network.mode = NetworkMode::kAllowlist;
  v = EvaluateHost(host, spec);
  EXPECT_THAT(v.enforced, Contains(HasSubstr("TCP: connect only to the in-jail proxy")));
  spec.landlock.tcp = false;
  v = EvaluateHost(host, spec);
  EXPECT_THAT(v.enforced, Contains(HasSubstr("TCP not fenced (landlock.tcp: false)")));
  host.landlock_abi = 3;
  spec.landlock.tcp = true;
  v = EvaluateHost(host, spec);
  EXPECT_THAT(v.enforced, Contains(HasSubstr("TCP not fenced (needs Landlock ABI 4)")));
  spec = JailSpec{};
  spec.landlock.enabled = LandlockMode::kOff;
  v = EvaluateHost(host, spec);
  EXPECT_THAT(v.warnings, Contains(HasSubstr("Landlock off (landlock.enabled: false)")));
}

TEST(CheckReport, ControllerMissingFromTheChosenDriverIsNamed) {
  HostInfo host = HybridHost();
  JailSpec spec;
  spec.cgroups.driver = CgroupDriverChoice::kV2;  // mounted, but with no controllers
  const CheckVerdict v = EvaluateHost(host, spec);
  EXPECT_FALSE(v.can_run);
  ASSERT_EQ(v.refusals.size(), 3u) << Joined(v.refusals);
  EXPECT_EQ(v.refusals[0],
            "memory 512 MiB (no swap) cannot be enforced: no memory controller in cgroup v2; "
            "refused unless unsafe.allow_missing_limits: true");
}

TEST(CheckReport, UnwritableCgroupsAreRefused) {
  HostInfo host = HybridHost();
  host.cgroups.writable = false;
  const CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(Joined(v.refusals), HasSubstr("not writable"));
}

TEST(CheckReport, MissingNamespaceNamesItsOptOut) {
  HostInfo host = HybridHost();
  BreakNamespace(host, "net", EPERM);
  CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  ASSERT_EQ(v.refusals.size(), 1u);
  EXPECT_EQ(v.refusals[0],
            "net namespace unavailable (opt-out: namespaces.net: false with "
            "unsafe.host_network: true)");
  EXPECT_THAT(FormatCheckReport(host),
              HasSubstr("  MISSING net namespace (unshare: EPERM (Operation not permitted))"));

  JailSpec spec;
  spec.namespaces.net = false;
  spec.unsafe.host_network = true;
  v = EvaluateHost(host, spec);
  EXPECT_TRUE(v.can_run) << Joined(v.refusals);
  EXPECT_THAT(v.enforced, Contains("namespaces: mnt pid uts ipc cgroup"));
}

TEST(CheckReport, MountNamespaceHasNoOptOut) {
  HostInfo host = HybridHost();
  BreakNamespace(host, "mnt", EPERM);
  const CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(Joined(v.refusals), HasSubstr("mount namespace unavailable"));
}

TEST(CheckReport, SeccompMissingIsRefusedUnlessUnconfined) {
  HostInfo host = HybridHost();
  host.seccomp_filter = false;
  host.seccomp_actions.clear();
  CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(Joined(v.refusals), HasSubstr("unsafe.allow_unconfined_seccomp"));
  JailSpec spec;
  spec.seccomp_profile = "unconfined";
  spec.unsafe.allow_unconfined_seccomp = true;
  v = EvaluateHost(host, spec);
  EXPECT_TRUE(v.can_run);
  EXPECT_THAT(v.warnings, Contains("seccomp: unconfined (no syscall filter)"));
}

TEST(CheckReport, NonRootWithoutUserNamespacesIsRefused) {
  HostInfo host = HybridHost();
  host.euid = 1000;
  host.is_root = false;
  host.unprivileged_userns_ok = false;
  host.unprivileged_userns_errno = EPERM;
  const CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(Joined(v.refusals), HasSubstr("not root"));
  const std::string report = FormatCheckReport(host);
  EXPECT_THAT(report, HasSubstr("  warn  not root (euid 1000)"));
  EXPECT_THAT(report, HasSubstr("  MISSING unprivileged user namespaces (EPERM"));
  // The host's cgroups are root's: no "ok" line says limits hold for this caller.
  EXPECT_THAT(report, Not(HasSubstr("ok    memory, cpu and pids limits")));
  EXPECT_THAT(report, Not(HasSubstr("cgroup hierarchies writable")));
  EXPECT_THAT(report, HasSubstr("hierarchies are root's; for you, see \"rootless limits\""));
  EXPECT_THAT(report, HasSubstr("rootless limits: "));
}

TEST(CheckReport, SwapWithoutV1AccountingIsAWarning) {
  HostInfo host = HybridHost();
  host.cgroups.v1_memsw = false;
  host.swap_enabled = true;
  const CheckVerdict v = EvaluateHost(host, JailSpec{});
  EXPECT_TRUE(v.can_run);
  EXPECT_THAT(Joined(v.warnings), HasSubstr("does not cover swap"));
  EXPECT_THAT(FormatCheckReport(host), HasSubstr("  warn  swap excluded from the memory limit: "));
}

TEST(CheckReport, V1JoinLatencyHintOnlyWhileGracePeriodsAreNormal) {
  HostInfo host = HybridHost();
  host.cgroups.rcu_expedited = false;
  EXPECT_THAT(FormatCheckReport(host), HasSubstr("rcu_expedited=1 shortens it"));
  host.cgroups.rcu_expedited = true;
  EXPECT_THAT(FormatCheckReport(host), Not(HasSubstr("rcu_expedited")));
  host.cgroups.rcu_expedited = false;
  host.cgroups.clone_into_cgroup = true;  // v2: no join at all
  EXPECT_THAT(FormatCheckReport(host), Not(HasSubstr("rcu_expedited")));
}

TEST(CheckReport, JsonCarriesProbesItemsAndVerdict) {
  const HostInfo host = HybridHost();
  const nlohmann::json j = CheckReportJson(host);
  EXPECT_EQ(j["kernel_release"], "6.1.0-test");
  EXPECT_EQ(j["root"], true);
  EXPECT_EQ(j["namespaces"]["pid"]["unshare"], true);
  EXPECT_TRUE(j["namespaces"]["pid"]["error"].is_null());
  EXPECT_EQ(j["cgroups"]["auto_driver"], "v1");
  EXPECT_EQ(j["cgroups"]["v1_mounts"]["memory"], "/sys/fs/cgroup/memory");
  EXPECT_EQ(j["landlock"]["abi"], 0);
  EXPECT_EQ(j["landlock"]["error"], "ENOSYS (Function not implemented)");
  EXPECT_EQ(j["syscalls"]["clone3"], true);
  EXPECT_EQ(j["items"].size(), CheckItems(host).size());
  EXPECT_EQ(j["items"][0]["status"], "ok");
  EXPECT_EQ(j["verdict"]["can_run_default_config"], true);
  EXPECT_EQ(CheckReportJson(NoPidsHost())["verdict"]["can_run_default_config"], false);
  EXPECT_TRUE(CheckReportJson(NoPidsHost())["cgroups"]["auto_driver"].is_null());
}

TEST(CheckReport, AllowListNamesItsRulesAndProxy) {
  HostInfo host = HybridHost();
  host.netproxy_path = "/usr/libexec/corral/corral-netproxy";
  JailSpec spec;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org", "*.github.com:443", "a.example", "b.example", "c.example"};
  spec.network.deny = {"evil.github.com"};
  const CheckVerdict v = EvaluateHost(host, spec);
  EXPECT_TRUE(v.can_run);
  EXPECT_THAT(v.enforced, Contains(HasSubstr("(network: allow-list only)")));
  EXPECT_THAT(v.enforced,
              Contains(HasSubstr("network: allow-list (allow pypi.org, *.github.com:443, "
                                 "a.example, b.example and 1 more; deny evil.github.com) "
                                 "through /usr/libexec/corral/corral-netproxy")));
  EXPECT_THAT(FormatCheckReport(host, spec, "this config"),
              HasSubstr("corral run can run this config"));
  EXPECT_EQ(CheckReportJson(host, spec)["netproxy"]["path"], host.netproxy_path);
  // The default config does not need the proxy.
  EXPECT_THAT(EvaluateHost(host, JailSpec{}).enforced,
              Not(Contains(HasSubstr("network: allow-list"))));
}

TEST(CheckReport, AllowListWithoutTheProxyIsRefused) {
  HostInfo host = HybridHost();
  host.netproxy_error = "network.mode allowlist needs corral-netproxy, not found (tried /x)";
  JailSpec spec;
  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org"};
  const CheckVerdict v = EvaluateHost(host, spec);
  EXPECT_FALSE(v.can_run);
  EXPECT_THAT(v.refusals, Contains("network.mode allowlist: " + host.netproxy_error));
  EXPECT_TRUE(EvaluateHost(host, JailSpec{}).can_run);
  const nlohmann::json j = CheckReportJson(host, spec);
  EXPECT_EQ(j["verdict"]["can_run"], false);
  EXPECT_EQ(j["verdict"]["can_run_default_config"], true);
}

TEST(CheckReport, HostNetworkIsAWarning) {
  const HostInfo host = HybridHost();
  JailSpec spec;
  spec.network.mode = NetworkMode::kHost;
  spec.namespaces.net = false;
  spec.unsafe.host_network = true;
  EXPECT_THAT(EvaluateHost(host, spec).warnings,
              Contains(HasSubstr("network: the host's own (network.mode host")));
}

// The real probe: runs unprivileged too (its unshare attempts then just fail).
TEST(ProbeHost, ProbesThisHostAndLeavesNoChildren) {
  Result<HostInfo> host = ProbeHost();
  ASSERT_TRUE(host) << host.error().message();
  EXPECT_FALSE(host->kernel_release.empty());
  EXPECT_GE(host->online_cpus, 1);
  ASSERT_EQ(host->namespaces.size(), 8u);
  ASSERT_NE(host->FindNamespace("mnt"), nullptr);
  EXPECT_TRUE(host->FindNamespace("mnt")->present);
  EXPECT_EQ(host->FindNamespace("nonesuch"), nullptr);
  for (const NamespaceSupport& ns : host->namespaces) {
    EXPECT_EQ(ns.unshare_ok, ns.unshare_errno == 0) << ns.name;
  }
  EXPECT_TRUE(host->no_new_privs);
  EXPECT_TRUE(host->syscalls.close_range);  // every kernel corral supports has it
  // Every forked probe was reaped.
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  const std::string report = FormatCheckReport(*host);
  EXPECT_THAT(report, HasSubstr("Verdict: corral run "));
  EXPECT_EQ(CheckReportJson(*host)["items"].size(), CheckItems(*host).size());
}

}  // namespace
}  // namespace corral::runtime
