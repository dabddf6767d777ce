// What the compiled built-in profiles decide, syscall by syscall. The compiled program is
// run in a small classic-BPF interpreter against made-up seccomp_data, so every number and
// argument pattern can be checked without installing anything.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "jail/enter.h"
#include "jail/seccomp.h"
#include "jail/seccomp_eval.h"

namespace corral::jail {
namespace {

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKillProcess = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t Errno(int e) { return SECCOMP_RET_ERRNO | static_cast<uint32_t>(e); }

using Args = std::array<uint64_t, 6>;

// Evaluates `program` for one syscall as the kernel would (jail/seccomp_eval.h); fails
// the test on an instruction the evaluator does not know.
uint32_t Eval(const SeccompProgram& program, int nr, Args args = {},
              uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data data{};
  data.nr = nr;
  data.arch = arch;
  for (size_t i = 0; i < args.size(); ++i) data.args[i] = args[i];
  std::optional<uint32_t> action = RunSeccompFilter(program, data);
  if (!action) {
    ADD_FAILURE() << "the program could not be evaluated for syscall " << nr;
    return 0;
  }
  return *action;
}

const SeccompProgram& CompiledProfile(const std::string& name) {
  static auto* cache = new std::map<std::string, SeccompProgram>;
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  auto text = BuiltinSeccompProfileText(name);
  EXPECT_TRUE(text) << text.error().message();
  auto program = CompileSeccompProfile(text ? *text : "", name);
  EXPECT_TRUE(program) << program.error().message();
  return cache->emplace(name, program ? *program : SeccompProgram{}).first->second;
}

// x86_64 numbers the kernel headers of older build hosts may lack.
constexpr int kProcessMadvise = 440;
constexpr int kMountSetattr = 442;
constexpr int kQuotactlFd = 443;
constexpr int kFutexWaitv = 449;

// What an agent's command must never reach, in every profile but unconfined: namespaces,
// mounts, tracing other processes, kernel interfaces with a history of exploits, host-wide
// settings (clock, swap, modules, reboot, hostname).
constexpr int kForbidden[] = {
    SYS_unshare,
    SYS_setns,
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_chroot,
    SYS_ptrace,
    SYS_process_vm_readv,
    SYS_process_vm_writev,
    SYS_bpf,
    SYS_keyctl,
    SYS_add_key,
    SYS_request_key,
    SYS_perf_event_open,
    SYS_io_uring_setup,
    SYS_io_uring_enter,
    SYS_io_uring_register,
    SYS_userfaultfd,
    SYS_kexec_load,
    SYS_kexec_file_load,
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
    SYS_swapon,
    SYS_swapoff,
    SYS_reboot,
    SYS_acct,
    SYS_settimeofday,
    SYS_clock_settime,
    SYS_adjtimex,
    SYS_clock_adjtime,
    SYS_quotactl,
    SYS_lookup_dcookie,
    SYS_fsopen,
    SYS_fsmount,
    SYS_fsconfig,
    SYS_fspick,
    SYS_move_mount,
    SYS_open_tree,
    kMountSetattr,
    kQuotactlFd,
    SYS_iopl,
    SYS_ioperm,
    SYS_vhangup,
    SYS_syslog,
    SYS_kcmp,
    SYS_pidfd_getfd,
    SYS_modify_ldt,
    SYS_sethostname,
    SYS_setdomainname,
    SYS_fanotify_init,
    SYS_fanotify_mark,
    SYS_remap_file_pages,
    kProcessMadvise,
    SYS_move_pages,
    SYS_migrate_pages,
    SYS_mbind,
    SYS_set_mempolicy,
    SYS_uselib,
    SYS__sysctl,
};

// A few argument vectors: zeros, all ones, and something in between.
constexpr Args kArgPatterns[] = {
    {0, 0, 0, 0, 0, 0},
    {~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL},
    {1, 0x5401, 2, 0x10000000, 0xffffffff00000000ULL, 7},
};

class BuiltinProfiles : public ::testing::TestWithParam<const char*> {};

TEST_P(BuiltinProfiles, RefuseWhatAgentsMustNotDo) {
  const SeccompProgram& program = CompiledProfile(GetParam());
  for (int nr : kForbidden) {
    for (const Args& args : kArgPatterns) {
      EXPECT_EQ(Eval(program, nr, args), Errno(EPERM)) << GetParam() << ": syscall " << nr;
    }
  }
}

TEST_P(BuiltinProfiles, KillOtherAbis) {
  const SeccompProgram& program = CompiledProfile(GetParam());
  EXPECT_EQ(Eval(program, 20, {}, AUDIT_ARCH_I386), kKillProcess);  // int 0x80 getpid
  EXPECT_EQ(Eval(program, 0x40000000 | SYS_getpid), kKillProcess);  // x32
  EXPECT_EQ(Eval(program, 0x40000000 | SYS_read), kKillProcess);
  EXPECT_EQ(Eval(program, SYS_read, {}, AUDIT_ARCH_AARCH64), kKillProcess);
  EXPECT_EQ(Eval(program, 1000), Errno(EPERM));  // a number no kernel has yet
}

TEST_P(BuiltinProfiles, CloneOnlyWithoutNamespaces) {
  const SeccompProgram& program = CompiledProfile(GetParam());
  EXPECT_EQ(Eval(program, SYS_clone, {SIGCHLD}), kAllow);
  const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                          CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  EXPECT_EQ(Eval(program, SYS_clone, {thread}), kAllow);
  EXPECT_EQ(Eval(program, SYS_clone, {CLONE_VM | CLONE_VFORK | SIGCHLD}), kAllow);
  for (uint64_t ns : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                      CLONE_NEWPID, CLONE_NEWNET}) {
    EXPECT_EQ(Eval(program, SYS_clone, {ns | SIGCHLD}), Errno(EPERM)) << std::hex << ns;
    EXPECT_EQ(Eval(program, SYS_clone, {(1ULL << 40) | ns}), Errno(EPERM)) << std::hex << ns;
  }
  EXPECT_EQ(Eval(program, SYS_clone3), Errno(ENOSYS));
  EXPECT_EQ(Eval(program, SYS_fork), kAllow);
  EXPECT_EQ(Eval(program, SYS_vfork), kAllow);
  EXPECT_EQ(Eval(program, SYS_execve), kAllow);
}

// The kernel reads an ioctl command as 32 bits, so the denial compares the low 32 bits.
TEST_P(BuiltinProfiles, IoctlAllowedButNotTerminalInjection) {
  const SeccompProgram& program = CompiledProfile(GetParam());
  for (uint64_t cmd : {0x5401ULL /* TCGETS */, 0x541BULL /* FIONREAD */,
                       0x80045430ULL /* TIOCGPTN */, 0xC0186201ULL, 0ULL, 0xFFFFFFFFULL}) {
    EXPECT_EQ(Eval(program, SYS_ioctl, {0, cmd}), kAllow) << std::hex << cmd;
  }
  for (uint64_t cmd : {0x5412ULL, 0x541CULL}) {  // TIOCSTI, TIOCLINUX
    for (uint64_t high : {0ULL, 1ULL << 32, 0xFFFFFFFF00000000ULL}) {
      EXPECT_EQ(Eval(program, SYS_ioctl, {3, high | cmd}), Errno(EACCES)) << std::hex << cmd;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seccomp, BuiltinProfiles, ::testing::Values("default", "strict"));

TEST(DefaultProfileContent, EverydaySyscallsAllowed) {
  const SeccompProgram& program = CompiledProfile("default");
  for (int nr : {SYS_read,         SYS_write,
                 SYS_openat,       SYS_close,
                 SYS_newfstatat,   SYS_statx,
                 SYS_mmap,         SYS_mprotect,
                 SYS_brk,          SYS_futex,
                 SYS_rt_sigaction, SYS_wait4,
                 SYS_pipe2,        SYS_dup3,
                 SYS_getdents64,   SYS_epoll_wait,
                 SYS_epoll_ctl,    SYS_eventfd2,
                 SYS_getrandom,    SYS_prlimit64,
                 SYS_rseq,         SYS_set_robust_list,
                 SYS_connect,      SYS_sendto,
                 SYS_recvfrom,     SYS_setsockopt,
                 SYS_shmget,       SYS_memfd_create,
                 SYS_seccomp,      SYS_prctl,
                 SYS_close_range,  SYS_pidfd_open,
                 kFutexWaitv,      SYS_sched_getaffinity,
                 SYS_setuid,       SYS_copy_file_range}) {
    EXPECT_EQ(Eval(program, nr), kAllow) << "syscall " << nr;
  }
}

TEST(DefaultProfileContent, SocketFamilies) {
  const SeccompProgram& program = CompiledProfile("default");
  for (uint64_t family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}) {
    EXPECT_EQ(Eval(program, SYS_socket, {family, SOCK_STREAM}), kAllow) << family;
    EXPECT_EQ(Eval(program, SYS_socket, {(1ULL << 32) | family}), Errno(EPERM)) << family;
  }
  // Rarely needed, historically buggy, or (vsock) a way out of the network namespace.
  for (uint64_t family : {AF_PACKET, AF_ALG, AF_VSOCK, AF_BLUETOOTH, AF_KEY, AF_XDP, AF_TIPC}) {
    EXPECT_EQ(Eval(program, SYS_socket, {family}), Errno(EPERM)) << family;
  }
  EXPECT_EQ(Eval(program, SYS_socketpair, {AF_UNIX}), kAllow);
  EXPECT_EQ(Eval(program, SYS_socketpair, {AF_TIPC}), Errno(EPERM));
}

// Netlink is decided per protocol: NETLINK_ROUTE (getifaddrs, AI_ADDRCONFIG, ip) only.
// Every other protocol gets EPROTONOSUPPORT, the kernel's answer for a protocol it lacks.
TEST(DefaultProfileContent, NetlinkOnlyRoute) {
  const SeccompProgram& program = CompiledProfile("default");
  constexpr uint64_t kRaw = SOCK_RAW, kCloexecRaw = SOCK_RAW | SOCK_CLOEXEC;
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kCloexecRaw, 0}), kAllow);
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, SOCK_DGRAM, 0}), kAllow);
  // 2 USERSOCK .. 22 SMC, and the ones beyond: AUDIT (9) and NETFILTER (12) by name.
  for (uint64_t protocol = 1; protocol < 64; ++protocol) {
    EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kRaw, protocol}), Errno(EPROTONOSUPPORT))
        << "netlink protocol " << protocol;
  }
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kCloexecRaw, 9}), Errno(EPROTONOSUPPORT));
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kRaw, 12}), Errno(EPROTONOSUPPORT));
  // The kernel reads the protocol as an int: 1 << 32 would be NETLINK_ROUTE to it, and an
  // all-ones value -1. The filter compares 64 bits, so neither is the allowed 0.
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kRaw, 1ULL << 32}), Errno(EPROTONOSUPPORT));
  EXPECT_EQ(Eval(program, SYS_socket, {AF_NETLINK, kRaw, ~0ULL}), Errno(EPROTONOSUPPORT));
  // The same protocol numbers stay usable with the other allowed families (IPPROTO_ICMP = 1,
  // IPPROTO_TCP = 6, IPPROTO_UDP = 17): the protocol rule applies to AF_NETLINK only.
  for (uint64_t protocol : {0, 1, 6, 9, 12, 17}) {
    EXPECT_EQ(Eval(program, SYS_socket, {AF_INET, SOCK_DGRAM, protocol}), kAllow) << protocol;
    EXPECT_EQ(Eval(program, SYS_socket, {AF_INET6, SOCK_STREAM, protocol}), kAllow) << protocol;
    EXPECT_EQ(Eval(program, SYS_socket, {AF_UNIX, SOCK_STREAM, protocol}), kAllow) << protocol;
  }
}

