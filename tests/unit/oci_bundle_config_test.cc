// runtime/oci/bundle_config.h: config.json as containerd and podman write it, read into
// BundleConfig, and each kind of refusal with its exact message and JSON path.
#include <gtest/gtest.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "runtime/oci/bundle_config.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime::oci {
namespace {

using nlohmann::json;

// `ctr run --seccomp` from containerd 1.6 (oci/spec.go defaults), with CRI's cpu shares.
constexpr const char* kContainerdConfig = R"json({
  "ociVersion": "1.0.2-dev",
  "process": {
    "user": {"uid": 0, "gid": 0},
    "args": ["sh", "-c", "echo hi"],
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                   "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                   "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"],
      "effective": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                    "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                    "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"],
      "permitted": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                    "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                    "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
    },
    "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
    "noNewPrivileges": true
  },
  "root": {"path": "rootfs"},
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
     "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs",
     "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
     "options": ["ro", "nosuid", "noexec", "nodev"]}
  ],
  "linux": {
    "resources": {
      "devices": [{"allow": false, "access": "rwm"}],
      "memory": {},
      "cpu": {"shares": 2}
    },
    "cgroupsPath": "/default/redis",
    "namespaces": [
      {"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"},
      {"type": "network", "path": "/var/run/netns/cni-1234"}
    ],
    "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                    "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
    "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    "seccomp": {
      "defaultAction": "SCMP_ACT_ERRNO",
      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
      "syscalls": [
        {"names": ["accept", "read", "write", "exit_group"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
         "args": [{"index": 0, "value": 0, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}
      ]
    }
  }
})json";

// `podman run -it --pids-limit 2048 alpine` (podman 4.3, rootful, cgroup v2, no LSM).
constexpr const char* kPodmanConfig = R"json({
  "ociVersion": "1.0.2-dev",
  "process": {
    "terminal": true,
    "consoleSize": {"height": 40, "width": 120},
    "user": {"uid": 0, "gid": 0, "umask": 18, "additionalGids": [0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27]},
    "args": ["/bin/sh"],
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
            "container=podman", "HOME=/root", "HOSTNAME=0c1f5e7a2b3d"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
                   "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP",
                   "CAP_SETUID", "CAP_SYS_CHROOT"],
      "effective": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
                    "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP",
                    "CAP_SETUID", "CAP_SYS_CHROOT"],
      "permitted": ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
                    "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP",
                    "CAP_SETUID", "CAP_SYS_CHROOT"]
    },
    "rlimits": [
      {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
      {"type": "RLIMIT_NPROC", "hard": 4194304, "soft": 4194304}
    ],
    "oomScoreAdj": 0
  },
  "root": {"path": "/var/lib/containers/storage/overlay/4f2e/merged"},
  "hostname": "0c1f5e7a2b3d",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs",
     "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/etc/hosts", "type": "bind",
     "source": "/run/containers/storage/overlay-containers/0c1f/userdata/hosts",
     "options": ["bind", "rprivate"]},
    {"destination": "/dev/shm", "type": "bind",
     "source": "/var/lib/containers/storage/overlay-containers/0c1f/userdata/shm",
     "options": ["bind", "rprivate"]},
    {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
     "options": ["rprivate", "nosuid", "noexec", "nodev", "relatime", "ro"]}
  ],
  "annotations": {
    "io.container.manager": "libpod",
    "io.kubernetes.cri-o.TTY": "true",
    "io.podman.annotations.autoremove": "TRUE",
    "org.opencontainers.image.stopSignal": "15"
  },
  "linux": {
    "sysctl": {"net.ipv4.ping_group_range": "0 0"},
    "resources": {
      "devices": [{"allow": false, "access": "rwm"},
                  {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"},
                  {"allow": true, "type": "c", "major": 136, "minor": -1, "access": "rw"}],
      "pids": {"limit": 2048}
    },
    "cgroupsPath": "machine.slice:libpod:0c1f5e7a2b3d",
    "namespaces": [
      {"type": "pid"}, {"type": "network", "path": "/run/netns/netns-5e1b"}, {"type": "ipc"},
      {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}
    ],
    "seccomp": {
      "defaultAction": "SCMP_ACT_ERRNO",
      "defaultErrnoRet": 38,
      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
      "syscalls": [
        {"names": ["bdflush", "io_pgetevents", "kexec_file_load", "kexec_load"],
         "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
        {"names": ["accept", "read", "write"], "action": "SCMP_ACT_ALLOW"}
      ]
    },
    "maskedPaths": ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                    "/proc/scsi", "/sys/firmware", "/sys/fs/selinux", "/sys/dev/block"],
    "readonlyPaths": ["/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                      "/proc/sysrq-trigger"]
  }
})json";

