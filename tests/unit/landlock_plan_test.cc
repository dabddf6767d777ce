// The Landlock part of the plan: the decision per ABI and mode, the rules derived from a
// mount list, the record round trip, and the `landlock:` config keys with their errors.
#include "runtime/run/landlock_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>

#include "runtime/run/planner.h"
#include "runtime/spec/config.h"

namespace corral::runtime {
namespace {

namespace ll = jail::landlock;
using jail::LandlockPathRule;
using jail::MountOp;
using ::testing::HasSubstr;

MountOp Op(MountOp::Kind kind, const std::string& jail_path, bool read_only = false,
           unsigned long flags = 0) {
  MountOp op;
  op.kind = kind;
  op.path = jail_path == "/" ? "/stage" : "/stage" + jail_path;
  op.read_only = read_only;
  op.flags = flags;
  return op;
}

std::optional<uint64_t> AccessOf(const std::vector<LandlockPathRule>& rules,
                                 const std::string& path) {
  for (const auto& r : rules) {
    if (r.path == path) return r.access;
  }
  return std::nullopt;
}

// A small jail: the layout root_layout.cc builds, in miniature.
std::vector<MountOp> MiniJail() {
  using K = MountOp::Kind;
  return {
      Op(K::kTmpfs, "/"),
      Op(K::kBind, "/usr", true),
      Op(K::kSymlink, "/bin"),
      Op(K::kBind, "/etc", true),
      Op(K::kBind, "/etc/ssl/certs", true),  // covered by /etc
      Op(K::kMkdir, "/home"),
      Op(K::kInnerBind, "/home/sandbox", false),
      Op(K::kInnerBind, "/tmp", false),
      Op(K::kInnerBind, "/run", false, MS_NOEXEC),
      Op(K::kMkdir, "/mnt"),
      Op(K::kBind, "/mnt/skills", true),
      Op(K::kBind, "/mnt/user-data", false),
      Op(K::kBind, "/srv/data", false),
      Op(K::kInnerBind, "/dev", false, MS_NOSUID | MS_NOEXEC),
      Op(K::kDevice, "/dev/null"),
      Op(K::kDevice, "/dev/tty"),
      Op(K::kSymlink, "/dev/ptmx"),
      Op(K::kRemountReadOnly, "/dev"),
      Op(K::kDevpts, "/dev/pts", false, MS_NOEXEC),
      Op(K::kInnerBind, "/dev/shm", false, MS_NOEXEC),
      Op(K::kProc, "/proc", false, MS_NOEXEC),
      Op(K::kBind, "/proc/kcore", true, MS_NOEXEC),      // a mask: covered by /proc
      Op(K::kInnerBind, "/proc/acpi", true, MS_NOEXEC),  // a mask: covered by /proc
      Op(K::kReadOnly, "/proc/sys"),
  };
}

TEST(LandlockRules, WritesOnlyBeneathReadWriteMountsReadsBeneathAll) {
  const uint64_t all = ll::FsRightsOf(7);
  auto rules = LandlockRules(MiniJail(), "/stage", true, {}, all);
  EXPECT_EQ(AccessOf(rules, "/"), ll::kReadDir);  // the read-only root: listing only
  EXPECT_EQ(AccessOf(rules, "/usr"), ll::kRead | ll::kExecute);
  EXPECT_EQ(AccessOf(rules, "/etc"), ll::kRead | ll::kExecute);
  EXPECT_EQ(AccessOf(rules, "/mnt/skills"), ll::kRead | ll::kExecute);
  for (const char* rw : {"/home/sandbox", "/tmp", "/mnt/user-data", "/srv/data"}) {
    EXPECT_EQ(AccessOf(rules, rw), ll::kRead | ll::kWrite | ll::kExecute) << rw;
  }
  EXPECT_EQ(AccessOf(rules, "/run"), ll::kRead | ll::kWrite);  // noexec: no execute
  EXPECT_EQ(AccessOf(rules, "/dev/shm"), ll::kRead | ll::kWrite);
  // /dev was made read-only after its nodes: the area keeps only its read rights; the
  // nodes and the pts instance get what terminals and `> /dev/null` need.
  EXPECT_EQ(AccessOf(rules, "/dev"), ll::kRead);
  EXPECT_EQ(AccessOf(rules, "/dev/null"), ll::kDevice);
  EXPECT_EQ(AccessOf(rules, "/dev/tty"), ll::kDevice);
  EXPECT_EQ(AccessOf(rules, "/dev/pts"), ll::kReadDir | ll::kDevice);
  EXPECT_EQ(AccessOf(rules, "/proc"), ll::kRead | ll::kWriteFile | ll::kTruncate);
  // Covered by a rule above with at least the same rights: not repeated.
  EXPECT_EQ(AccessOf(rules, "/etc/ssl/certs"), std::nullopt);
  EXPECT_EQ(AccessOf(rules, "/proc/kcore"), std::nullopt);
  EXPECT_EQ(AccessOf(rules, "/proc/acpi"), std::nullopt);
  // Nothing for directories made in the root, symlinks, or /proc/sys (read-only by mount).
  for (const char* none : {"/home", "/mnt", "/bin", "/dev/ptmx", "/proc/sys"}) {
    EXPECT_EQ(AccessOf(rules, none), std::nullopt) << none;
  }
  // Nowhere else is anything writable.
  for (const auto& r : rules) {
    if ((r.access & ll::kMakeReg) == 0) continue;
    EXPECT_THAT((std::vector<std::string>{"/home/sandbox", "/tmp", "/run", "/mnt/user-data",
                                          "/srv/data", "/dev/shm"}),
                ::testing::Contains(r.path));
  }
  // Device nodes and special files are never made.
  for (const auto& r : rules) EXPECT_EQ(r.access & (ll::kMakeChar | ll::kMakeBlock), 0u) << r.path;
}

TEST(LandlockRules, OmittedMountGetsNoRule) {
  auto rules = LandlockRules(MiniJail(), "/stage", true, {"/srv/data"}, ll::FsRightsOf(7));
  EXPECT_EQ(AccessOf(rules, "/srv/data"), std::nullopt);
  EXPECT_TRUE(AccessOf(rules, "/mnt/user-data"));
}

TEST(LandlockRules, MaskedToWhatTheAbiKnows) {
  // ABI 2: no truncate, no device ioctl. The rights a rule asks for beyond it are dropped,
  // so that the kernel does not refuse the rule.
  auto rules = LandlockRules(MiniJail(), "/stage", true, {}, ll::FsRightsOf(2));
  EXPECT_EQ(AccessOf(rules, "/dev/null"), ll::kReadFile | ll::kWriteFile);
  EXPECT_EQ(AccessOf(rules, "/tmp"), (ll::kRead | ll::kWrite | ll::kExecute) & ~ll::kTruncate);
  for (const auto& r : rules) EXPECT_EQ(r.access & ~ll::FsRightsOf(2), 0u) << r.path;
}

TEST(LandlockRules, GeneratedFilesAreReadOnly) {
  std::vector<MountOp> mounts = {Op(MountOp::Kind::kTmpfs, "/"), Op(MountOp::Kind::kMkdir, "/etc"),
                                 Op(MountOp::Kind::kFile, "/etc/passwd")};
  auto rules = LandlockRules(mounts, "/stage", true, {}, ll::FsRightsOf(7));
  EXPECT_EQ(AccessOf(rules, "/etc/passwd"), ll::kReadFile);
}

TEST(LandlockAbi, RightsGrowWithTheAbi) {
  EXPECT_EQ(ll::FsRightsOf(0), 0u);
  EXPECT_EQ(ll::FsRightsOf(1) & ll::kRefer, 0u);
  EXPECT_NE(ll::FsRightsOf(2) & ll::kRefer, 0u);
  EXPECT_EQ(ll::FsRightsOf(2) & ll::kTruncate, 0u);
  EXPECT_NE(ll::FsRightsOf(3) & ll::kTruncate, 0u);
  EXPECT_EQ(ll::FsRightsOf(4) & ll::kIoctlDev, 0u);
  EXPECT_NE(ll::FsRightsOf(5) & ll::kIoctlDev, 0u);
  EXPECT_EQ(ll::NetRightsOf(3), 0u);
  EXPECT_EQ(ll::NetRightsOf(4), ll::kBindTcp | ll::kConnectTcp);
}

TEST(LandlockDecision, AutoUsesWhatTheKernelHas) {
  JailSpec spec;
  auto on = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(on);
  EXPECT_TRUE(on->enforce);
  EXPECT_EQ(on->handled_fs, ll::FsRightsOf(7));
  EXPECT_EQ(on->handled_net, 0u);  // network none: only the jail's own loopback, left open
  EXPECT_TRUE(on->connect_ports.empty());

  auto old = DecideLandlock(spec, 3, 0);  // no TCP rights before ABI 4
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->enforce);
  EXPECT_EQ(old->handled_net, 0u);

