#include "runtime/pool/warm_claim.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/fd_pair.h"
#include "jail/mounts.h"
#include "jail/syscalls.h"
#include "runtime/run/identity.h"
#include "runtime/run/planner.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/spec_json.h"

namespace corral::runtime {

namespace {

Status MkdirMode(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Ok();
  return Error::FromErrno(errno, "mkdir " + path);
}

void RemovePlaceholders(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // our own directories; best effort
}

// The spec as comparable text, with the per-thread directories and argv left out. Through
// a JSON round trip first: the warm one was read back from its record.
std::string ThreadlessSpecText(JailSpec spec) {
  spec.user_data_dir.reset();
  spec.acp_workspace_dir.reset();
  spec.argv.clear();
  // Named after the sandbox (PinIdentity), as the directories are after the thread. It
  // picks no host id here: a warm pool never runs under a reserved identity (WhyNot).
  spec.identity_key.clear();
  auto again = SpecFromJson(SpecToJson(spec));
  return again ? SpecToJson(*again) : "unreadable: " + again.error().message();
}

// One mount to put over a placeholder inside the sandbox.
struct Overmount {
  std::string host_path;  // for messages
  const char* jail_path;
  UniqueFd tree;  // detached, configured (jail::PrepareBindTree)
};

// What the child of SwitchMounts reports when a step fails.
struct ChildFailure {
  int step = 0;    // 1 setns, 2 chroot, 3 umount, 4 move_mount, 5 verify
  int err = 0;     // errno
  int index = -1;  // into the overmounts
};

const char* StepName(int step) {
  switch (step) {
    case 1:
      return "setns into the sandbox's mount namespace";
    case 2:
      return "chroot into the sandbox's root";
    case 3:
      return "unmount the placeholder";
    case 4:
      return "move_mount";
    case 5:
      return "check the new mount (another file system is there)";
  }
  return "unknown step";
}

// Child of a multithreaded parent: syscalls only. Enters the init's mount namespace and
// root (as jail/enter.cc does: after a chroot fallback the namespace's root is not the
// jail's), then replaces each placeholder mount by its tree.
[[noreturn]] void SwitchInChild(int init_pidfd, int root_fd, const std::vector<Overmount>& mounts,
                                int report_fd) {
  ChildFailure f;
  auto fail = [&](int step, int index) {
    f.step = step;
    f.err = errno;
    f.index = index;
    (void)!::write(report_fd, &f, sizeof f);
    ::_exit(1);
  };
  if (::setns(init_pidfd, CLONE_NEWNS) != 0) fail(1, -1);
  if (::fchdir(root_fd) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) fail(2, -1);
  for (size_t i = 0; i < mounts.size(); ++i) {
    const Overmount& m = mounts[i];
    // Detached, not stacked: the sandbox's mount table then reads as a cold one's, and
    // nothing keeps the placeholder directory in use.
    if (::umount2(m.jail_path, MNT_DETACH) != 0 && errno != EINVAL) fail(3, static_cast<int>(i));
    if (jail::sys::MoveMount(m.tree.get(), "", AT_FDCWD, m.jail_path, MOVE_MOUNT_F_EMPTY_PATH) !=
        0) {
      fail(4, static_cast<int>(i));
    }
    struct stat want, got;
    if (::fstat(m.tree.get(), &want) != 0 || ::stat(m.jail_path, &got) != 0)
      fail(5, static_cast<int>(i));
    if (want.st_dev != got.st_dev || want.st_ino != got.st_ino) {
      errno = EXDEV;
      fail(5, static_cast<int>(i));
    }
  }
  ::_exit(0);
}

// Mounts the thread's directories over the placeholders inside the running sandbox.
Status SwitchMounts(const SandboxRecord& warm, const JailSpec& spec) {
  std::vector<Overmount> mounts;
  if (spec.user_data_dir) mounts.push_back({*spec.user_data_dir, kUserDataPath, {}});
  if (spec.acp_workspace_dir) mounts.push_back({*spec.acp_workspace_dir, kAcpWorkspacePath, {}});
  for (Overmount& m : mounts) {
    // In corral's (the host's) mount namespace, as a cold create's plan opens them, and
    // with the same attributes: nosuid, nodev, private; read-only for acp-workspace.
    const bool read_only = std::strcmp(m.jail_path, kAcpWorkspacePath) == 0;
    ASSIGN_OR_RETURN(m.tree, jail::PrepareBindTree(m.host_path, read_only));
  }
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, warm.init_pid, 0)));
  UniqueFd root(::open(("/proc/" + std::to_string(warm.init_pid) + "/root").c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  // Checked after both are open: a recycled pid cannot have slipped in between.
  if (!pidfd || !root || !ProcessRunning(warm.init_pid, warm.init_start_ticks)) {
    return Error(ErrorCode::kNotFound, "warm sandbox " + warm.name + " is dead (its init exited)");
  }
  ASSIGN_OR_RETURN(Pipe report, MakePipe());
  UniqueFd report_read = std::move(report.read), report_write = std::move(report.write);
  const pid_t child = ::fork();
  if (child < 0) return Error::FromErrno(errno, "fork");
  if (child == 0) SwitchInChild(pidfd.get(), root.get(), mounts, report_write.get());
  report_write.Reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return Error::FromErrno(errno, "waitpid");
  }
  ChildFailure f;
  const ssize_t n = ::read(report_read.get(), &f, sizeof f);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == 0) return Ok();
  if (n != static_cast<ssize_t>(sizeof f)) {
    return Error(ErrorCode::kInternal, "warm sandbox " + warm.name +
                                           ": the mount switch ended without a report (status " +
                                           std::to_string(status) + ")");
  }
  std::string what = "warm sandbox " + warm.name + ": ";
  if (f.index >= 0 && static_cast<size_t>(f.index) < mounts.size()) {
    what += "mount " + mounts[f.index].host_path + " at " + mounts[f.index].jail_path + ": ";
  }
  return Error::FromErrno(f.err, what + StepName(f.step));
}

}  // namespace