// The smallest config the parser takes.
json MinimalConfig() {
  return json::parse(R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                         "process": {"args": ["/bin/true"]}})");
}

// The refusal's message, or "(accepted)".
std::string Refusal(const json& doc) {
  auto parsed = ParseBundleConfig(doc, "/bundle");
  if (parsed) return "(accepted)";
  EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
  return parsed.error().message();
}

TEST(OciBundleConfig, ReadsContainerdCtrRunDefaults) {
  auto cfg = ParseBundleConfig(json::parse(kContainerdConfig), "/run/containerd/bundle/redis");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->oci_version, "1.0.2-dev");
  EXPECT_EQ(cfg->root_path, "/run/containerd/bundle/redis/rootfs");
  EXPECT_FALSE(cfg->root_readonly);
  EXPECT_EQ(cfg->process.user.uid, 0u);
  EXPECT_EQ(cfg->process.args, (std::vector<std::string>{"sh", "-c", "echo hi"}));
  ASSERT_EQ(cfg->process.env.size(), 1u);
  EXPECT_EQ(cfg->process.cwd, "/");
  EXPECT_FALSE(cfg->process.terminal);
  EXPECT_TRUE(cfg->process.no_new_privileges);
  const std::vector<int> caps = {
      CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
      CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
      CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
      CAP_KILL,    CAP_AUDIT_WRITE};
  EXPECT_EQ(cfg->process.capabilities.bounding, caps);
  EXPECT_EQ(cfg->process.capabilities.effective, caps);
  EXPECT_EQ(cfg->process.capabilities.permitted, caps);
  EXPECT_TRUE(cfg->process.capabilities.inheritable.empty());
  EXPECT_TRUE(cfg->process.capabilities.ambient.empty());
  ASSERT_EQ(cfg->process.rlimits.size(), 1u);
  EXPECT_EQ(cfg->process.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(cfg->process.rlimits[0].soft, 1024u);
  EXPECT_EQ(cfg->process.rlimits[0].hard, 1024u);
  ASSERT_EQ(cfg->mounts.size(), 7u);
  EXPECT_EQ(cfg->mounts[2].destination, "/dev/pts");
  EXPECT_EQ(cfg->mounts[2].type, "devpts");
  EXPECT_EQ(cfg->mounts[2].source, "devpts");
  EXPECT_EQ(cfg->mounts[2].options,
            (std::vector<std::string>{"nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                      "mode=0620", "gid=5"}));
  EXPECT_EQ(cfg->mounts[6].destination, "/sys/fs/cgroup");
  EXPECT_EQ(cfg->mounts[6].type, "cgroup");
  EXPECT_EQ(cfg->cgroups_path, "/default/redis");
  ASSERT_EQ(cfg->resources.devices.size(), 1u);
  EXPECT_FALSE(cfg->resources.devices[0].allow);
  EXPECT_EQ(cfg->resources.devices[0].type, 'a');
  EXPECT_FALSE(cfg->resources.devices[0].major.has_value());
  EXPECT_EQ(cfg->resources.devices[0].access, "rwm");
  EXPECT_FALSE(cfg->resources.memory_limit.has_value());
  EXPECT_EQ(cfg->resources.cpu_shares, 2u);
  EXPECT_FALSE(cfg->resources.cpu_quota.has_value());
  EXPECT_FALSE(cfg->resources.pids_limit.has_value());
  ASSERT_EQ(cfg->namespaces.size(), 5u);
  EXPECT_EQ(cfg->namespaces[0].type, "pid");
  EXPECT_EQ(cfg->namespaces[4].path, "/var/run/netns/cni-1234");
  EXPECT_EQ(cfg->masked_paths.size(), 10u);
  EXPECT_EQ(cfg->readonly_paths.back(), "/proc/sysrq-trigger");
  ASSERT_TRUE(cfg->seccomp_profile_json.has_value());
  json seccomp = json::parse(*cfg->seccomp_profile_json);
  EXPECT_EQ(seccomp, json::parse(kContainerdConfig)["linux"]["seccomp"]);
  EXPECT_TRUE(cfg->annotations.empty());
  EXPECT_TRUE(cfg->hostname.empty());
}

TEST(OciBundleConfig, ReadsPodmanRun) {
  auto cfg = ParseBundleConfig(json::parse(kPodmanConfig), "/ignored");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->root_path, "/var/lib/containers/storage/overlay/4f2e/merged");
  EXPECT_EQ(cfg->hostname, "0c1f5e7a2b3d");
  EXPECT_TRUE(cfg->process.terminal);
  EXPECT_EQ(cfg->process.console_size, (std::pair<uint32_t, uint32_t>{40, 120}));
  EXPECT_EQ(cfg->process.user.umask, 022u);
  EXPECT_EQ(cfg->process.user.additional_gids,
            (std::vector<uint32_t>{0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27}));
  EXPECT_EQ(cfg->process.env[2], "container=podman");
  EXPECT_EQ(cfg->process.capabilities.bounding.size(), 11u);
  EXPECT_EQ(cfg->process.capabilities.bounding[4], CAP_KILL);
  ASSERT_EQ(cfg->process.rlimits.size(), 2u);
  EXPECT_EQ(cfg->process.rlimits[1].resource, RLIMIT_NPROC);
  EXPECT_EQ(cfg->process.rlimits[1].hard, 4194304u);
  EXPECT_EQ(cfg->process.oom_score_adj, 0);
  EXPECT_FALSE(cfg->process.no_new_privileges);
  ASSERT_EQ(cfg->mounts.size(), 8u);
  EXPECT_EQ(cfg->mounts[5].type, "bind");
  EXPECT_EQ(cfg->mounts[5].source,
            "/run/containers/storage/overlay-containers/0c1f/userdata/hosts");
  EXPECT_EQ(cfg->annotations.size(), 4u);
  EXPECT_EQ(cfg->annotations.at("io.container.manager"), "libpod");
  EXPECT_EQ(cfg->sysctl,
            (std::map<std::string, std::string>{{"net.ipv4.ping_group_range", "0 0"}}));
  EXPECT_EQ(cfg->resources.pids_limit, 2048);
  ASSERT_EQ(cfg->resources.devices.size(), 3u);
  EXPECT_TRUE(cfg->resources.devices[1].allow);
  EXPECT_EQ(cfg->resources.devices[1].type, 'c');
  EXPECT_EQ(cfg->resources.devices[1].major, 1);
  EXPECT_EQ(cfg->resources.devices[1].minor, 3);
  EXPECT_EQ(cfg->resources.devices[2].major, 136);
  EXPECT_FALSE(cfg->resources.devices[2].minor.has_value()) << "-1 is any";
  EXPECT_EQ(cfg->resources.devices[2].access, "rw");
  EXPECT_EQ(cfg->cgroups_path, "machine.slice:libpod:0c1f5e7a2b3d");
  ASSERT_NE(cfg->FindNamespace("network"), nullptr);
  EXPECT_EQ(cfg->FindNamespace("network")->path, "/run/netns/netns-5e1b");
  ASSERT_NE(cfg->FindNamespace("cgroup"), nullptr);
  EXPECT_TRUE(cfg->FindNamespace("cgroup")->path.empty());
  EXPECT_EQ(cfg->FindNamespace("user"), nullptr);
  ASSERT_TRUE(cfg->seccomp_profile_json.has_value());
  EXPECT_EQ(json::parse(*cfg->seccomp_profile_json)["defaultErrnoRet"], 38);
  EXPECT_EQ(cfg->masked_paths.size(), 11u);
  EXPECT_EQ(cfg->readonly_paths.front(), "/proc/asound");
}

TEST(OciBundleConfig, MinimalConfigTakesTheDefaults) {
  auto cfg = ParseBundleConfig(MinimalConfig(), "/b");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->bundle_dir, "/b");
  EXPECT_EQ(cfg->root_path, "/b/rootfs");
  EXPECT_EQ(cfg->process.cwd, "/");
  EXPECT_EQ(cfg->process.user.uid, 0u);
  EXPECT_FALSE(cfg->process.user.umask.has_value());
  EXPECT_FALSE(cfg->process.console_size.has_value());
  EXPECT_FALSE(cfg->seccomp_profile_json.has_value());
  EXPECT_TRUE(cfg->namespaces.empty());
  EXPECT_EQ(cfg->FindNamespace("pid"), nullptr);
}

TEST(OciBundleConfig, RootPathIsResolvedAgainstTheBundleAndNormalised) {
  json doc = MinimalConfig();
  doc["root"]["path"] = "./images/../rootfs/";
  doc["root"]["readonly"] = true;
  auto cfg = ParseBundleConfig(doc, "/srv/bundle");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->root_path, "/srv/bundle/rootfs");
  EXPECT_TRUE(cfg->root_readonly);
  doc["root"]["path"] = "/var/lib/x//rootfs";
  cfg = ParseBundleConfig(doc, "/srv/bundle");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->root_path, "/var/lib/x/rootfs");
}

