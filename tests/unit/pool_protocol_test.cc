// The pool server's wire protocol: frames (with and without fds, split across reads,
// cut short, oversized) and the RunOutcome wire form, which must carry every field,
// binary output included, and reject what is not an outcome.
#include "runtime/pool/pool_protocol.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

namespace corral::runtime {
namespace {

struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a.Reset(fds[0]);
    b.Reset(fds[1]);
  }
  UniqueFd a, b;
};

TEST(PoolFrames, CarryTheBodyAndTheDescriptors) {
  SocketPair s;
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(SendFrame(s.a.get(), R"({"op":"run"})", {null.get(), 1, 2}));
  std::vector<UniqueFd> fds;
  auto body = ReceiveFrame(s.b.get(), &fds);
  ASSERT_TRUE(body) << body.error().message();
  EXPECT_EQ(*body, R"({"op":"run"})");
  ASSERT_EQ(fds.size(), 3u);
  struct stat a {
  }, b{};
  ASSERT_EQ(::fstat(fds[0].get(), &a), 0);
  ASSERT_EQ(::fstat(null.get(), &b), 0);
  EXPECT_EQ(a.st_rdev, b.st_rdev);  // the same file, received as a new descriptor
  EXPECT_EQ(::fcntl(fds[0].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(PoolFrames, ALargeFrameArrivesWhole) {
  SocketPair s;
  std::string big(8 * 1024 * 1024, 'x');  // far more than a socket buffer
  std::thread sender([&] { EXPECT_TRUE(SendFrame(s.a.get(), big)); });
  auto body = ReceiveFrame(s.b.get());
  sender.join();
  ASSERT_TRUE(body) << body.error().message();
  EXPECT_EQ(body->size(), big.size());
  EXPECT_EQ(*body, big);
}

TEST(PoolFrames, EofCutShortAndOversizedAreErrors) {
  {
    SocketPair s;
    s.a.Reset();
    auto body = ReceiveFrame(s.b.get());
    ASSERT_FALSE(body);
    EXPECT_EQ(body.error().code(), ErrorCode::kNotFound);
  }
  {
    SocketPair s;
    const unsigned char header[4] = {10, 0, 0, 0};  // promises 10 bytes, sends 3
    ASSERT_EQ(::send(s.a.get(), header, 4, 0), 4);
    ASSERT_EQ(::send(s.a.get(), "abc", 3, 0), 3);
    s.a.Reset();
    auto body = ReceiveFrame(s.b.get());
    ASSERT_FALSE(body);
    EXPECT_EQ(body.error().code(), ErrorCode::kIo);
  }
  {
    SocketPair s;
    const unsigned char header[4] = {0xff, 0xff, 0xff, 0xff};
    ASSERT_EQ(::send(s.a.get(), header, 4, 0), 4);
    auto body = ReceiveFrame(s.b.get());
    ASSERT_FALSE(body);
    EXPECT_NE(body.error().message().find("too large"), std::string::npos);
  }
}

RunOutcome FullOutcome() {
  RunOutcome o;
  o.status = RunStatus::kOomKilled;
  o.exit_code = 0;
  o.signal = 9;
  o.limit = LimitKind::kMemory;
  o.wall_ms = 12.5;
  o.cpu_user_ms = 1.25;
  o.cpu_system_ms = 2.5;
  o.memory_peak_bytes = 64 << 20;
  o.pids_peak = std::nullopt;
  o.captured = true;
  o.stdout_stream = {"out\n", 4, 0};
  o.stderr_stream = {"err", 10, 7};
  o.interrupted_by = 2;
  o.pooled = true;
  o.warnings = {"w1", "w2"};
  o.network_json =
      R"({"mode":"allowlist","denied":[{"host":"evil.test","port":443}],"sandbox":"pool-1-2"})";
  return o;
}

TEST(PoolOutcomeWire, RoundTripsEveryField) {
  RunOutcome in = FullOutcome();
  in.setup_error = jail::SetupFailure{jail::SetupStep::kExecve, 2, "execve /no/such"};
  auto out = OutcomeFromWire(OutcomeToWire(in));
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->status, in.status);
  EXPECT_EQ(out->signal, in.signal);
  EXPECT_EQ(out->limit, in.limit);
  EXPECT_DOUBLE_EQ(out->wall_ms, in.wall_ms);
  EXPECT_DOUBLE_EQ(out->cpu_user_ms, in.cpu_user_ms);
  EXPECT_DOUBLE_EQ(out->cpu_system_ms, in.cpu_system_ms);
  EXPECT_EQ(out->memory_peak_bytes, in.memory_peak_bytes);
  EXPECT_EQ(out->pids_peak, in.pids_peak);
  EXPECT_TRUE(out->captured);
  EXPECT_EQ(out->stdout_stream.text, "out\n");
  EXPECT_EQ(out->stderr_stream.bytes, 10);
  EXPECT_EQ(out->stderr_stream.dropped_bytes, 7);
  EXPECT_EQ(out->interrupted_by, 2);
  EXPECT_TRUE(out->pooled);
  EXPECT_EQ(out->warnings, in.warnings);
  EXPECT_EQ(out->network_json, in.network_json);  // an allow-list run's `network`
  ASSERT_TRUE(out->setup_error);
  EXPECT_EQ(out->setup_error->step, jail::SetupStep::kExecve);
  EXPECT_EQ(out->setup_error->err, 2);
  EXPECT_EQ(out->setup_error->message, "execve /no/such");
  EXPECT_EQ(OutcomeToJson(*out), OutcomeToJson(in));  // what the user sees is the same
}

TEST(PoolOutcomeWire, BinaryOutputSurvivesByteForByte) {
  RunOutcome in = FullOutcome();
  in.stdout_stream.text = std::string("\xff\xfe\0bin\x80", 7);
  auto out = OutcomeFromWire(OutcomeToWire(in));
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->stdout_stream.text, in.stdout_stream.text);
  EXPECT_EQ(out->stderr_stream.text, "err");
}

TEST(PoolOutcomeWire, RejectsWhatIsNotAnOutcome) {
  EXPECT_FALSE(OutcomeFromWire("not json"));
  EXPECT_FALSE(OutcomeFromWire(R"({"status":0})"));
  std::string wire = OutcomeToWire(FullOutcome());
  std::string bad_status = wire;
  bad_status.replace(bad_status.find(R"("status":3)"), 10, R"("status":9)");
  EXPECT_FALSE(OutcomeFromWire(bad_status));
}

}  // namespace
}  // namespace corral::runtime
