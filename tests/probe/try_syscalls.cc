// `try-syscalls`, `int80`, `x32`: the syscalls a jail must refuse. Each attempt runs in a
// forked child so that a call that succeeds (or kills) cannot change the probe itself, and
// so that its result can be "killed:SIGSYS" as well as an errno. Every attempt is also safe
// to run as root on the host: nothing it does outlives the child (hostname is set to its
// current value, mounts are undone, keys go to the child's own process keyring).
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {
namespace {

constexpr int kSkipped = 255;  // child exit code: the attempt does not apply here

// Set by CmdTrySyscalls before forking: an empty directory for the mount attempts.
std::string g_scratch_dir = "/nonexistent-corral-probe";

// Returns 0 when the call succeeded, else its errno.
int Check(long rc) { return rc < 0 ? errno : 0; }
int CheckFd(long fd) {
  if (fd < 0) return errno;
  close(static_cast<int>(fd));
  return 0;
}

int TryMountTmpfs() {
  if (mount("tmpfs", g_scratch_dir.c_str(), "tmpfs", MS_NOSUID, "size=1m") < 0) return errno;
  umount2(g_scratch_dir.c_str(), MNT_DETACH);
  return 0;
}

// On a plain directory: EPERM without CAP_SYS_ADMIN (checked first), EINVAL with it.
int TryUmount() { return Check(umount2(g_scratch_dir.c_str(), 0)); }
int TryUnshareUser() { return Check(unshare(CLONE_NEWUSER)); }
int TryUnshareMount() { return Check(unshare(CLONE_NEWNS)); }
int TryUnshareNet() { return Check(unshare(CLONE_NEWNET)); }

int TrySetns() {
  int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  return Check(setns(fd, CLONE_NEWUTS));
}

int TryPtraceTraceme() { return Check(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)); }

int TryBpf() {
  union bpf_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  return CheckFd(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}

int TryKeyctl() {
  return Check(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}

int TryAddKey() {
  return Check(syscall(SYS_add_key, "user", "corral-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
}

int TryPerfEventOpen() {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof(attr);
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return CheckFd(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

int TryIoUringSetup() {
  unsigned char params[120] = {};  // struct io_uring_params, all defaults
  return CheckFd(syscall(SYS_io_uring_setup, 1, params));
}

int TryUserfaultfd() { return CheckFd(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY)); }

// Needs CAP_DAC_READ_SEARCH; a made-up handle is enough to reach that check.
int TryOpenByHandleAt() {
  struct {
    struct file_handle fh;
    unsigned char bytes[128];
  } h;
  memset(&h, 0, sizeof(h));
  h.fh.handle_bytes = sizeof(h.bytes);
  int mount_id;
  if (name_to_handle_at(AT_FDCWD, "/", &h.fh, &mount_id, 0) < 0) {
    h.fh.handle_type = 1;  // FILEID_INO32_GEN
    h.fh.handle_bytes = 8;
  }
  int mount_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return CheckFd(syscall(SYS_open_by_handle_at, mount_fd, &h.fh, O_RDONLY | O_CLOEXEC));
}

// A raw clone without a new stack behaves like fork; the grandchild exits at once.
int TryCloneNewnet() {
  long pid = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) syscall(SYS_exit, 0);
  if (pid < 0) return errno;
  waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return 0;
}

// Docker-format profiles answer clone3 with ENOSYS so that libc falls back to clone, whose
// flags seccomp can inspect.
int TryClone3() {
  uint64_t args[8] = {};  // struct clone_args, version 0: flags .. tls
  args[4] = SIGCHLD;      // exit_signal
  long pid = syscall(SYS_clone3, args, sizeof(args));
  if (pid == 0) syscall(SYS_exit, 0);
  if (pid < 0) return errno;
  waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return 0;
}

int TryChroot() { return Check(chroot("/")); }

int TrySethostname() {
  struct utsname u;
  if (uname(&u) < 0) return errno;
  return Check(sethostname(u.nodename, strlen(u.nodename)));
}

int TrySetuid0() { return Check(syscall(SYS_setuid, 0)); }

int TryCapsetRaise() {
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) < 0) return errno;
  data[0].effective |= 1u << CAP_SYS_ADMIN;
  data[0].permitted |= 1u << CAP_SYS_ADMIN;
  return Check(syscall(SYS_capset, &header, data));
}

int TryKexecFileLoad() { return Check(syscall(SYS_kexec_file_load, -1, -1, 0, nullptr, 0)); }
int TryFinitModule() { return Check(syscall(SYS_finit_module, -1, "", 0)); }
int TryIopl() { return Check(syscall(SYS_iopl, 3)); }
int TryFsopen() { return CheckFd(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC)); }

int TryOpenTree() {
  return CheckFd(syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
}

// UDP connect sends nothing; it only needs a route, which an empty netns lacks.
int TryConnectExternal() {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  struct sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(53);
  inet_pton(AF_INET, "1.1.1.1", &addr.sin_addr);
  return Check(connect(s, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)));
}

template <int kFd>
int TryTiocsti() {
  if (!isatty(kFd)) return kSkipped;
  char c = ' ';
  return Check(ioctl(kFd, TIOCSTI, &c));
}

struct Attempt {
  const char* name;
  int (*fn)();
};

constexpr Attempt kAttempts[] = {
    {"mount_tmpfs", TryMountTmpfs},
    {"umount", TryUmount},
    {"unshare_user", TryUnshareUser},
    {"unshare_mount", TryUnshareMount},
    {"unshare_net", TryUnshareNet},
    {"setns", TrySetns},
    {"ptrace_traceme", TryPtraceTraceme},
    {"bpf", TryBpf},
    {"keyctl", TryKeyctl},
    {"add_key", TryAddKey},
    {"perf_event_open", TryPerfEventOpen},
    {"io_uring_setup", TryIoUringSetup},
    {"userfaultfd", TryUserfaultfd},
    {"open_by_handle_at", TryOpenByHandleAt},
    {"clone_newnet", TryCloneNewnet},
    {"clone3", TryClone3},
    {"chroot", TryChroot},
    {"sethostname", TrySethostname},
    {"setuid_0", TrySetuid0},
    {"capset_raise", TryCapsetRaise},
    {"kexec_file_load", TryKexecFileLoad},
    {"finit_module", TryFinitModule},
    {"iopl", TryIopl},
    {"fsopen", TryFsopen},
    {"open_tree", TryOpenTree},
    {"connect_external", TryConnectExternal},
    {"tiocsti_fd0", TryTiocsti<0>},
    {"tiocsti_fd1", TryTiocsti<1>},
    {"tiocsti_fd2", TryTiocsti<2>},
};

// "ok", an errno name, "skipped", "killed:SIGSYS", or "fork:<errno>".
std::string RunInChild(int (*fn)()) {
  pid_t pid = fork();
  if (pid < 0) return "fork:" + ErrnoName(errno);
  if (pid == 0) _exit(fn() & 0xff);
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return "waitpid:" + ErrnoName(errno);
  }
  if (WIFSIGNALED(status)) return "killed:" + SignalName(WTERMSIG(status));
  int code = WEXITSTATUS(status);
  if (code == 0) return "ok";
  if (code == kSkipped) return "skipped";
  return ErrnoName(code);
}

}  // namespace

