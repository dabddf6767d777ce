// Exec slots kept ready (runtime/pool/exec_slot_keeper.h) and the AIO shell sessions
// that start in them (`corral serve`'s server.session_slots), against a real persistent
// sandbox: a session started in a slot is the session a cold start gives, a slot is one
// process of its sandbox until it is used or dropped, and nothing is left behind.
#include "runtime/pool/exec_slot_keeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "runtime/sandboxes/persistent.h"
#include "tests/support/aio_api_fixture.h"

namespace corral::test {
namespace {

class SessionSlotTest : public AioApiTest {
 protected:
  void SetUp() override {
    AioApiTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    UseKeeper({.max_slots = 4, .slot = {.child_subreaper = true, .late_hardening = true}});
  }
  void TearDown() override {
    api_.reset();  // the sessions first: their shells may have started in the keeper's slots
    keeper_.reset();
    AioApiTest::TearDown();
  }

  void UseKeeper(runtime::ExecSlotKeeperOptions options) {
    api_.reset();
    keeper_ = std::make_unique<runtime::ExecSlotKeeper>(options);
    server::AioApiOptions aio;
    aio.session_slots = keeper_.get();
    api_ = std::make_unique<server::AioApi>(aio);
  }

  // Processes in the sandbox (its init included), from its cgroup.
  size_t Processes(const std::string& name) {
    auto info = runtime::InspectSandbox(name);
    EXPECT_TRUE(info) << info.error().message();
    return info ? info->processes : 0;
  }

  // shell/exec in a new named session (sessions/create, then the call).
  std::string InNewSession(const std::string& id, const std::string& command) {
    AioAnswer c = Post("v1/shell/sessions/create", {{"id", id}});
    EXPECT_EQ(c.status, 200) << c.raw;
    return Shell(command, id);
  }