  for (auto [abi, err] : {std::pair{0, ENOSYS}, std::pair{0, EOPNOTSUPP}, std::pair{1, 0}}) {
    auto off = DecideLandlock(spec, abi, err);
    ASSERT_TRUE(off);
    EXPECT_FALSE(off->enforce);
    EXPECT_FALSE(off->reason.empty());
  }
}

TEST(LandlockDecision, TrueRefusesToRunWithoutItNamingTheKey) {
  JailSpec spec;
  spec.landlock.enabled = LandlockMode::kOn;
  auto refused = DecideLandlock(spec, 0, ENOSYS);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message(), HasSubstr("landlock.enabled: true"));
  EXPECT_THAT(refused.error().message(), HasSubstr("no Landlock"));
  EXPECT_FALSE(DecideLandlock(spec, 1, 0));
  EXPECT_TRUE(DecideLandlock(spec, 2, 0));
}

TEST(LandlockDecision, FalseIsOff) {
  JailSpec spec;
  spec.landlock.enabled = LandlockMode::kOff;
  auto off = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->enforce);
  EXPECT_THAT(off->reason, HasSubstr("landlock.enabled"));
}

TEST(LandlockDecision, TcpFollowsTheNetworkMode) {
  JailSpec spec;
  spec.network.mode = NetworkMode::kAllowlist;
  auto allowlist = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(allowlist);
  EXPECT_EQ(allowlist->handled_net, ll::kBindTcp | ll::kConnectTcp);
  EXPECT_EQ(allowlist->connect_ports, (std::vector<uint16_t>{53, 1080, 3128}));
  // The ports of the allow rules too (captured plain TCP clients), 80/443 by default.
  spec.network.allow = {"pypi.org", "db.example.com:5432"};
  allowlist = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(allowlist);
  EXPECT_EQ(allowlist->connect_ports, (std::vector<uint16_t>{53, 80, 443, 1080, 3128, 5432}));
  // A rule for any port: connect is not fenced, bind still is.
  spec.network.allow = {"pypi.org", "*:*"};
  allowlist = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(allowlist);
  EXPECT_EQ(allowlist->handled_net, ll::kBindTcp);
  EXPECT_TRUE(allowlist->connect_ports.empty());
  spec.network.allow.clear();

  spec.network.mode = NetworkMode::kHost;
  auto host = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(host);
  EXPECT_TRUE(host->enforce);
  EXPECT_EQ(host->handled_net, 0u);

  // network none: the jail's own loopback is all it has, and a dev server may use it.
  spec.network.mode = NetworkMode::kNone;
  auto none = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->enforce);
  EXPECT_EQ(none->handled_net, 0u);

  spec.network.mode = NetworkMode::kAllowlist;
  spec.network.allow = {"pypi.org"};
  spec.landlock.tcp = false;
  auto no_tcp = DecideLandlock(spec, 7, 0);
  ASSERT_TRUE(no_tcp);
  EXPECT_TRUE(no_tcp->enforce);
  EXPECT_EQ(no_tcp->handled_net, 0u);
}

