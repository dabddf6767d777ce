// The reserved identity's pure parts (runtime/run/identity.h): finding corral's range,
// refusing one that holds an account's id, the slot a key gets, the maps, and
// `corral setup ids` on fake id files.
#include "runtime/run/identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/files.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

using test::TempDir;

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "cloudsdk:x:1000:1000::/home/cloudsdk:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
constexpr const char* kGroup = "root:x:0:\ncloudsdk:x:1000:\nnogroup:x:65534:\n";

// Fake /etc/{subuid,subgid,passwd,group} in a temp dir.
struct FakeEtc {
  TempDir dir;
  IdFiles files;
  FakeEtc(const std::string& subuid, const std::string& subgid, const std::string& passwd = kPasswd,
          const std::string& group = kGroup) {
    files = {dir.Join("subuid"), dir.Join("subgid"), dir.Join("passwd"), dir.Join("group")};
    EXPECT_TRUE(dir.WriteFile("subuid", subuid));
    EXPECT_TRUE(dir.WriteFile("subgid", subgid));
    EXPECT_TRUE(dir.WriteFile("passwd", passwd));
    EXPECT_TRUE(dir.WriteFile("group", group));
  }
};

TEST(ReservedRange, NeedsCorralsLineInBothFiles) {
  auto r = FindReservedRange("alice:100000:65536\ncorral:500000:100\n", "corral:600000:50\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->uids.start, 500000u);
  EXPECT_EQ(r->uids.count, 100u);
  EXPECT_EQ(r->gids.start, 600000u);
  EXPECT_FALSE(FindReservedRange("corral:500000:100\n", "alice:1:2\n"));
  EXPECT_FALSE(FindReservedRange("alice:500000:100\n", "alice:500000:100\n"));
}

TEST(ReservedRange, FreeRangePasses) {
  FakeEtc etc("alice:100000:65536\n", "alice:100000:65536\n");
  ReservedRange r{{500000, 1000}, {500000, 1000}};
  EXPECT_TRUE(CheckRangeFree(r, etc.files));
}

TEST(ReservedRange, AnAccountInsideIsRefusedByName) {
  FakeEtc etc("", "", std::string(kPasswd) + "builder:x:500123:100::/home/b:/bin/sh\n");
  Status st = CheckRangeFree({{500000, 1000}, {900000, 10}}, etc.files);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("account builder (id 500123 in " + etc.files.passwd),
            std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("corral setup ids --start N"), std::string::npos);
  // Its first id and its last one are inside; one past the end is not.
  EXPECT_FALSE(CheckRangeFree({{500123, 1}, {900000, 10}}, etc.files));
  EXPECT_FALSE(CheckRangeFree({{499124, 1000}, {900000, 10}}, etc.files));
  EXPECT_TRUE(CheckRangeFree({{499123, 1000}, {900000, 10}}, etc.files));
}

TEST(ReservedRange, AGroupOrPrimaryGidInsideIsRefused) {
  FakeEtc etc("", "", kPasswd, std::string(kGroup) + "docker:x:700001:\n");
  Status st = CheckRangeFree({{500000, 10}, {700000, 10}}, etc.files);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("group docker (group id 700001"), std::string::npos)
      << st.error().message();
  st = CheckRangeFree({{500000, 10}, {1000, 1}}, etc.files);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("cloudsdk"), std::string::npos) << st.error().message();
}

TEST(ReservedRange, AnotherSubordinateRangeOverlappingIsRefused) {
  FakeEtc etc("alice:100000:65536\ncorral:100000:10\n", "");
  Status st = CheckRangeFree({{165535, 10}, {900000, 10}}, etc.files);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("alice's subordinate range 100000:65536"), std::string::npos)
      << st.error().message();
  // corral's own line is not "another" range; right after alice's is free.
  EXPECT_TRUE(CheckRangeFree({{165536, 10}, {900000, 10}}, etc.files));
}

TEST(Slot, StableSpreadAndZeroForOneShotRuns) {
  EXPECT_EQ(SlotFor("", 65536), 0u);
  EXPECT_EQ(SlotFor("/data/threads/t1/user-data", 65536),
            SlotFor("/data/threads/t1/user-data", 65536));
  EXPECT_NE(SlotFor("/data/threads/t1/user-data", 65536),
            SlotFor("/data/threads/t2/user-data", 65536));
  for (const char* key : {"a", "b", "sandbox-x", "/x"}) {
    uint32_t slot = SlotFor(key, 100);
    EXPECT_GE(slot, 1u) << key;
    EXPECT_LT(slot, 100u) << key;
  }
  EXPECT_EQ(SlotFor("a", 1), 0u) << "a range of one id has only the shared slot";
}

TEST(Slot, KeyIsTheUserDataDirNormalizedElseTheSandboxName) {
  JailSpec spec;
  spec.identity_key = "my-sandbox";
  EXPECT_EQ(IdentityKeyOf(spec), "my-sandbox");
  spec.user_data_dir = "/data/t1/./user-data/";
  EXPECT_EQ(IdentityKeyOf(spec), "/data/t1/user-data");
}

