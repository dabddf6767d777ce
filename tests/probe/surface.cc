// `read-paths`, `try-sockets`: what of the kernel's surface the jail reaches. read-paths
// reads files and lists directories it is given (the /proc masks); try-sockets creates one
// socket of each family and netlink protocol in a fixed list (the seccomp socket rules).
// Neither changes anything: reads only, and every socket is closed at once.
#include <dirent.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {
namespace {

// {"kind":"file","read":"ok","bytes":N} for a file ("chardev" with "rdev":"1:3" for a device),
// {"kind":"dir","read":"ok","entries":N} for a directory (without . and ..), and
// {"kind":"missing","read":"ENOENT"} when lstat fails.
void DescribePath(const std::string& path, JsonWriter& j) {
  j.Key(path).BeginObject();
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    j.Field("kind", "missing").Field("read", ErrnoName(errno)).EndObject();
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    j.Field("kind", "dir");
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) {
      j.Field("read", ErrnoName(errno)).EndObject();
      return;
    }
    long long entries = 0;
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") ++entries;
    }
    closedir(dir);
    j.Field("read", "ok").Field("entries", entries).EndObject();
    return;
  }
  if (S_ISCHR(st.st_mode)) {
    // A masked /proc file is the host's /dev/null mounted over it: "1:3".
    j.Field("kind", "chardev")
        .Field("rdev", std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)));
  } else {
    j.Field("kind", S_ISLNK(st.st_mode) ? "symlink" : "file");
  }
  std::string content;
  int err = ReadWholeFile(path, &content);
  j.Field("read", err == 0 ? std::string("ok") : ErrnoName(err));
  if (err == 0) j.Field("bytes", static_cast<long long>(content.size()));
  j.EndObject();
}

struct SocketAttempt {
  const char* name;
  uint64_t family;
  uint64_t type;
  uint64_t protocol;  // 64 bits: the raw syscall passes every bit to the filter
};

// Linux numbers (<linux/socket.h>, <linux/netlink.h>), spelled out so that the list does not
// depend on which of them this libc's headers define.
constexpr uint64_t kNetlink = 16;
constexpr SocketAttempt kSockets[] = {
    {"unix_stream", 1, SOCK_STREAM, 0},
    {"inet_tcp", 2, SOCK_STREAM, 0},
    {"inet_udp", 2, SOCK_DGRAM, 0},
    {"inet6_tcp", 10, SOCK_STREAM, 0},
    {"inet_raw_icmp", 2, SOCK_RAW, 1},  // needs CAP_NET_RAW
    {"netlink_route", kNetlink, SOCK_RAW, 0},
    {"netlink_route_dgram", kNetlink, SOCK_DGRAM, 0},
    {"netlink_route_high_bits", kNetlink, SOCK_RAW, 1ULL << 32},  // the kernel reads int 0
    {"netlink_usersock", kNetlink, SOCK_RAW, 2},
    {"netlink_sock_diag", kNetlink, SOCK_RAW, 4},
    {"netlink_nflog", kNetlink, SOCK_RAW, 5},
    {"netlink_xfrm", kNetlink, SOCK_RAW, 6},
    {"netlink_selinux", kNetlink, SOCK_RAW, 7},
    {"netlink_iscsi", kNetlink, SOCK_RAW, 8},
    {"netlink_audit", kNetlink, SOCK_RAW, 9},
    {"netlink_fib_lookup", kNetlink, SOCK_RAW, 10},
    {"netlink_connector", kNetlink, SOCK_DGRAM, 11},
    {"netlink_netfilter", kNetlink, SOCK_RAW, 12},
    {"netlink_kobject_uevent", kNetlink, SOCK_DGRAM, 15},
    {"netlink_generic", kNetlink, SOCK_RAW, 16},
    {"netlink_scsitransport", kNetlink, SOCK_RAW, 18},
    {"netlink_rdma", kNetlink, SOCK_RAW, 20},
    {"netlink_crypto", kNetlink, SOCK_RAW, 21},
    {"netlink_smc", kNetlink, SOCK_RAW, 22},
    {"ax25", 3, SOCK_SEQPACKET, 0},
    {"ipx", 4, SOCK_DGRAM, 0},
    {"appletalk", 5, SOCK_DGRAM, 0},
    {"x25", 9, SOCK_SEQPACKET, 0},
    {"key", 15, SOCK_RAW, 2},  // PF_KEY_V2
    {"packet", 17, SOCK_RAW, 0},
    {"packet_dgram", 17, SOCK_DGRAM, 0},
    {"rds", 21, SOCK_SEQPACKET, 0},
    {"pppox", 24, SOCK_STREAM, 0},
    {"llc", 26, SOCK_DGRAM, 0},
    {"can", 29, SOCK_RAW, 1},
    {"tipc", 30, SOCK_RDM, 0},
    {"bluetooth", 31, SOCK_RAW, 0},
    {"rxrpc", 33, SOCK_DGRAM, 2},
    {"ieee802154", 36, SOCK_RAW, 0},
    {"alg", 38, SOCK_SEQPACKET, 0},
    {"nfc", 39, SOCK_SEQPACKET, 0},
    {"vsock", 40, SOCK_STREAM, 0},
    {"kcm", 41, SOCK_DGRAM, 0},
    {"qipcrtr", 42, SOCK_DGRAM, 0},
    {"smc", 43, SOCK_STREAM, 0},
    {"xdp", 44, SOCK_RAW, 0},
    {"mctp", 45, SOCK_DGRAM, 0},
};

}  // namespace

int CmdReadPaths(const Args& args) {
  if (args.empty()) return UsageError("read-paths takes one or more paths");
  JsonWriter j;
  j.BeginObject().Field("command", "read-paths").Key("results").BeginObject();
  for (const std::string& path : args) DescribePath(path, j);
  j.EndObject().EndObject();
  return PrintJson(j) ? 0 : 1;
}

int CmdTrySockets(const Args& args) {
  if (!args.empty()) return UsageError("try-sockets takes no arguments");
  JsonWriter j;
  j.BeginObject().Field("command", "try-sockets").Key("results").BeginObject();
  for (const SocketAttempt& s : kSockets) {
    long fd = syscall(SYS_socket, s.family, s.type | SOCK_CLOEXEC, s.protocol);
    j.Field(s.name, fd < 0 ? ErrnoName(errno) : std::string("ok"));
    if (fd >= 0) close(static_cast<int>(fd));
  }
  j.EndObject().EndObject();
  return PrintJson(j) ? 0 : 1;
}

}  // namespace corral::probe