// Every family other than AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK is refused with the
// profile's EPERM, whatever the type and protocol: AF_PACKET, AF_KEY, AF_ALG, AF_VSOCK, AF_XDP,
// AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_RDS, AF_KCM, AF_SMC, AF_MCTP, ... (0 .. AF_MAX and beyond).
TEST(DefaultProfileContent, EveryOtherSocketFamilyRefused) {
  const SeccompProgram& program = CompiledProfile("default");
  for (uint64_t family = 0; family < 64; ++family) {
    if (family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK) {
      continue;
    }
    for (uint64_t type : {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET}) {
      for (uint64_t protocol : {0, 1, 3, 9}) {
        EXPECT_EQ(Eval(program, SYS_socket, {family, type, protocol}), Errno(EPERM))
            << "family " << family << " type " << type << " protocol " << protocol;
      }
    }
  }
}

TEST(DefaultProfileContent, OnlyHarmlessPersonalities) {
  const SeccompProgram& program = CompiledProfile("default");
  for (uint64_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xFFFFFFFFULL}) {
    EXPECT_EQ(Eval(program, SYS_personality, {persona}), kAllow) << std::hex << persona;
  }
  for (uint64_t persona :
       {ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ADDR_LIMIT_32BIT, MMAP_PAGE_ZERO}) {
    EXPECT_EQ(Eval(program, SYS_personality, {persona}), Errno(EPERM)) << std::hex << persona;
  }
}

