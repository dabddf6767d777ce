// jail/command: the message that hands a prepared jail its command.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "jail/command.h"

namespace corral::jail {
namespace {

struct Pair {
  Pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd), 0); }
  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  int fd[2];
};

// Encodes `c`, sends it with one /dev/null fd (*sent_fd, still open, the caller's to close)
// as stdin, stdout and stderr, and receives it into *view; the received fds go to fds[0..2].
void RoundTrip(const Pair& p, const DeferredCommand& c, CommandView* view, int fds[3],
               int* sent_fd) {
  auto encoded = EncodeCommand(c);
  ASSERT_TRUE(encoded) << encoded.error().message();
  *sent_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ASSERT_GE(*sent_fd, 0);
  ASSERT_TRUE(SendCommand(p.fd[0], *encoded, *sent_fd, *sent_fd, *sent_fd));
  ASSERT_TRUE(ReceiveCommand(p.fd[1], view, fds));
}

TEST(DeferredCommand, RoundTripsArgvEnvPathWorkdirAndFds) {
  DeferredCommand c;
  c.argv = {"sh", "-c", "echo 'a b'", ""};
  c.envp = {"PATH=/usr/bin:/bin", "X="};
  c.path_dirs = {"/usr/bin", "/bin"};
  c.workdir = "/mnt/user-data/workspace";
  Pair p;
  CommandView view;
  int fds[3] = {-1, -1, -1};
  int null_fd = -1;
  ASSERT_NO_FATAL_FAILURE(RoundTrip(p, c, &view, fds, &null_fd));
  for (int fd : fds) {
    EXPECT_GE(fd, 0);
    EXPECT_NE(fd, null_fd) << "a received fd is a new descriptor";
    EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ::close(fd);
  }
  ::close(null_fd);
  ASSERT_NE(view.argv, nullptr);
  EXPECT_STREQ(view.argv[0], "sh");
  EXPECT_STREQ(view.argv[2], "echo 'a b'");
  EXPECT_STREQ(view.argv[3], "");
  EXPECT_EQ(view.argv[4], nullptr);
  EXPECT_STREQ(view.envp[1], "X=");
  EXPECT_EQ(view.envp[2], nullptr);
  EXPECT_STREQ(view.path_dirs[1], "/bin");
  EXPECT_EQ(view.path_dirs[2], nullptr);
  EXPECT_STREQ(view.workdir, "/mnt/user-data/workspace");
}

TEST(DeferredCommand, CarriesTheInitsHoldAfterReportFlag) {
  for (bool hold : {false, true}) {
    DeferredCommand c;
    c.argv = {"true"};
    c.hold_after_report = hold;
    Pair p;
    CommandView view;
    int fds[3] = {-1, -1, -1};
    int null_fd = -1;
    ASSERT_NO_FATAL_FAILURE(RoundTrip(p, c, &view, fds, &null_fd));
    for (int fd : fds) ::close(fd);
    ::close(null_fd);
    EXPECT_EQ(view.hold_after_report, hold);
  }
}

TEST(DeferredCommand, RefusesWhatDoesNotFit) {
  DeferredCommand empty;
  EXPECT_FALSE(EncodeCommand(empty));
  DeferredCommand big;
  big.argv = {"sh", std::string(kMaxDeferredCommandBytes, 'x')};
  auto r = EncodeCommand(big);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("larger than"), std::string::npos);
  DeferredCommand many;
  many.argv.assign(kMaxDeferredStrings + 1, "a");
  EXPECT_FALSE(EncodeCommand(many));
}

TEST(DeferredCommand, ReceiverRejectsGarbageAndEof) {
  CommandView view;
  int fds[3];
  {
    Pair p;
    ::close(p.fd[0]);
    p.fd[0] = -1;
    EXPECT_FALSE(ReceiveCommand(p.fd[1], &view, fds)) << "EOF: the parent gave the jail up";
  }
  {
    Pair p;
    const char junk[] = "not a command message at all";
    ASSERT_GT(::send(p.fd[0], junk, sizeof junk, 0), 0);
    EXPECT_FALSE(ReceiveCommand(p.fd[1], &view, fds)) << "no fds, wrong magic";
  }
}

}  // namespace
}  // namespace corral::jail