// Every unimplemented field with its "nothing to do" value, as Go generators write them.
TEST(OciBundleConfig, AcceptsUnimplementedFieldsHoldingTheirNoOpValue) {
  json doc = MinimalConfig();
  doc["hooks"] = {{"prestart", json::array()}, {"poststop", nullptr}};
  doc["process"]["apparmorProfile"] = "";
  doc["process"]["selinuxLabel"] = "";
  doc["process"]["scheduler"] = json::object();
  doc["process"]["user"]["username"] = "";
  doc["linux"]["mountLabel"] = "";
  doc["linux"]["intelRdt"] = json::object();
  doc["linux"]["personality"] = nullptr;
  doc["linux"]["timeOffsets"] = json::object();
  doc["linux"]["resources"]["memory"] = {
      {"kernel", 0}, {"disableOOMKiller", false}, {"swappiness", nullptr}, {"limit", 1 << 30}};
  doc["linux"]["resources"]["cpu"] = {{"realtimeRuntime", 0}, {"idle", 0}, {"quota", -1}};
  doc["linux"]["resources"]["blockIO"] = json::object();
  doc["linux"]["resources"]["hugepageLimits"] = json::array();
  doc["linux"]["resources"]["unified"] = json::object();
  doc["linux"]["seccomp"] = {
      {"defaultAction", "SCMP_ACT_ALLOW"}, {"flags", json::array()}, {"listenerPath", ""}};
  doc["mounts"] = {{{"destination", "/tmp"}, {"type", "tmpfs"}, {"uidMappings", json::array()}}};
  auto cfg = ParseBundleConfig(doc, "/b");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->resources.memory_limit, int64_t{1} << 30);
  EXPECT_EQ(cfg->resources.cpu_quota, -1);
  EXPECT_EQ(cfg->seccomp_profile_json, R"({"defaultAction":"SCMP_ACT_ALLOW"})");
}