TEST(StrictProfileContent, SmallerThanDefault) {
  const SeccompProgram& strict = CompiledProfile("strict");
  const SeccompProgram& def = CompiledProfile("default");
  for (int nr = 0; nr < 512; ++nr) {
    if (Eval(strict, nr) == kAllow) {
      EXPECT_EQ(Eval(def, nr), kAllow) << "syscall " << nr;
    }
  }
  for (int nr : {SYS_shmget, SYS_msgget, SYS_io_setup, SYS_memfd_create, SYS_setuid,
                 SYS_sched_setscheduler, SYS_epoll_create1, SYS_personality, SYS_seccomp}) {
    EXPECT_EQ(Eval(strict, nr), Errno(EPERM)) << "syscall " << nr;
  }
  EXPECT_EQ(Eval(strict, SYS_socket, {AF_UNIX}), kAllow);
  EXPECT_EQ(Eval(strict, SYS_socket, {AF_INET}), Errno(EPERM));
  EXPECT_EQ(Eval(strict, SYS_socket, {AF_NETLINK}), Errno(EPERM));
}

// Prints the figures quoted in seccomp-profiles/README.md.
TEST(BuiltinProfileFigures, Report) {
  for (const char* name : {"default", "strict"}) {
    const SeccompProgram& program = CompiledProfile(name);
    int always = 0, sometimes = 0;
    for (int nr = 0; nr < 1024; ++nr) {
      int allowed = 0;
      Args probes[] = {{}, {~0ULL, ~0ULL}, {AF_UNIX}, {0x80000000}, {SIGCHLD}};
      for (const Args& a : probes) allowed += Eval(program, nr, a) == kAllow;
      always += allowed == static_cast<int>(std::size(probes));
      sometimes += allowed > 0 && allowed < static_cast<int>(std::size(probes));
    }
    std::cout << name << ": " << always << " syscalls allowed, " << sometimes
              << " more for some arguments; " << program.instructions.size()
              << " BPF instructions\n";
    EXPECT_GT(always, 100);
  }
}