TEST(LandlockRecord, RoundTripsAndAMalformedOneDoesNotEnforce) {
  jail::LandlockPlan plan;
  plan.enforce = true;
  plan.abi = 7;
  plan.handled_fs = ll::FsRightsOf(7);
  plan.handled_net = ll::NetRightsOf(7);
  plan.rules = {{"/tmp", ll::kRead | ll::kWrite}, {"/dev/null", ll::kDevice}};
  plan.connect_ports = {3128};
  EXPECT_EQ(LandlockPlanFromJson(LandlockPlanToJson(plan)), plan);
  jail::LandlockPlan bad = LandlockPlanFromJson(nlohmann::json{{"enforce", "yes"}});
  EXPECT_FALSE(bad.enforce);
  EXPECT_THAT(bad.reason, HasSubstr("unreadable"));
}

TEST(LandlockConfig, EnabledTakesAutoTrueFalse) {
  for (auto [text, want] :
       {std::pair{"auto", "auto"}, std::pair{"true", "true"}, std::pair{"false", "false"}}) {
    JailSpec spec;
    Status s = LoadConfigText(std::string("landlock: {enabled: ") + text + "}\n", "t.yaml", &spec);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(Name(spec.landlock.enabled), want);
  }
  JailSpec spec;
  Status bad = LoadConfigText("landlock:\n  enabled: sometimes\n", "t.yaml", &spec);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(),
              HasSubstr("t.yaml:2: landlock.enabled: expected auto, true or false"));
  Status bad_tcp = LoadConfigText("landlock: {tcp: 1}\n", "t.yaml", &spec);
  ASSERT_FALSE(bad_tcp);
  EXPECT_THAT(bad_tcp.error().message(), HasSubstr("landlock.tcp: expected true or false"));
  Status typo = LoadConfigText("landlock: {enable: true}\n", "t.yaml", &spec);
  ASSERT_FALSE(typo);
  EXPECT_THAT(typo.error().message(), HasSubstr("did you mean enabled?"));
}

TEST(LandlockConfig, ValidateNamesTheField) {
  JailSpec spec;
  spec.argv = {"/bin/true"};
  // (A bad landlock.enabled cannot reach Validate: it is refused where it is read, the
  // YAML above, the JSON in modes_test.cc.)
  spec.landlock.omit = {"/nowhere"};
  std::vector<std::string> problems = Validate(spec);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr("landlock.omit[0]: is not the container_path of any"));
  spec.landlock.enabled = LandlockMode::kAuto;
  spec.mounts = {{"/usr", "/nowhere", false}};
  EXPECT_EQ(Validate(spec), std::vector<std::string>{});
}

TEST(LandlockConfig, OffIsListedAsWeakenedIsolation) {
  JailSpec spec;
  EXPECT_EQ(WeakenedIsolation(spec), std::vector<std::string>{});
  spec.landlock.enabled = LandlockMode::kOff;
  EXPECT_THAT(WeakenedIsolation(spec),
              ::testing::ElementsAre(HasSubstr("landlock.enabled is false")));
}

}  // namespace
}  // namespace corral::runtime
