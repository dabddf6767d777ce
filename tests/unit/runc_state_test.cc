// corral-runc's pure parts (runtime/oci/runc_state.h, runc_container.h): container ids,
// cgroupsPath forms, signal names, the state JSON runc's callers parse.
#include "runtime/oci/runc_state.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "runtime/oci/runc_container.h"

namespace corral::runtime::oci {
namespace {

TEST(RuncState, ContainerIdsAreRuncs) {
  EXPECT_TRUE(CheckContainerId("c1").has_value());
  EXPECT_TRUE(CheckContainerId(std::string(64, 'a')).has_value());
  EXPECT_TRUE(CheckContainerId("a_b+c.d-e").has_value());
  for (const char* bad : {"", ".", "..", "a/b", "a b", "a\nb"}) {
    auto status = CheckContainerId(bad);
    ASSERT_FALSE(status.has_value()) << bad;
    EXPECT_EQ(status.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(RuncState, CgroupsPathsAsCgroupfsDirectories) {
  EXPECT_EQ(*CgroupfsPath("/default/c1", false, "c1"), "/default/c1");
  EXPECT_EQ(*CgroupfsPath("kubepods/pod1/c1", false, "c1"), "/kubepods/pod1/c1");
  EXPECT_EQ(*CgroupfsPath("", false, "c1"), "/corral-runc/c1");
  EXPECT_FALSE(CgroupfsPath("/a/../b", false, "c1").has_value());
  // systemd's slice:prefix:name, with nested slices spelled out as systemd does.
  EXPECT_EQ(*CgroupfsPath("machine.slice:libpod:abc", true, "abc"),
            "/machine.slice/libpod-abc.scope");
  EXPECT_EQ(*CgroupfsPath("kubepods-besteffort-pod1.slice:cri-containerd:c9", true, "c9"),
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
            "cri-containerd-c9.scope");
  EXPECT_EQ(*CgroupfsPath(":corral:c2", true, "c2"), "/system.slice/corral-c2.scope");
  EXPECT_EQ(*CgroupfsPath("user.slice:x:y.slice", true, "y"), "/user.slice/y.slice");
  auto bad = CgroupfsPath("machine.slice:libpod", true, "c1");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("slice:prefix:name"), std::string::npos);
  EXPECT_FALSE(CgroupfsPath("bad--name.slice:p:n", true, "n").has_value());
}

TEST(RuncState, SignalsByNameOrNumber) {
  EXPECT_EQ(*ParseSignal("TERM"), SIGTERM);
  EXPECT_EQ(*ParseSignal("SIGKILL"), SIGKILL);
  EXPECT_EQ(*ParseSignal("9"), 9);
  EXPECT_FALSE(ParseSignal("SIGNOPE").has_value());
  EXPECT_FALSE(ParseSignal("0").has_value());
  EXPECT_FALSE(ParseSignal("999").has_value());
}

TEST(RuncState, StateJsonHasTheFieldsCallersParse) {
  ContainerRecord record;
  record.id = "c1";
  record.pid = 1234;
  record.bundle = "/b";
  record.rootfs = "/b/rootfs";
  record.created = "2026-12-08T00:00:00.000000000Z";
  auto doc = nlohmann::json::parse(StateJson(record, ContainerStatus::kRunning));
  EXPECT_EQ(doc["ociVersion"], "1.1.0");
  EXPECT_EQ(doc["id"], "c1");
  EXPECT_EQ(doc["pid"], 1234);
  EXPECT_EQ(doc["status"], "running");
  EXPECT_EQ(doc["bundle"], "/b");
  EXPECT_EQ(doc["rootfs"], "/b/rootfs");
  EXPECT_FALSE(doc.contains("annotations"));
  // A stopped container reports pid 0, as runc does.
  doc = nlohmann::json::parse(StateJson(record, ContainerStatus::kStopped));
  EXPECT_EQ(doc["pid"], 0);
  EXPECT_EQ(doc["status"], "stopped");
}

TEST(RuncState, AStatusComesFromTheProcessNotTheRecord) {
  ContainerRecord record;
  record.pid = ::getpid();
  record.pid_start_time = ProcessStartTime(::getpid());
  ASSERT_NE(record.pid_start_time, 0u);
  EXPECT_EQ(ReadStatus(record, nullptr), ContainerStatus::kCreated);
  record.started = true;
  EXPECT_EQ(ReadStatus(record, nullptr), ContainerStatus::kRunning);
  // The same pid with another start time is a recycled pid: the container is gone.
  record.pid_start_time += 1;
  EXPECT_EQ(ReadStatus(record, nullptr), ContainerStatus::kStopped);
}

}  // namespace
}  // namespace corral::runtime::oci
