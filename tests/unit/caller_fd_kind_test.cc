// ClassifyCallerFd (runtime/run/stdio.h): which of the caller's fds a jail may be given as
// they are, which are relayed raw (their /proc/self/fd link is a host path) and which are
// terminals (relayed through the filter).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"
#include "runtime/run/stdio.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

// An exec's output: pipes and sockets are relayed (what it leaves in the background must
// not hold them), the rest as for a run.
TEST(CallerFdKindTest, AnExecRelaysPipesAndSockets) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd r(p[0]), w(p[1]);
  EXPECT_EQ(ClassifyCallerFd(w.get(), /*relay_pipes=*/true), CallerFdKind::kHeldPipe);
  int s[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
  UniqueFd a(s[0]), b(s[1]);
  EXPECT_EQ(ClassifyCallerFd(a.get(), true), CallerFdKind::kHeldPipe);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  EXPECT_EQ(ClassifyCallerFd(null.get(), true), CallerFdKind::kGiven);
}

TEST(CallerFdKindTest, PipesSocketsAndMemDevicesAreGiven) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd r(p[0]), w(p[1]);
  EXPECT_EQ(ClassifyCallerFd(w.get()), CallerFdKind::kGiven);
  int s[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
  UniqueFd a(s[0]), b(s[1]);
  EXPECT_EQ(ClassifyCallerFd(a.get()), CallerFdKind::kGiven);
  UniqueFd event(::eventfd(0, EFD_CLOEXEC));
  EXPECT_EQ(ClassifyCallerFd(event.get()), CallerFdKind::kGiven);
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/full", "/dev/urandom"}) {
    UniqueFd fd(::open(dev, O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(fd) << dev;
    EXPECT_EQ(ClassifyCallerFd(fd.get()), CallerFdKind::kGiven) << dev;
  }
}

TEST(CallerFdKindTest, FilesDirectoriesFifosAndMemfdsAreHostPaths) {
  test::TempDir dir;
  UniqueFd file(::open(dir.Join("f").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_TRUE(file);
  EXPECT_EQ(ClassifyCallerFd(file.get()), CallerFdKind::kHostPath);
  UniqueFd d(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_EQ(ClassifyCallerFd(d.get()), CallerFdKind::kHostPath);
  ASSERT_EQ(::mkfifo(dir.Join("fifo").c_str(), 0600), 0);
  UniqueFd fifo(::open(dir.Join("fifo").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(fifo);
  EXPECT_EQ(ClassifyCallerFd(fifo.get()), CallerFdKind::kHostPath);
  UniqueFd mem(::memfd_create("x", MFD_CLOEXEC));
  EXPECT_EQ(ClassifyCallerFd(mem.get()), CallerFdKind::kHostPath);
}

TEST(CallerFdKindTest, APtyIsATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  UniqueFd m(master), s(slave);
  EXPECT_EQ(ClassifyCallerFd(s.get()), CallerFdKind::kTerminal);
}

}  // namespace
}  // namespace corral::runtime
