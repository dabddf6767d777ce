// Volumes in the spec (runtime/spec/) and their store (runtime/volumes/volume_store.h):
// the --volume flag, the config's `volume:` mounts and their checks, the record JSON of a
// mount that is a volume, and the store's records, listing and removal. The store's tests
// use a state directory of their own (CORRAL_STATE_DIR).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "runtime/spec/config.h"
#include "runtime/spec/spec_json.h"
#include "runtime/volumes/volume_store.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

using ::testing::HasSubstr;

TEST(VolumeFlag, NameTargetAndModeReadWriteUnlessRo) {
  auto rw = ParseVolumeFlag("data:/data");
  ASSERT_TRUE(rw) << rw.error().message();
  EXPECT_EQ(rw->volume, "data");
  EXPECT_EQ(rw->container_path, "/data");
  EXPECT_TRUE(rw->host_path.empty());
  EXPECT_FALSE(rw->read_only);
  auto ro = ParseVolumeFlag("v.1_x-y:/srv/v:ro");
  ASSERT_TRUE(ro) << ro.error().message();
  EXPECT_EQ(ro->volume, "v.1_x-y");
  EXPECT_EQ(ro->container_path, "/srv/v");
  EXPECT_TRUE(ro->read_only);
  EXPECT_FALSE(ParseVolumeFlag("data:/d:rw")->read_only);
  for (const char* bad : {"data", ":/d", "data:", "data:/d:x:y", "data:/d:rx"}) {
    auto r = ParseVolumeFlag(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr("expected NAME:CONTAINER[:ro|rw]")) << bad;
  }
  for (const char* bad : {"a/b:/d", ".x:/d", "-x:/d", "x y:/d"}) {
    auto r = ParseVolumeFlag(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message(), HasSubstr(kVolumeNameRule)) << bad;
  }
  EXPECT_TRUE(IsValidVolumeName(std::string(64, 'a')));
  EXPECT_FALSE(IsValidVolumeName(std::string(65, 'a')));
}

TEST(VolumeConfig, AMountNamesAHostPathOrAVolumeNeverBothOrNeither) {
  JailSpec spec;
  ASSERT_TRUE(LoadConfigText("mounts:\n  - {volume: work, container_path: /w, read_only: false}\n",
                             "t", &spec));
  ASSERT_EQ(spec.mounts.size(), 1u);
  EXPECT_EQ(spec.mounts[0].volume, "work");
  EXPECT_FALSE(spec.mounts[0].read_only);
  spec.argv = {"true"};
  EXPECT_TRUE(Validate(spec).empty());

  auto problems = [](const std::string& yaml) {
    JailSpec s;
    s.argv = {"true"};
    EXPECT_TRUE(LoadConfigText(yaml, "t", &s)) << yaml;
    std::string all;
    for (const auto& p : Validate(s)) all += p + "\n";
    return all;
  };
  EXPECT_THAT(problems("mounts:\n  - {container_path: /w}\n"),
              HasSubstr("mounts[0]: needs host_path (a host directory or file) or volume"));
  EXPECT_THAT(problems("mounts:\n  - {host_path: /tmp, volume: w, container_path: /w}\n"),
              HasSubstr("mounts[0]: gives both host_path and volume; give one"));
  EXPECT_THAT(problems("mounts:\n  - {volume: ../w, container_path: /w}\n"),
              HasSubstr("mounts[0].volume: must be 1 to 64 letters"));
}

TEST(VolumeJson, AVolumeMountKeepsItsFieldsAndAnOldRecordStillReads) {
  JailSpec spec;
  MountSpec m;
  m.volume = "work";
  m.host_path = "/var/lib/corral/volumes/work/image.ext4";
  m.container_path = "/w";
  m.read_only = false;
  m.image = true;
  m.disk_uid = 1879050000;
  m.disk_gid = 1879050001;
  spec.mounts = {m, MountSpec("/srv", "/srv", true)};
  auto again = SpecFromJson(SpecToJson(spec));
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->mounts, spec.mounts);
  // A record written before volumes has none of their fields.
  const std::string text = SpecToJson(JailSpec());
  auto j = nlohmann::json::parse(text);
  j["mounts"] = nlohmann::json::array(
      {{{"host_path", "/srv"}, {"container_path", "/srv"}, {"read_only", true}}});
  auto old = SpecFromJson(j.dump());
  ASSERT_TRUE(old) << old.error().message();
  ASSERT_EQ(old->mounts.size(), 1u);
  EXPECT_TRUE(old->mounts[0].volume.empty());
  EXPECT_FALSE(old->mounts[0].disk_uid.has_value());
}

class VolumeStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CORRAL_STATE_DIR", state_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CORRAL_STATE_DIR"); }
  test::TempDir state_;
};

TEST_F(VolumeStoreTest, CreateFindListAndRemove) {
  auto store = VolumeStore::Open();
  ASSERT_TRUE(store) << store.error().message();
  EXPECT_EQ(store->root(), state_.path() + "/volumes");
  auto made = store->Create("one", std::nullopt);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_EQ(made->name, "one");
  EXPECT_FALSE(made->size_bytes);
  struct stat st;
  ASSERT_EQ(::stat(store->PathOf(*made).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, made->uid);
  EXPECT_EQ(st.st_gid, made->gid);
  if (::geteuid() != 0) {
    EXPECT_EQ(made->uid, ::geteuid());
  }

  auto taken = store->Create("one", std::nullopt);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code(), ErrorCode::kAlreadyExists);
  auto found = store->Find("one");
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->uid, made->uid);
  EXPECT_EQ(found->created_at, made->created_at);
  EXPECT_EQ(store->Find("two").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->Find("../one").error().code(), ErrorCode::kInvalidArgument);

  // A create cut short (no record) and a corrupt record are listed as unreadable.
  ASSERT_EQ(::mkdir(store->DirOf("half").c_str(), 0700), 0);
  ASSERT_TRUE(store->Create("bad", std::nullopt));
  ASSERT_TRUE(WriteFile(store->DirOf("bad") + "/volume.json", "{"));  // it exists: truncated
  std::vector<UnreadableVolume> unreadable;
  auto list = store->List(&unreadable);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "one");
  ASSERT_EQ(unreadable.size(), 2u);
  EXPECT_EQ(unreadable[0].name, "bad");
  EXPECT_THAT(unreadable[0].why, HasSubstr("corrupt volume record"));
  EXPECT_EQ(unreadable[1].name, "half");
  EXPECT_THAT(unreadable[1].why, HasSubstr("was not created whole"));

  std::ofstream(store->PathOf(*made) + "/f") << std::string(10000, 'x');
  ASSERT_EQ(::symlink("/etc", (store->PathOf(*made) + "/out").c_str()), 0);
  VolumeUsage usage = store->Usage(*made);
  EXPECT_GE(usage.bytes, 10000);
  EXPECT_EQ(usage.files, 2);

  // Removal never follows the symlink; a removal cut short is finished by the next list.
  ASSERT_TRUE(store->RemoveDir("one"));
  EXPECT_EQ(::stat("/etc/passwd", &st), 0);
  EXPECT_EQ(store->Find("one").error().code(), ErrorCode::kNotFound);
  ASSERT_EQ(::mkdir((store->root() + "/.removing-x-1").c_str(), 0700), 0);
  store->List();
  EXPECT_NE(::stat((store->root() + "/.removing-x-1").c_str(), &st), 0);
  EXPECT_EQ(store->RemoveDir("one").error().code(), ErrorCode::kNotFound);
}

TEST_F(VolumeStoreTest, SizesBelowTheMinimumAreRefused) {
  auto store = VolumeStore::Open();
  ASSERT_TRUE(store) << store.error().message();
  auto tiny = store->Create("tiny", 1 << 20);
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(tiny.error().message(), HasSubstr("at least 16MiB"));
  EXPECT_EQ(store->Find("tiny").error().code(), ErrorCode::kNotFound) << "nothing left behind";
}

}  // namespace
}  // namespace corral::runtime