// Every file in seccomp-profiles/ is built in, byte for byte (a stale build would not be).
TEST(BuiltinProfileFiles, MatchTheSourceTree) {
  const std::filesystem::path dir = std::filesystem::path(CORRAL_SOURCE_DIR) / "seccomp-profiles";
  const std::vector<std::string> names = BuiltinSeccompProfileNames();
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto builtin = BuiltinSeccompProfileText(entry.path().stem().string());
    ASSERT_TRUE(builtin) << builtin.error().message();
    EXPECT_EQ(*builtin, text.str()) << entry.path() << " changed: re-run cmake";
  }
  EXPECT_EQ(files, names.size());
}

// ---- compiler semantics that need the decision, not just success ------------------------

SeccompProgram Compile(const std::string& json) {
  auto program = CompileSeccompProfile(json, "test");
  EXPECT_TRUE(program) << program.error().message();
  return program ? *program : SeccompProgram{};
}

TEST(SeccompSemantics, ActionsAndErrnoValues) {
  SeccompProgram p = Compile(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
      "syscalls": [
        {"names": ["getpid"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["getppid"], "action": "SCMP_ACT_ERRNO"},
        {"names": ["gettid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22},
        {"name": "getuid", "action": "SCMP_ACT_KILL_PROCESS"},
        {"names": ["getgid"], "action": "SCMP_ACT_KILL"},
        {"names": ["geteuid"], "action": "SCMP_ACT_TRAP"},
        {"names": ["getegid"], "action": "SCMP_ACT_LOG"},
        {"names": ["getpgrp"], "action": "SCMP_ACT_TRACE", "errnoRet": 5}]})");
  EXPECT_EQ(Eval(p, SYS_getpid), kAllow);
  EXPECT_EQ(Eval(p, SYS_getppid), Errno(EPERM));  // errnoRet defaults to EPERM, as in runc
  EXPECT_EQ(Eval(p, SYS_gettid), Errno(EINVAL));
  EXPECT_EQ(Eval(p, SYS_getuid), kKillProcess);
  EXPECT_EQ(Eval(p, SYS_getgid), static_cast<uint32_t>(SECCOMP_RET_KILL_THREAD));
  EXPECT_EQ(Eval(p, SYS_geteuid), static_cast<uint32_t>(SECCOMP_RET_TRAP));
  EXPECT_EQ(Eval(p, SYS_getegid), static_cast<uint32_t>(SECCOMP_RET_LOG));
  EXPECT_EQ(Eval(p, SYS_getpgrp), static_cast<uint32_t>(SECCOMP_RET_TRACE | 5));
  EXPECT_EQ(Eval(p, SYS_read), Errno(ENOSYS));
}

TEST(SeccompSemantics, UnknownNamesSkippedKnownOnesKept) {
  SeccompProgram p = Compile(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
      {"names": ["no_such_syscall", "getpid", "socketcall"], "action": "SCMP_ACT_ALLOW"}]})");
  EXPECT_EQ(Eval(p, SYS_getpid), kAllow);
  EXPECT_EQ(Eval(p, SYS_getppid), Errno(EPERM));
}

