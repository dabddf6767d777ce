// The pool server's socket path: a client that finds the file is never refused by a server
// still starting, a stale socket is replaced, a live one or a file that is not a socket is
// not, and nothing but the socket is left in the directory.
#include "runtime/pool/pool_socket.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/files.h"
#include "tests/support/temp_dir.h"

namespace corral::runtime {
namespace {

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

TEST(PoolSocket, AClientThatSeesTheFileIsNeverRefused) {
  test::TempDir dir;
  const std::string path = dir.Join("pool.sock");
  // A prober spinning on the path connects the moment the file appears; had the file
  // appeared at bind() rather than after listen(), some of these would be refused.
  int refused = 0;
  for (int round = 0; round < 2000; ++round) {
    std::atomic<bool> saw_file{false};
    std::atomic<bool> connected{false};
    std::atomic<bool> give_up{false};
    std::thread prober([&] {
      struct stat st {};
      while (::lstat(path.c_str(), &st) != 0) {
        if (give_up) return;
      }
      saw_file = true;
      auto connection = ConnectToPoolSocket(path);
      connected = connection && connection->has_value();
    });
    auto listener = ListenOnPoolSocket(path);
    give_up = !listener;
    prober.join();
    ASSERT_TRUE(listener) << listener.error().message();
    ASSERT_TRUE(saw_file);
    if (!connected) ++refused;
    ASSERT_EQ(::unlink(path.c_str()), 0);
  }
  EXPECT_EQ(refused, 0);
}

TEST(PoolSocket, TheSocketIsPrivateAndAloneInItsDirectory) {
  test::TempDir dir;
  const std::string path = dir.Join("pool.sock");
  auto listener = ListenOnPoolSocket(path);
  ASSERT_TRUE(listener) << listener.error().message();
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"pool.sock"});
}

TEST(PoolSocket, ALiveServerKeepsItsPathAStaleSocketIsReplaced) {
  test::TempDir dir;
  const std::string path = dir.Join("pool.sock");
  auto first = ListenOnPoolSocket(path);
  ASSERT_TRUE(first) << first.error().message();
  auto second = ListenOnPoolSocket(path);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("already serves"), std::string::npos)
      << second.error().message();

  first->Reset();  // its server is gone; the file stays behind
  auto third = ListenOnPoolSocket(path);
  ASSERT_TRUE(third) << third.error().message();
  auto connection = ConnectToPoolSocket(path);
  ASSERT_TRUE(connection) << connection.error().message();
  EXPECT_TRUE(connection->has_value());
}

TEST(PoolSocket, AFileThatIsNotASocketIsNotReplaced) {
  test::TempDir dir;
  ASSERT_TRUE(dir.WriteFile("pool.sock", "precious"));
  auto listener = ListenOnPoolSocket(dir.Join("pool.sock"));
  ASSERT_FALSE(listener);
  EXPECT_NE(listener.error().message().find("is not a socket"), std::string::npos)
      << listener.error().message();
  auto content = ReadFile(dir.Join("pool.sock"));
  ASSERT_TRUE(content);
  EXPECT_EQ(*content, "precious");
}

TEST(PoolSocket, APathTooLongIsRefusedNamingTheLimit) {
  auto listener = ListenOnPoolSocket("/tmp/" + std::string(200, 'x'));
  ASSERT_FALSE(listener);
  EXPECT_NE(listener.error().message().find("must be 1-107 bytes"), std::string::npos)
      << listener.error().message();
}

TEST(PoolSocket, NobodyAtAPathIsNoServerNotAnError) {
  test::TempDir dir;
  auto connection = ConnectToPoolSocket(dir.Join("absent.sock"));
  ASSERT_TRUE(connection) << connection.error().message();
  EXPECT_FALSE(connection->has_value());
}

}  // namespace
}  // namespace corral::runtime
