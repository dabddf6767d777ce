// The jail's mount plan (runtime/run/root_layout.cc), read without root: which kernel
// objects one jail costs. Every superblock adds state to every memory cgroup on the host
// (README, "What one sandbox costs"), so the plan may hold three: the root's tmpfs, proc
// and devpts. The writable areas are directories of that tmpfs bound over themselves,
// the /proc masks binds of one empty directory and of the host's /dev/null.
#include "runtime/run/root_layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

using jail::MountOp;
using Kind = MountOp::Kind;

constexpr char kStaging[] = "/staging";

class RootLayoutTest : public ::testing::Test {
 protected:
  // The shared /etc snapshot is made in the runtime directory: a temporary one here.
  void SetUp() override { ::setenv("CORRAL_RUNTIME_DIR", runtime_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CORRAL_RUNTIME_DIR"); }

  // The plan of `spec`, as a rootless plan is made: the binds are planned (their sources
  // looked at) without being opened, so no privilege is needed.
  std::vector<MountOp> Plan(const JailSpec& spec) {
    jail::JailPlan plan;
    plan.staging_dir = kStaging;
    plan.user_ns.enabled = true;
    auto st = AddRootLayout(spec, &plan);
    EXPECT_TRUE(st) << st.error().message();
    return std::move(plan.mounts);
  }

  static std::string JailPath(const std::string& path) {
    return path == kStaging ? "/" : path.substr(std::string(kStaging).size());
  }

  // Superblock-making ops, by jail path.
  static std::map<std::string, Kind> Superblocks(const std::vector<MountOp>& ops) {
    std::map<std::string, Kind> out;
    for (const MountOp& op : ops) {
      if (op.kind == Kind::kTmpfs || op.kind == Kind::kProc || op.kind == Kind::kDevpts) {
        out[JailPath(op.path)] = op.kind;
      }
    }
    return out;
  }

  static const MountOp* Find(const std::vector<MountOp>& ops, Kind kind, const std::string& path) {
    for (const MountOp& op : ops) {
      if (op.kind == kind && JailPath(op.path) == path) return &op;
    }
    return nullptr;
  }

  test::TempDir runtime_;
};

TEST_F(RootLayoutTest, AJailHasThreeSuperblocksTheRootsTmpfsProcAndDevpts) {
  JailSpec spec;
  auto ops = Plan(spec);
  std::map<std::string, Kind> expected = {
      {"/", Kind::kTmpfs}, {"/proc", Kind::kProc}, {"/dev/pts", Kind::kDevpts}};
  EXPECT_EQ(Superblocks(ops), expected);
}

TEST_F(RootLayoutTest, CustomMountsAndAWorkdirOutsideEveryMountAddNoSuperblock) {
  test::TempDir data;
  JailSpec spec;
  spec.mounts.push_back({data.path(), "/srv/data", /*read_only=*/false});
  spec.skills_dir = data.path();
  spec.workdir = "/work/project";
  auto ops = Plan(spec);
  EXPECT_EQ(Superblocks(ops).size(), 3u);
  const MountOp* work = Find(ops, Kind::kInnerBind, "/work/project");
  ASSERT_NE(work, nullptr) << "the workdir is an area of the root's tmpfs";
  EXPECT_FALSE(work->read_only);
  const MountOp* dir = Find(ops, Kind::kMkdir, "/work/project");
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->owner_uid, spec.uid);  // the sandbox user's, as -w makes it
  EXPECT_EQ(dir->owner_gid, spec.gid);
}

TEST_F(RootLayoutTest, TheRootsTmpfsHasTheTmpSizeAndTheWritableAreasAreCarvedFromIt) {
  JailSpec spec;
  spec.limits.tmp_size_bytes = 8 << 20;
  auto ops = Plan(spec);
  const MountOp* root = Find(ops, Kind::kTmpfs, "/");
  ASSERT_NE(root, nullptr);
  EXPECT_NE(root->data.find("size=8388608"), std::string::npos) << root->data;
  EXPECT_EQ(root->flags & (MS_NOSUID | MS_NODEV), unsigned(MS_NOSUID | MS_NODEV));
  struct Area {
    const char* path;
    mode_t mode;
    unsigned long flags;
  };
  const Area areas[] = {{"/tmp", 01777, MS_NOSUID | MS_NODEV},
                        {"/var/tmp", 01777, MS_NOSUID | MS_NODEV},
                        {"/home/sandbox", 0700, MS_NOSUID | MS_NODEV},
                        {"/run", 0755, MS_NOSUID | MS_NODEV | MS_NOEXEC},
                        {"/dev/shm", 01777, MS_NOSUID | MS_NODEV | MS_NOEXEC},
                        // Device nodes must work there: not nodev.
                        {"/dev", 0755, MS_NOSUID | MS_NOEXEC}};
  for (const Area& a : areas) {
    const MountOp* bind = Find(ops, Kind::kInnerBind, a.path);
    ASSERT_NE(bind, nullptr) << a.path;
    EXPECT_EQ(JailPath(bind->source_path), a.path) << "bound over itself";
    EXPECT_FALSE(bind->read_only) << a.path;
    EXPECT_EQ(bind->flags, a.flags) << a.path;
    const MountOp* dir = Find(ops, Kind::kMkdir, a.path);
    ASSERT_NE(dir, nullptr) << a.path;
    EXPECT_EQ(dir->mode, a.mode) << a.path;
    EXPECT_LT(dir - ops.data(), bind - ops.data()) << a.path << ": made before it is bound";
  }
  EXPECT_EQ(Find(ops, Kind::kMkdir, "/home/sandbox")->owner_uid, spec.uid);
  // /dev becomes read-only once its nodes and /dev/shm are there; /dev/shm stays writable.
  const MountOp* dev_ro = Find(ops, Kind::kRemountReadOnly, "/dev");
  ASSERT_NE(dev_ro, nullptr);
  EXPECT_GT(dev_ro, Find(ops, Kind::kInnerBind, "/dev/shm"));
  EXPECT_GT(dev_ro, Find(ops, Kind::kBind, "/dev/null"));
}

TEST_F(RootLayoutTest, ProcDirectoriesAreMaskedByOneEmptyDirectoryThatLeavesTheRoot) {
  JailSpec spec;
  auto ops = Plan(spec);
  std::string source;
  size_t masks = 0;
  size_t last_mask = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const MountOp& op = ops[i];
    if (op.kind != Kind::kInnerBind || JailPath(op.path).rfind("/proc/", 0) != 0) continue;
    ++masks;
    last_mask = i;
    EXPECT_TRUE(op.read_only) << op.path;
    EXPECT_EQ(op.flags, unsigned(MS_NOSUID | MS_NODEV | MS_NOEXEC)) << op.path;
    if (source.empty()) source = op.source_path;
    EXPECT_EQ(op.source_path, source) << "one source for every mask";
  }
  if (masks == 0) GTEST_SKIP() << "this kernel has none of the masked /proc directories";
  size_t removed = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == Kind::kRmdir && ops[i].path == source) removed = i;
  }
  ASSERT_LT(removed, ops.size()) << source << " stays in the root";
  EXPECT_GT(removed, last_mask);
  // Files are masked by the host's /dev/null: a bind, no superblock.
  for (const MountOp& op : ops) {
    if (op.kind == Kind::kBind && JailPath(op.path).rfind("/proc/", 0) == 0) {
      EXPECT_EQ(op.source_path, "/dev/null") << op.path;
    }
  }
}

TEST_F(RootLayoutTest, MountPointsIncludeTheCarvedAreas) {
  JailSpec spec;
  auto points = MountPointsOf(spec);
  ASSERT_TRUE(points) << points.error().message();
  for (const char* p : {"/tmp", "/var/tmp", "/home/sandbox", "/run", "/dev", "/dev/shm", "/usr"}) {
    EXPECT_EQ(points->count(p), 1u) << p;
  }
  EXPECT_TRUE(PathInsideAMount(*points, "/tmp/x"));
  EXPECT_FALSE(PathInsideAMount(*points, "/work"));
}

}  // namespace
}  // namespace corral::runtime
