// Many sandboxes at once: 500 brought up side by side and removed again leave nothing
// behind (no process, mount, cgroup, store record or claim entry: the fixture's leak check
// and the store), and removing one of them touches only that one. Root only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "tests/support/corral_paths.h"
#include "tests/support/jail_test.h"

namespace corral::test {
namespace {

constexpr int kSandboxes = 500;
constexpr int kWorkers = 8;

class SandboxScaleTest : public JailTest {
 protected:
  void TearDown() override {
    std::vector<std::string> left = {"rm", "-f"};
    for (int i = 0; i < kSandboxes; ++i) left.push_back(Name(i));
    (void)RunCorral(left);
  }

  std::string Name(int i) const {
    return "scale-" + std::to_string(::getpid()) + "-" + std::to_string(i);
  }

  static std::vector<std::string> StoreEntries(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename();
      if (name.rfind(prefix, 0) == 0) out.push_back(name);
    }
    return out;
  }
};

TEST_F(SandboxScaleTest, FiveHundredUpAndDownLeaveNothingAndOneRemovalTouchesOnlyItsOwn) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  {
    std::vector<std::jthread> workers;
    for (int w = 0; w < kWorkers; ++w) {
      workers.emplace_back([&] {
        for (int i; (i = next.fetch_add(1)) < kSandboxes;) {
          auto r = RunCorral({"create", "--name", Name(i)});
          if (!r || r->exit_code != 0) {
            std::lock_guard<std::mutex> lock(mu);
            failures.push_back(r ? r->Describe() : r.error().message());
          }
        }
      });
    }
  }
  ASSERT_TRUE(failures.empty()) << failures.size() << " creates failed; first: " << failures[0];

  // One removed: the other 499 run on, each with its init and its cgroup.
  const std::string victim = Name(17);
  auto before = runtime::InspectSandbox(Name(18));
  ASSERT_TRUE(before);
  auto rm = RunCorral({"rm", victim});
  ASSERT_TRUE(rm && rm->exit_code == 0) << (rm ? rm->Describe() : rm.error().message());
  EXPECT_FALSE(runtime::InspectSandbox(victim));
  for (int i = 0; i < kSandboxes; ++i) {
    if (i == 17) continue;
    auto info = runtime::InspectSandbox(Name(i));
    ASSERT_TRUE(info) << Name(i) << ": " << info.error().message();
    EXPECT_TRUE(info->alive) << Name(i);
    EXPECT_TRUE(info->stats.has_value()) << Name(i) << ": its cgroup is there";
  }
  auto after = runtime::InspectSandbox(Name(18));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->record.init_pid, before->record.init_pid);
  EXPECT_EQ(after->record.init_start_ticks, before->record.init_start_ticks);

  // The rest in one `corral rm` (side by side), reported in the order given.
  std::vector<std::string> rest = {"rm"};
  for (int i = 0; i < kSandboxes; ++i) {
    if (i != 17) rest.push_back(Name(i));
  }
  auto all = RunCorral(rest);
  ASSERT_TRUE(all) << all.error().message();
  EXPECT_EQ(all->exit_code, 0) << all->Describe();
  std::string expected;
  for (size_t i = 1; i < rest.size(); ++i) expected += rest[i] + "\n";
  EXPECT_EQ(all->out, expected);

  auto store = runtime::SandboxStore::Open();
  ASSERT_TRUE(store);
  const std::string prefix = "scale-" + std::to_string(::getpid()) + "-";
  EXPECT_EQ(StoreEntries(store->root() + "/sandboxes", prefix), std::vector<std::string>{});
  EXPECT_EQ(StoreEntries(store->root() + "/claims", prefix), std::vector<std::string>{});
  // The fixture's leak check: no process, mount or cgroup of theirs is left.
}

}  // namespace
}  // namespace corral::test