int CmdTrySyscalls(const Args& args) {
  if (!args.empty()) return UsageError("try-syscalls takes no arguments");
  char scratch[] = "/tmp/corral-probe-XXXXXX";
  bool have_scratch = mkdtemp(scratch) != nullptr;
  if (have_scratch) g_scratch_dir = scratch;
  JsonWriter j;
  j.BeginObject().Field("command", "try-syscalls").Field("scratch_dir", have_scratch);
  j.Key("results").BeginObject();
  for (const Attempt& a : kAttempts) j.Field(a.name, RunInChild(a.fn));
  // In-process: signal 0 changes nothing, and a child would find its parent signalable.
  // kill(-1) skips the caller and the namespace's init; kill(1) is corral-init inside.
  j.Field("kill_all", kill(-1, 0) < 0 ? ErrnoName(errno) : std::string("ok"));
  j.Field("kill_pid1", kill(1, 0) < 0 ? ErrnoName(errno) : std::string("ok"));
  j.EndObject().EndObject();
  if (have_scratch) rmdir(scratch);
  return PrintJson(j) ? 0 : 1;
}

// getpid through the 32-bit entry point. A jail's seccomp filter must kill this: a filter
// that checks only x86_64 syscall numbers would otherwise let i386 numbers through.
int CmdInt80(const Args& args) {
  if (!args.empty()) return UsageError("int80 takes no arguments");
  long ret = 20;  // __NR_getpid on i386
  asm volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
  JsonWriter j;
  j.BeginObject().Field("command", "int80").Field("returned", true);
  j.Field("result", static_cast<long long>(ret)).EndObject();
  PrintJson(j);
  return 0;
}

// getpid with the x32 ABI bit set; the filter must kill or refuse it, not run it as getpid.
int CmdX32(const Args& args) {
  if (!args.empty()) return UsageError("x32 takes no arguments");
  constexpr long kX32Bit = 0x40000000;
  long ret = syscall(kX32Bit | SYS_getpid);
  int err = ret < 0 ? errno : 0;
  JsonWriter j;
  j.BeginObject().Field("command", "x32").Field("returned", true);
  j.Field("result", static_cast<long long>(ret)).ErrnoField("errno", err).EndObject();
  PrintJson(j);
  return 0;
}

}  // namespace corral::probe