TEST(OciBundleConfig, ReadsLinuxDevicesAndIdMappings) {
  json doc = MinimalConfig();
  doc["linux"]["devices"] = {
      {{"path", "/dev/fuse"}, {"type", "c"}, {"major", 10}, {"minor", 229}, {"fileMode", 0666}},
      {{"path", "/dev/my-fifo"}, {"type", "p"}, {"uid", 1000}, {"gid", 1000}}};
  doc["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}};
  doc["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}};
  doc["linux"]["namespaces"] = {{{"type", "user"}}, {{"type", "time"}}};
  doc["linux"]["rootfsPropagation"] = "rslave";
  auto cfg = ParseBundleConfig(doc, "/b");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  ASSERT_EQ(cfg->devices.size(), 2u);
  EXPECT_EQ(cfg->devices[0].path, "/dev/fuse");
  EXPECT_EQ(cfg->devices[0].type, 'c');
  EXPECT_EQ(cfg->devices[0].major, 10);
  EXPECT_EQ(cfg->devices[0].minor, 229);
  EXPECT_EQ(cfg->devices[0].file_mode, 0666u);
  EXPECT_EQ(cfg->devices[1].type, 'p');
  EXPECT_EQ(cfg->devices[1].uid, 1000u);
  EXPECT_FALSE(cfg->devices[1].file_mode.has_value());
  ASSERT_EQ(cfg->uid_mappings.size(), 1u);
  EXPECT_EQ(cfg->uid_mappings[0].host_id, 100000u);
  EXPECT_EQ(cfg->gid_mappings[0].size, 65536u);
  EXPECT_NE(cfg->FindNamespace("time"), nullptr);
  EXPECT_EQ(cfg->rootfs_propagation, "rslave");
}

TEST(OciBundleConfigRefusal, UnknownKeysAtTopLevelAndNested) {
  json doc = MinimalConfig();
  doc["foo"] = 1;
  EXPECT_EQ(Refusal(doc), "config.json: foo: unknown key");
  doc = json::parse(kContainerdConfig);
  doc["process"]["user"]["name"] = "root";
  EXPECT_EQ(Refusal(doc), "config.json: process.user.name: unknown key");
  doc = json::parse(kContainerdConfig);
  doc["linux"]["resources"]["memory"]["limitInBytes"] = 5;
  EXPECT_EQ(Refusal(doc), "config.json: linux.resources.memory.limitInBytes: unknown key");
  doc = json::parse(kContainerdConfig);
  doc["mounts"][3]["propagation"] = "rprivate";
  EXPECT_EQ(Refusal(doc), "config.json: mounts[3].propagation: unknown key");
}

TEST(OciBundleConfigRefusal, AnnotationsAreFreeFormButStrings) {
  json doc = MinimalConfig();
  doc["annotations"] = {{"anything.goes/here", "x"}, {"org.example.flag", "true"}};
  EXPECT_EQ(Refusal(doc), "(accepted)");
  doc["annotations"]["org.example.count"] = 3;
  EXPECT_EQ(Refusal(doc),
            "config.json: annotations.org.example.count: expected a string, got number");
}

TEST(OciBundleConfigRefusal, WrongTypesNameTheExpectedType) {
  json doc = json::parse(kContainerdConfig);
  doc["process"]["terminal"] = "yes";
  EXPECT_EQ(Refusal(doc), "config.json: process.terminal: expected a boolean, got string");
  doc = json::parse(kContainerdConfig);
  doc["linux"]["resources"]["memory"]["limit"] = "1G";
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.resources.memory.limit: expected an integer, got string");
  doc = json::parse(kContainerdConfig);
  doc["mounts"][4]["options"] = "ro";
  EXPECT_EQ(Refusal(doc), "config.json: mounts[4].options: expected an array, got string");
  doc = json::parse(kContainerdConfig);
  doc["mounts"][4]["options"][1] = 7;
  EXPECT_EQ(Refusal(doc), "config.json: mounts[4].options[1]: expected a string, got number");
  doc = json::parse(kContainerdConfig);
  doc["linux"]["resources"]["cpu"]["shares"] = 2.5;
  EXPECT_EQ(Refusal(doc), "config.json: linux.resources.cpu.shares: expected an integer, got 2.5");
  doc = json::parse(kContainerdConfig);
  doc["process"]["user"]["uid"] = -1;
  EXPECT_EQ(Refusal(doc), "config.json: process.user.uid: -1 is out of range (0..4294967295)");
  doc = json::parse(kContainerdConfig);
  doc["linux"] = json::array();
  EXPECT_EQ(Refusal(doc), "config.json: linux: expected an object, got array");
  EXPECT_EQ(Refusal(json::array()), "config.json: expected an object, got array");
}

TEST(OciBundleConfigRefusal, MissingRequiredFields) {
  json doc = MinimalConfig();
  doc.erase("ociVersion");
  EXPECT_EQ(Refusal(doc), "config.json: ociVersion: missing");
  doc = MinimalConfig();
  doc["ociVersion"] = "2.0.0";
  EXPECT_EQ(Refusal(doc), "config.json: ociVersion: expected a 1.x version, got \"2.0.0\"");
  doc = MinimalConfig();
  doc["root"].erase("path");
  EXPECT_EQ(Refusal(doc), "config.json: root.path: missing");
  doc = MinimalConfig();
  doc.erase("process");
  EXPECT_EQ(Refusal(doc), "config.json: process: missing");
  doc = MinimalConfig();
  doc["process"]["args"] = json::array();
  EXPECT_EQ(Refusal(doc), "config.json: process.args: must not be empty");
}

TEST(OciBundleConfigRefusal, RelativePaths) {
  json doc = json::parse(kContainerdConfig);
  doc["mounts"][1]["destination"] = "dev";
  EXPECT_EQ(Refusal(doc),
            "config.json: mounts[1].destination: expected an absolute path, got \"dev\"");
  doc = json::parse(kContainerdConfig);
  doc["mounts"][1].erase("destination");
  EXPECT_EQ(Refusal(doc), "config.json: mounts[1].destination: missing");
  doc = MinimalConfig();
  doc["process"]["cwd"] = "work";
  EXPECT_EQ(Refusal(doc), "config.json: process.cwd: expected an absolute path, got \"work\"");
  doc = json::parse(kContainerdConfig);
  doc["linux"]["maskedPaths"][2] = "proc/kcore";
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.maskedPaths[2]: expected an absolute path, got \"proc/kcore\"");
  doc = MinimalConfig();
  doc["linux"]["devices"] = {
      {{"path", "/dev/../etc/x"}, {"type", "c"}, {"major", 1}, {"minor", 3}}};
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.devices[0].path: expected a normal absolute path "
            "under /dev, got \"/dev/../etc/x\"");
}