std::string WarmDirOf(const SandboxStore& store, const std::string& name) {
  return store.root() + "/warm/" + name;
}

Result<SandboxRecord> CreateWarmSandbox(const std::string& name, JailSpec spec) {
  if (!IsValidSandboxName(name)) {
    return Error(ErrorCode::kInvalidArgument, "warm sandbox name '" + name + "' is not valid");
  }
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  const std::string dir = WarmDirOf(store, name);
  RETURN_IF_ERROR(MkdirMode(store.root() + "/warm", 0700));
  if (::mkdir(dir.c_str(), 0755) != 0) return Error::FromErrno(errno, "mkdir " + dir);
  // user-data/{workspace,uploads,outputs} are made by CreateSandbox's PrepareHostDirs,
  // owned by the jail's uid as a thread's are; the spec's validation wants both here.
  spec.user_data_dir = dir + "/user-data";
  spec.acp_workspace_dir = dir + "/acp-workspace";
  for (const std::string& d : {*spec.user_data_dir, *spec.acp_workspace_dir}) {
    if (Status st = MkdirMode(d, 0755); !st) {
      RemovePlaceholders(dir);
      return st.error();
    }
  }
  CreateRequest request;
  request.spec = std::move(spec);
  request.name = name;
  request.idle_timeout_seconds = 0;  // warm sandboxes wait; the claim sets the thread's
  auto record = CreateSandbox(request);
  if (!record) RemovePlaceholders(dir);
  return record;
}

Status RemoveWarmSandbox(const std::string& name) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  Status st = RemoveSandbox(name);
  RemovePlaceholders(WarmDirOf(store, name));
  if (!st && st.error().code() != ErrorCode::kNotFound) return st;
  return Ok();
}

Result<SandboxRecord> ClaimWarmSandbox(const std::string& from_name, const std::string& to_name,
                                       const JailSpec& requested, double idle_timeout_seconds) {
  ASSIGN_OR_RETURN(SandboxStore store, SandboxStore::Open());
  bool renamed = false;
  // Never a half-claimed sandbox: whatever failed, the warm one goes (and `to_name` with
  // it once it was ours).
  auto fail = [&](Error e) -> Error {
    if (renamed) (void)RemoveSandbox(to_name);
    (void)RemoveWarmSandbox(from_name);
    return e;
  };
  if (!IsValidSandboxName(to_name)) {
    return fail(Error(ErrorCode::kInvalidArgument, "sandbox name '" + to_name + "' is not valid"));
  }
  if (store.Find(to_name)) {
    return fail(
        Error(ErrorCode::kAlreadyExists, "a sandbox named '" + to_name + "' already exists"));
  }
  auto warm = store.Find(from_name);
  if (!warm) return fail(warm.error());
  // Exclusive for the whole claim: no exec starts in it half-way, no reaper takes it.
  auto lock = store.Lock(from_name, /*shared=*/false, /*wait=*/false);
  if (!lock) return fail(lock.error());
  warm = store.Find(from_name);  // as it is now that we hold it
  // As CreateSandbox records it, so that the comparison below and the claimed record
  // see the identity the warm init got ("auto" in the config, "host-uid" in the record).
  JailSpec spec = requested;
  if (Status st = PinIdentity(to_name, &spec); !st) return fail(st.error());
  if (!warm || warm->name != from_name) {
    return fail(Error(ErrorCode::kNotFound, "warm sandbox " + from_name + " is gone"));
  }
  if (!ProcessRunning(warm->init_pid, warm->init_start_ticks)) {
    return fail(Error(ErrorCode::kNotFound, "warm sandbox " + from_name + " is dead"));
  }
  if (ThreadlessSpecText(warm->spec) != ThreadlessSpecText(spec)) {
    return fail(Error(ErrorCode::kInvalidArgument,
                      "warm sandbox " + from_name +
                          " was made from another spec than the one asked for (the "
                          "configuration changed?)"));
  }
  if (Status st = PrepareHostDirs(spec); !st) return fail(st.error());
  if (Status st = SwitchMounts(*warm, spec); !st) return fail(st.error());

  SandboxRecord claimed = *warm;
  claimed.name = to_name;
  claimed.spec = spec;
  claimed.spec.argv = {"corral-init"};  // as CreateSandbox records it
  claimed.idle_timeout_seconds = idle_timeout_seconds;
  if (Status st = store.Rename(from_name, claimed); !st) {
    // A name taken meanwhile is someone else's; any other failure left `to_name` ours.
    renamed =
        st.error().code() != ErrorCode::kAlreadyExists && static_cast<bool>(store.Find(to_name));
    return fail(st.error());
  }
  RemovePlaceholders(WarmDirOf(store, from_name));
  return claimed;
}

}  // namespace corral::runtime