TEST(SeccompSemantics, ArgumentComparisons) {
  SeccompProgram p = Compile(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
      {"names": ["read"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 3, "op": "SCMP_CMP_LT"},
                {"index": 2, "value": 4096, "op": "SCMP_CMP_LE"}]},
      {"names": ["write"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 240, "valueTwo": 16, "op": "SCMP_CMP_MASKED_EQ"}]},
      {"names": ["close"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 2, "op": "SCMP_CMP_NE"}]},
      {"names": ["dup"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 9, "op": "SCMP_CMP_GE"}]},
      {"names": ["dup"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"}]}]})");
  EXPECT_EQ(Eval(p, SYS_read, {2, 0, 4096}), kAllow);
  EXPECT_EQ(Eval(p, SYS_read, {3, 0, 1}), Errno(EPERM));  // both conditions must hold
  EXPECT_EQ(Eval(p, SYS_read, {0, 0, 4097}), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_write, {0x1F}), kAllow);
  EXPECT_EQ(Eval(p, SYS_write, {0x2F}), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_close, {1}), kAllow);
  EXPECT_EQ(Eval(p, SYS_close, {2}), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_close, {(1ULL << 32) | 2}), kAllow);  // 64-bit compare
  EXPECT_EQ(Eval(p, SYS_dup, {1}), kAllow);                   // separate entries: OR
  EXPECT_EQ(Eval(p, SYS_dup, {10}), kAllow);
  EXPECT_EQ(Eval(p, SYS_dup, {5}), Errno(EPERM));
}

TEST(SeccompSemantics, IncludesAndExcludes) {
  SeccompProgram p = Compile(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
      {"names": ["getpid"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
      {"names": ["getppid"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm64"]}},
      {"names": ["gettid"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
      {"names": ["getuid"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "3.0"}},
      {"names": ["getgid"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "999.0"}},
      {"names": ["geteuid"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "3.0"}},
      {"names": ["getegid"], "action": "SCMP_ACT_ALLOW", "excludes": {"minKernel": "999.0"}}]})");
  EXPECT_EQ(Eval(p, SYS_getpid), kAllow);
  EXPECT_EQ(Eval(p, SYS_getppid), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_gettid), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_getuid), kAllow);
  EXPECT_EQ(Eval(p, SYS_getgid), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_geteuid), Errno(EPERM));
  EXPECT_EQ(Eval(p, SYS_getegid), kAllow);
}

// ---- what an exec slot may install before its command arrives -----------------------

TEST(SeccompAllowsOutright, TheBuiltInProfilesAllowEverythingAWaitingSlotStillCalls) {
  for (const char* name : {"default", "strict", "unconfined"}) {
    EXPECT_TRUE(SeccompAllowsOutright(CompiledProfile(name), kSlotSyscallsAfterSeccomp)) << name;
  }
}

TEST(SeccompAllowsOutright, OnlyAnUnconditionalAllowCounts) {
  SeccompProgram p = Compile(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
      {"names": ["getpid", "write"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["read"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]},
      {"names": ["getppid"], "action": "SCMP_ACT_LOG"}]})");
  EXPECT_TRUE(SeccompAllowsOutright(p, {SYS_getpid, SYS_write}));
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_read}));     // allowed for some arguments only
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_getppid}));  // runs, but is not ALLOW
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_gettid}));   // the default: refused
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_getpid, SYS_gettid}));
  EXPECT_TRUE(SeccompAllowsOutright(SeccompProgram{}, {SYS_gettid}));  // no filter at all
}

TEST(SeccompAllowsOutright, AnInstructionItDoesNotKnowIsANo) {
  SeccompProgram p;
  p.instructions = {BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
                    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_getpid}));
  p.instructions = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};  // runs off the end
  EXPECT_FALSE(SeccompAllowsOutright(p, {SYS_getpid}));
}

}  // namespace
}  // namespace corral::jail