TEST(OciBundleConfigRefusal, UnknownCapability) {
  json doc = json::parse(kContainerdConfig);
  doc["process"]["capabilities"]["bounding"][2] = "CAP_FOO";
  EXPECT_EQ(Refusal(doc),
            "config.json: process.capabilities.bounding[2]: unknown capability \"CAP_FOO\"");
  // libcap takes these; runc does not.
  doc["process"]["capabilities"]["bounding"][2] = "cap_chown";
  EXPECT_EQ(Refusal(doc),
            "config.json: process.capabilities.bounding[2]: unknown capability \"cap_chown\"");
  doc["process"]["capabilities"]["bounding"][2] = "CAP_CHOWNX";
  EXPECT_EQ(Refusal(doc),
            "config.json: process.capabilities.bounding[2]: unknown capability \"CAP_CHOWNX\"");
  doc = MinimalConfig();
  doc["process"]["capabilities"]["ambient"] = {"CAP_NET_BIND_SERVICE", "CAP_SYS_ADMIN"};
  auto cfg = ParseBundleConfig(doc, "/b");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->process.capabilities.ambient,
            (std::vector<int>{CAP_NET_BIND_SERVICE, CAP_SYS_ADMIN}));
}

TEST(OciBundleConfigRefusal, UnknownRlimitSoftAboveHardAndDuplicates) {
  json doc = json::parse(kContainerdConfig);
  doc["process"]["rlimits"][0]["type"] = "RLIMIT_FOO";
  EXPECT_EQ(Refusal(doc), "config.json: process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\"");
  doc = json::parse(kContainerdConfig);
  doc["process"]["rlimits"][0]["soft"] = 2048;
  EXPECT_EQ(Refusal(doc),
            "config.json: process.rlimits[0]: soft limit 2048 is above hard limit 1024");
  doc = json::parse(kContainerdConfig);
  doc["process"]["rlimits"].push_back({{"type", "RLIMIT_NOFILE"}, {"soft", 1}, {"hard", 1}});
  EXPECT_EQ(Refusal(doc), "config.json: process.rlimits[1]: duplicate rlimit type");
  doc = MinimalConfig();
  doc["process"]["rlimits"] = {{{"type", "RLIMIT_CORE"}, {"soft", 0}, {"hard", UINT64_MAX}}};
  auto cfg = ParseBundleConfig(doc, "/b");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->process.rlimits[0].resource, RLIMIT_CORE);
  EXPECT_EQ(cfg->process.rlimits[0].hard, RLIM_INFINITY);
}