TEST(ResolveIdentity, ReservedWhenARangeIsThereElseHostUidUnderAuto) {
  if (::geteuid() != 0) GTEST_SKIP() << "as non-root every jail is rootless";
  FakeEtc reserved("corral:500000:1000\n", "corral:600000:1000\n");
  JailSpec spec;
  spec.identity_key = "box";
  auto id = ResolveIdentity(spec, reserved.files);
  ASSERT_TRUE(id) << id.error().message();
  EXPECT_EQ(id->mode, "reserved");
  EXPECT_EQ(id->uid, 500000 + SlotFor("box", 1000));
  EXPECT_EQ(id->gid, 600000 + SlotFor("box", 1000));

  spec.identity = IdentityMode::kHostUid;
  id = ResolveIdentity(spec, reserved.files);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->mode, "host-uid");
  EXPECT_EQ(id->uid, 1000u);

  FakeEtc none("", "");
  spec.identity = IdentityMode::kAuto;
  id = ResolveIdentity(spec, none.files);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->mode, "host-uid");
  EXPECT_NE(id->note.find("corral setup ids"), std::string::npos) << id->note;
  spec.identity = IdentityMode::kReserved;
  id = ResolveIdentity(spec, none.files);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("identity: reserved: no range reserved"), std::string::npos)
      << id.error().message();
}

TEST(ResolveIdentity, AnOverlappingRangeIsRefusedEvenUnderAuto) {
  if (::geteuid() != 0) GTEST_SKIP() << "as non-root every jail is rootless";
  FakeEtc etc("corral:999:10\n", "corral:600000:10\n");
  auto id = ResolveIdentity(JailSpec(), etc.files);
  ASSERT_FALSE(id);
  EXPECT_NE(id.error().message().find("account cloudsdk (id 1000"), std::string::npos)
      << id.error().message();
}

TEST(ReservedUserNamespace, RootForSetupTheCommandOnItsReservedId) {
  HostIdentity id;
  id.uid = 1879048200;
  id.gid = 1879048300;
  JailSpec spec;
  auto ns = ReservedUserNamespace(spec, id);
  EXPECT_TRUE(ns.enabled);
  EXPECT_EQ(jail::IdMapText(ns.uid_map), "0 0 1\n1000 1879048200 1\n");
  EXPECT_EQ(jail::IdMapText(ns.gid_map), "0 0 1\n1000 1879048300 1\n");
  EXPECT_FALSE(ns.deny_setgroups);
  EXPECT_TRUE(ns.newuidmap.empty());
  EXPECT_EQ(ns.init_uid, 0u);
}

TEST(ReserveRange, AddsBothLinesOnceAndKeepsAnExistingOne) {
  FakeEtc etc("alice:100000:65536\n", "alice:100000:65536");
  auto done = ReserveRange(std::nullopt, std::nullopt, etc.files);
  ASSERT_TRUE(done) << done.error().message();
  EXPECT_EQ(*ReadFile(etc.files.subuid), "alice:100000:65536\ncorral:1879048192:65536\n");
  EXPECT_EQ(*ReadFile(etc.files.subgid), "alice:100000:65536\ncorral:1879048192:65536\n");
  auto again = ReserveRange(std::nullopt, std::nullopt, etc.files);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_NE(again->find("already reserved"), std::string::npos) << *again;
  EXPECT_EQ(*ReadFile(etc.files.subuid), "alice:100000:65536\ncorral:1879048192:65536\n");
  auto moved = ReserveRange(500000u, std::nullopt, etc.files);
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().message().find("already reserves corral:1879048192:65536"),
            std::string::npos)
      << moved.error().message();
  EXPECT_FALSE(std::filesystem::exists(etc.files.subuid + ".lock"));
}

TEST(ReserveRange, CreatesTheSubidFilesWhereTheSystemHasNone) {
  FakeEtc etc("", "");
  std::filesystem::remove(etc.files.subuid);
  std::filesystem::remove(etc.files.subgid);
  auto done = ReserveRange(std::nullopt, std::nullopt, etc.files);
  ASSERT_TRUE(done) << done.error().message();
  EXPECT_EQ(*ReadFile(etc.files.subuid), "corral:1879048192:65536\n");
  EXPECT_EQ(*ReadFile(etc.files.subgid), "corral:1879048192:65536\n");
  EXPECT_EQ(std::filesystem::status(etc.files.subuid).permissions(), std::filesystem::perms(0644));
}

TEST(ReserveRange, RefusesARangeWithAnAccountAndWritesNothing) {
  FakeEtc etc("", "");
  auto done = ReserveRange(900u, 200u, etc.files);
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message().find("account cloudsdk (id 1000"), std::string::npos)
      << done.error().message();
  EXPECT_EQ(*ReadFile(etc.files.subuid), "");
  EXPECT_EQ(*ReadFile(etc.files.subgid), "");
}

TEST(ReleaseRange, DropsOnlyCorralsLinesAndSaysSoWhenThereWereNone) {
  FakeEtc etc("alice:100000:65536\ncorral:1879048192:65536\nbob:200000:65536\n",
              "corral:1879048192:65536\nalice:100000:65536\n");
  auto done = ReleaseRange(etc.files);
  ASSERT_TRUE(done) << done.error().message();
  EXPECT_NE(done->find("removed"), std::string::npos) << *done;
  EXPECT_EQ(*ReadFile(etc.files.subuid), "alice:100000:65536\nbob:200000:65536\n");
  EXPECT_EQ(*ReadFile(etc.files.subgid), "alice:100000:65536\n");
  EXPECT_FALSE(std::filesystem::exists(etc.files.subuid + ".lock"));
  auto again = ReleaseRange(etc.files);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_NE(again->find("no id range"), std::string::npos) << *again;
  EXPECT_EQ(*ReadFile(etc.files.subuid), "alice:100000:65536\nbob:200000:65536\n");
}

TEST(ReserveRange, AHeldLockIsRespected) {
  FakeEtc etc("", "");
  ASSERT_TRUE(etc.dir.WriteFile("subuid.lock", "1"));  // pid 1 is alive
  auto done = ReserveRange(std::nullopt, std::nullopt, etc.files);
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message().find(".lock"), std::string::npos) << done.error().message();
  EXPECT_EQ(*ReadFile(etc.files.subuid), "");
}

}  // namespace
}  // namespace corral::runtime
