// runtime::RunJail() called in-process while the caller has other threads alive, as the
// daemon does and as every v1 run does (the cgroup attach warm-up thread). The jail child
// is a raw clone3 of a multithreaded process: a glibc call in it that coordinates with
// the threads glibc believes exist (setresuid's "setxid broadcast" did) waits forever.
// Root only; leak-checked.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "runtime/run/supervisor.h"
#include "tests/support/jail_test.h"

namespace corral::test {
namespace {

class ThreadedCallerTest : public JailTest {};

TEST_F(ThreadedCallerTest, RunJailWorksWhileAnotherThreadIsAlive) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread other([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  });
  runtime::JailSpec spec;
  spec.argv = {"/bin/sh", "-c", "id -u"};
  spec.limits.timeout_seconds = 20;  // a hung setup ends as timed_out, not a hung test
  runtime::RunOptions options;
  options.capture_output = true;
  auto outcome = runtime::RunJail(spec, options);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  other.join();
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->status, runtime::RunStatus::kExited)
      << runtime::RunStatusName(outcome->status) << " " << outcome->stderr_stream.text;
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_EQ(outcome->stdout_stream.text, "1000\n");
}

}  // namespace
}  // namespace corral::test