  std::unique_ptr<runtime::ExecSlotKeeper> keeper_;
};

constexpr const char* kHardening =
    "grep -E '^(Uid|Gid|CapPrm|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/$$/status; "
    "touch /etc/corral-x 2>&1 | sed 's/.*: //'; cat /proc/$$/attr/current 2>/dev/null; true";

TEST_F(SessionSlotTest, ASessionStartedInASlotIsTheSessionAColdStartGives) {
  // Cold: no slot asked for yet.
  const std::string cold = InNewSession("cold", kHardening);
  ASSERT_EQ(keeper_->counts().taken, 0u);
  keeper_->Request(name_);
  keeper_->WaitIdle();
  ASSERT_EQ(keeper_->counts().ready, 1u);
  const std::string slotted = InNewSession("slotted", kHardening);
  EXPECT_EQ(keeper_->counts().taken, 1u);
  EXPECT_EQ(slotted, cold);
  EXPECT_NE(slotted.find("Seccomp:\t2"), std::string::npos) << slotted;
  EXPECT_NE(slotted.find("Read-only file system"), std::string::npos) << slotted;
  // The session holds its shell's state, and the user-data directory is writable (its
  // Landlock rules were made when the shell started).
  EXPECT_EQ(Shell("cd /mnt/user-data/workspace && export X=42 && echo hi > f.txt", "slotted"), "");
  EXPECT_EQ(Shell("pwd; echo $X; cat f.txt", "slotted"), "/mnt/user-data/workspace\n42\nhi\n");
  // A session asks for no slot of its own (only the warm pool does): none is waiting.
  keeper_->WaitIdle();
  EXPECT_EQ(keeper_->counts().ready, 0u);
  EXPECT_EQ(keeper_->counts().prepared, 1u);
}

TEST_F(SessionSlotTest, AWaitingSlotIsOneProcessOfTheSandboxUntilDropped) {
  const size_t before = Processes(name_);
  keeper_->Request(name_);
  keeper_->WaitIdle();
  ASSERT_EQ(keeper_->counts().prepared, 1u);
  EXPECT_EQ(Processes(name_), before + 1);
  keeper_->Drop(name_);
  EXPECT_EQ(keeper_->counts().ready, 0u);
  EXPECT_EQ(Processes(name_), before);
  EXPECT_EQ(keeper_->Take(name_), nullptr);
}

TEST_F(SessionSlotTest, TheKeeperGoesWithItsSlots) {
  const size_t before = Processes(name_);
  keeper_->Request(name_);
  keeper_->WaitIdle();
  EXPECT_EQ(Processes(name_), before + 1);
  api_.reset();
  keeper_.reset();
  EXPECT_EQ(Processes(name_), before);
}

TEST_F(SessionSlotTest, BeyondMaxSlotsTheOldestIsEvicted) {
  UseKeeper({.max_slots = 1, .slot = {.child_subreaper = true, .late_hardening = true}});
  runtime::CreateRequest req;
  req.name = name_ + "-b";
  req.spec.user_data_dir = dir_.Join("user-data");
  ASSERT_TRUE(runtime::CreateSandbox(req));
  keeper_->Request(name_);
  keeper_->WaitIdle();
  keeper_->Request(req.name);
  keeper_->WaitIdle();
  auto c = keeper_->counts();
  EXPECT_EQ(c.prepared, 2u);
  EXPECT_EQ(c.evicted, 1u);
  EXPECT_EQ(c.ready, 1u);
  EXPECT_EQ(keeper_->Take(name_), nullptr);
  EXPECT_NE(keeper_->Take(req.name), nullptr);
  EXPECT_TRUE(runtime::RemoveSandbox(req.name));
}

TEST_F(SessionSlotTest, ASlotOfAnotherKindIsNotUsedAndTheSessionStartsCold) {
  // Slots whose command is no child subreaper: a session's shell must not run in one (its
  // timeouts find what a command orphans through it), so it starts the normal way.
  UseKeeper({.max_slots = 4, .slot = {.child_subreaper = false, .late_hardening = true}});
  keeper_->Request(name_);
  keeper_->WaitIdle();
  ASSERT_EQ(keeper_->counts().ready, 1u);
  EXPECT_EQ(InNewSession("s", "echo ok"), "ok\n");
  EXPECT_EQ(keeper_->counts().taken, 1u);
  EXPECT_EQ(Shell("echo $$ > /tmp/shell.pid; echo again", "s"), "again\n");
}

// A slot taken just before its sandbox goes is refused at the exec.
TEST_F(SessionSlotTest, ASlotOfARemovedSandboxIsNeverUsed) {
  keeper_->Request(name_);
  keeper_->WaitIdle();
  ASSERT_EQ(keeper_->counts().ready, 1u);
  auto slot = keeper_->Take(name_);
  ASSERT_NE(slot, nullptr);
  ASSERT_TRUE(runtime::RemoveSandbox(name_));
  created_ = false;
  runtime::ExecRequest req;
  req.sandbox = name_;
  req.argv = {"/bin/true"};
  req.child_subreaper = true;
  std::string unusable;
  auto outcome = runtime::ExecInSlot(std::move(slot), req, &unusable);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_FALSE(outcome->has_value());
  EXPECT_FALSE(unusable.empty());
}

// A slot still waiting in the keeper when its sandbox is removed from outside (as `corral
// rm` does) leaves the keeper by itself: reaped, not kept until the next request.
TEST_F(SessionSlotTest, ASlotOfASandboxRemovedFromOutsideIsReapedAtOnce) {
  keeper_->Request(name_);
  keeper_->WaitIdle();
  ASSERT_EQ(keeper_->counts().ready, 1u);
  ASSERT_TRUE(runtime::RemoveSandbox(name_));
  created_ = false;
  for (int i = 0; i < 100 && keeper_->counts().ready != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(keeper_->counts().ready, 0u) << "the dead slot is still held";
  EXPECT_EQ(keeper_->Take(name_), nullptr);
}

}  // namespace
}  // namespace corral::test
