// runtime/oci's bundle pieces without running a runtime: the minimal config `corral bench`
// uses, corral's seccomp profile in OCI form, and a JailSpec's config.json (namespaces,
// identity, mounts, masks, limits).
#include "runtime/oci/oci_bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <set>

#include "runtime/oci/oci_runtime.h"
#include "runtime/oci/oci_seccomp.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime::oci {
namespace {

using nlohmann::json;

TEST(MinimalOciConfig, IsAMinimalReadOnlyBundleWithEveryNamespaceAndNoCapabilities) {
  auto j = json::parse(MinimalOciConfigJson("/tmp/b/rootfs", {"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(j["root"]["path"], "/tmp/b/rootfs");
  EXPECT_EQ(j["root"]["readonly"], true);
  EXPECT_EQ(j["process"]["terminal"], false);
  EXPECT_EQ(j["process"]["args"], (json{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(j["process"]["noNewPrivileges"], true);
  EXPECT_TRUE(j["process"]["capabilities"]["bounding"].empty());
  std::vector<std::string> ns;
  for (const auto& n : j["linux"]["namespaces"]) ns.push_back(n["type"]);
  EXPECT_EQ(ns, (std::vector<std::string>{"pid", "network", "ipc", "uts", "mount"}));
}

std::set<std::string> Names(const json& seccomp) {
  std::set<std::string> out;
  for (const auto& rule : seccomp["syscalls"]) {
    for (const auto& n : rule["names"]) out.insert(n.get<std::string>());
  }
  return out;
}

TEST(OciSeccomp, DefaultProfileKeepsItsRulesInTheOciShape) {
  auto s = OciSeccomp("default");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ((*s)["defaultAction"], "SCMP_ACT_ERRNO");
  EXPECT_EQ((*s)["architectures"], json::array({"SCMP_ARCH_X86_64"}));
  const std::set<std::string> names = Names(*s);
  EXPECT_TRUE(names.count("read") && names.count("execve") && names.count("clone"));
  EXPECT_FALSE(names.count("keyctl")) << "the default profile leaves keyctl out";
  for (const auto& rule : (*s)["syscalls"]) {
    for (const auto& [key, value] : rule.items()) {
      EXPECT_TRUE(key == "names" || key == "action" || key == "errnoRet" || key == "args")
          << "not an OCI seccomp rule key: " << key;
    }
  }
  // The clone rule's argument check survives (namespaces flags refused).
  bool clone_has_args = false;
  for (const auto& rule : (*s)["syscalls"]) {
    if (rule["names"].size() == 1 && rule["names"][0] == "clone" && rule.contains("args")) {
      clone_has_args = true;
    }
  }
  EXPECT_TRUE(clone_has_args);
}

TEST(OciSeccomp, UnconfinedIsNoFilterAndABadProfileIsAnError) {
  auto none = OciSeccomp("unconfined");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->is_null());
  auto missing = OciSeccomp("/nonexistent/profile.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("/nonexistent/profile.json"), std::string::npos);
}

TEST(OciRuntimeChoice, RefusesWhatItDoesNotDrive) {
  auto bad = FindOciRuntime("docker");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("auto, crun, runc"), std::string::npos);
  auto other = FindOciRuntime("/bin/true");
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message().find("crun or runc"), std::string::npos);
}

const json* MountAt(const json& config, const std::string& destination) {
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == destination) return &m;
  }
  return nullptr;
}

bool Has(const json& list, const std::string& s) {
  for (const auto& v : list) {
    if (v == s) return true;
  }
  return false;
}

TEST(OciConfig, CarriesTheJailSpec) {
  test::TempDir dir;
  JailSpec spec;
  spec.argv = {"/bin/echo", "hi"};
  spec.env = {{"FOO", "bar"}};
  spec.limits.memory_bytes = 64 * kMiB;
  spec.limits.pids = 32;
  spec.limits.cpus = 0.5;
  spec.mounts.push_back({dir.path(), "/work", false});
  auto c = OciConfig(spec, dir.path(), "/corral/corral-1-0", "/opt/corral/corral-init");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  const json& j = *c;

  std::set<std::string> ns;
  for (const auto& n : j["linux"]["namespaces"]) ns.insert(n["type"]);
  EXPECT_EQ(ns, (std::set<std::string>{"mount", "pid", "uts", "ipc", "network", "cgroup"}));
  EXPECT_EQ(j["process"]["user"]["uid"], 1000);
  EXPECT_EQ(j["process"]["user"]["gid"], 1000);
  EXPECT_TRUE(j["process"]["user"]["additionalGids"].empty());
  for (const char* set : {"bounding", "effective", "permitted", "inheritable", "ambient"}) {
    EXPECT_TRUE(j["process"]["capabilities"][set].empty()) << set;
  }
  EXPECT_EQ(j["process"]["noNewPrivileges"], true);
  // corral-init is PID 1 and runs the command, reporting on fd 3.
  EXPECT_EQ(j["process"]["args"], (json{"/.corral/init", "-r", "3", "--", "/bin/echo", "hi"}));
  const json* init = MountAt(j, "/.corral/init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ((*init)["source"], "/opt/corral/corral-init");
  EXPECT_TRUE(Has((*init)["options"], "ro"));
  struct stat placeholder;
  EXPECT_EQ(::stat((dir.path() + "/.corral/init").c_str(), &placeholder), 0)
      << "the read-only rootfs needs the mount point";
  EXPECT_TRUE(Has(j["process"]["env"], "FOO=bar"));
  EXPECT_TRUE(Has(j["process"]["env"], "HOME=/home/sandbox"));
  EXPECT_EQ(j["process"]["cwd"], "/");
  EXPECT_EQ(j["hostname"], "sandbox");
  EXPECT_EQ(j["root"]["readonly"], true);

  const json* usr = MountAt(j, "/usr");
  ASSERT_NE(usr, nullptr);
  EXPECT_EQ((*usr)["type"], "bind");
  EXPECT_TRUE(Has((*usr)["options"], "ro") && Has((*usr)["options"], "rro"));
  const json* work = MountAt(j, "/work");
  ASSERT_NE(work, nullptr);
  EXPECT_EQ((*work)["source"], dir.path());
  EXPECT_FALSE(Has((*work)["options"], "ro"));
  const json* tmp = MountAt(j, "/tmp");
  ASSERT_NE(tmp, nullptr);
  EXPECT_EQ((*tmp)["type"], "tmpfs");
  EXPECT_TRUE(Has((*tmp)["options"], "size=" + std::to_string(spec.limits.tmp_size_bytes)));
  ASSERT_NE(MountAt(j, "/proc"), nullptr);
  ASSERT_NE(MountAt(j, "/dev/pts"), nullptr);
  EXPECT_EQ(MountAt(j, "/dev/null"), nullptr) << "device nodes are the runtime's defaults";
  // /proc/kcore is absent on some kernels (Debian's cloud kernel): keys is masked everywhere.
  EXPECT_TRUE(Has(j["linux"]["maskedPaths"], "/proc/keys"));
  EXPECT_TRUE(Has(j["linux"]["readonlyPaths"], "/proc/sys"));
  EXPECT_TRUE(Has(j["linux"]["readonlyPaths"], "/dev"));

  EXPECT_EQ(j["linux"]["cgroupsPath"], "/corral/corral-1-0");
  EXPECT_EQ(j["linux"]["resources"]["memory"]["limit"], 64 * kMiB);
  EXPECT_EQ(j["linux"]["resources"]["memory"]["swap"], 64 * kMiB);
  EXPECT_EQ(j["linux"]["resources"]["pids"]["limit"], 32);
  EXPECT_EQ(j["linux"]["resources"]["cpu"]["quota"], 50000);
  bool nofile = false;
  for (const auto& r : j["process"]["rlimits"]) {
    if (r["type"] == "RLIMIT_NOFILE") nofile = r["hard"] == spec.limits.open_files;
  }
  EXPECT_TRUE(nofile);
  EXPECT_TRUE(j["linux"].contains("seccomp"));
}

TEST(OciConfig, WhatContainerModeCannotHonourIsRefusedByKey) {
  JailSpec spec;
  spec.argv = {"/bin/true"};
  spec.network.mode = NetworkMode::kAllowlist;
  auto st = CheckContainerSpec(spec);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message().find("network.mode allowlist"), std::string::npos);
  spec.network.mode = NetworkMode::kNone;
  spec.landlock.enabled = LandlockMode::kOn;
  st = CheckContainerSpec(spec);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message().find("landlock.enabled"), std::string::npos);
}

}  // namespace
}  // namespace corral::runtime::oci