TEST(OciBundleConfigRefusal, DuplicateOrUnknownNamespace) {
  json doc = json::parse(kContainerdConfig);
  doc["linux"]["namespaces"][2] = {{"type", "pid"}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.namespaces[2]: duplicate namespace type \"pid\"");
  doc = json::parse(kContainerdConfig);
  doc["linux"]["namespaces"][1] = {{"type", "net"}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.namespaces[1].type: unknown namespace type \"net\"");
}

TEST(OciBundleConfigRefusal, NonEmptyHooks) {
  json doc = json::parse(kContainerdConfig);
  doc["hooks"] = {{"createRuntime", json::array()},
                  {"prestart", {{{"path", "/usr/bin/nvidia-container-runtime-hook"}}}}};
  EXPECT_EQ(Refusal(doc),
            "config.json: hooks.prestart: OCI hooks are not supported by corral-runc");
  doc["hooks"] = {{"onExit", json::array()}};
  EXPECT_EQ(Refusal(doc), "config.json: hooks.onExit: unknown key");
}

TEST(OciBundleConfigRefusal, UnimplementedFieldsWithAValue) {
  json doc = json::parse(kContainerdConfig);
  doc["linux"]["intelRdt"] = {{"closID", "guaranteed_group"}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.intelRdt: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["process"]["apparmorProfile"] = "containers-default-0.50.0";
  EXPECT_EQ(Refusal(doc), "config.json: process.apparmorProfile: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_IDLE"}};
  EXPECT_EQ(Refusal(doc), "config.json: process.ioPriority: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["resources"]["memory"] = {{"swappiness", 0}};
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.resources.memory.swappiness: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["resources"]["cpu"] = {{"burst", 1000}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.resources.cpu.burst: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["resources"]["blockIO"] = {{"weight", 500}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.resources.blockIO: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["mountLabel"] = "system_u:object_r:container_file_t:s0";
  EXPECT_EQ(Refusal(doc), "config.json: linux.mountLabel: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["resources"]["memory"] = {{"disableOOMKiller", "no"}};
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.resources.memory.disableOOMKiller: expected a boolean, got string");
}

TEST(OciBundleConfigRefusal, SeccompFlagsAndListener) {
  json doc = json::parse(kPodmanConfig);
  doc["linux"]["seccomp"]["flags"] = {"SECCOMP_FILTER_FLAG_LOG"};
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.seccomp.flags[0]: seccomp flag "
            "\"SECCOMP_FILTER_FLAG_LOG\" is not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["seccomp"]["listenerPath"] = "/run/seccomp-agent.sock";
  EXPECT_EQ(Refusal(doc), "config.json: linux.seccomp.listenerPath: not supported by corral-runc");
  doc = json::parse(kPodmanConfig);
  doc["linux"]["seccomp"] = "unconfined";
  EXPECT_EQ(Refusal(doc), "config.json: linux.seccomp: expected an object, got string");
}

TEST(OciBundleConfigRefusal, OtherPlatformsMustBeAbsent) {
  json doc = json::parse(kContainerdConfig);
  doc["windows"] = {{"layerFolders", json::array()}};
  EXPECT_EQ(Refusal(doc), "config.json: windows: not for Linux; must be absent");
  doc = MinimalConfig();
  doc["solaris"] = json::object();
  EXPECT_EQ(Refusal(doc), "config.json: solaris: not for Linux; must be absent");
}

TEST(OciBundleConfigRefusal, ValuesOutOfTheirDomain) {
  json doc = MinimalConfig();
  doc["process"]["env"] = {"A=1", "NOEQUALS"};
  EXPECT_EQ(Refusal(doc), "config.json: process.env[1]: expected KEY=value, got \"NOEQUALS\"");
  doc = MinimalConfig();
  doc["process"]["oomScoreAdj"] = 1001;
  EXPECT_EQ(Refusal(doc), "config.json: process.oomScoreAdj: 1001 is out of range (-1000..1000)");
  doc = MinimalConfig();
  doc["linux"]["resources"]["devices"] = {{{"allow", true}, {"access", "rwx"}}};
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.resources.devices[0].access: expected a non-empty "
            "subset of \"rwm\", got \"rwx\"");
  doc = MinimalConfig();
  doc["linux"]["resources"]["devices"] = {{{"access", "r"}}};
  EXPECT_EQ(Refusal(doc), "config.json: linux.resources.devices[0].allow: missing");
  doc = MinimalConfig();
  doc["linux"]["rootfsPropagation"] = "recursive";
  EXPECT_EQ(Refusal(doc),
            "config.json: linux.rootfsPropagation: unknown propagation \"recursive\"");
  doc = MinimalConfig();
  doc["process"]["args"] = {"/bin/echo", std::string("a\0b", 3)};
  EXPECT_EQ(Refusal(doc), "config.json: process.args[1]: contains a NUL byte");
}

TEST(OciBundleConfig, LoadReadsTheBundleRelativeToTheWorkingDirectory) {
  test::TempDir dir;
  ASSERT_TRUE(dir.MakeDirs("bundle").has_value());
  ASSERT_TRUE(dir.WriteFile("bundle/config.json", kPodmanConfig).has_value());
  const std::string relative =
      std::filesystem::relative(dir.Join("bundle"), std::filesystem::current_path()).string();
  ASSERT_NE(relative[0], '/');
  auto cfg = LoadBundleConfig(relative);
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->bundle_dir, std::filesystem::canonical(dir.Join("bundle")).string());
  EXPECT_EQ(cfg->hostname, "0c1f5e7a2b3d");

  ASSERT_TRUE(dir.WriteFile("bundle/config.json", MinimalConfig().dump()).has_value());
  cfg = LoadBundleConfig(dir.Join("bundle") + "/");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message();
  EXPECT_EQ(cfg->root_path, dir.Join("bundle/rootfs"));
}

TEST(OciBundleConfig, LoadNamesAMissingFileAndBadJson) {
  test::TempDir dir;
  auto missing = LoadBundleConfig(dir.path());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find(dir.Join("config.json")), std::string::npos)
      << missing.error().message();

  ASSERT_TRUE(dir.WriteFile("config.json", "{\"ociVersion\": \"1.0.2\",").has_value());
  auto bad = LoadBundleConfig(dir.path());
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("invalid JSON: [json.exception.parse_error.101]"),
            std::string::npos)
      << bad.error().message();

  ASSERT_TRUE(dir.WriteFile("config.json", R"({"ociVersion": "1.0.2", "vm": {}})").has_value());
  auto refused = LoadBundleConfig(dir.path());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message(), "config.json: vm: not for Linux; must be absent");
}

}  // namespace
}  // namespace corral::runtime::oci
