// JailPlan: everything a jail child needs, fully resolved in the parent before clone().
//
// The planner (runtime/run/planner.h) builds it; jail::Spawn() clones a child that only *reads*
// it. Every string the child passes to a syscall, every message it may report, every
// compiled filter is prepared here, so the child allocates nothing and looks nothing up.
// Immutable once built. Owns the O_PATH fds of bind-mount sources (opened in the parent so
// that a path swapped after validation cannot redirect a mount).
#pragma once

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "jail/landlock.h"
#include "jail/seccomp.h"

namespace corral::jail {

// One step of building the jail's root, executed in order by the child (jail/mounts.h).
// Paths are absolute paths in the child's mount namespace *before* pivot_root, i.e. under
// the staging directory where the new root is mounted.
struct MountOp {
  enum class Kind {
    kTmpfs,            // mount a tmpfs at `path` with options `data`
    kInnerBind,        // bind the directory `source_path`, already in the new root, at `path`
    kBind,             // bind the tree of `source_fd` at `path` (recursive)
    kMkdir,            // mkdir `path` (EEXIST is fine), owned by owner_uid/gid if set
    kRmdir,            // rmdir `path` (an empty directory whose binds outlive it)
    kFile,             // create `path` holding `data` (generated or snapshotted content)
    kSymlink,          // symlink `path` -> `data`
    kDevice,           // mknod character device `path` with `device`
    kProc,             // mount a fresh procfs at `path`
    kDevpts,           // mount a private devpts instance at `path` with options `data`
    kReadOnly,         // bind `path` over itself read-only (recursively); path need not be a mount
    kRemountReadOnly,  // make the mount at `path` (a mount point) read-only, not its submounts
    kFilesystem,       // mount a new `fstype` filesystem (source `source_path`) at `path`
    kMask,  // hide `path` if it exists: /dev/null over a file, an empty ro tmpfs over a dir
  };
  Kind kind = Kind::kMkdir;
  std::string path;
  std::string data;
  int source_fd = -1;         // kBind: O_PATH fd owned by JailPlan::source_fds
  bool read_only = false;     // kBind, kTmpfs, kInnerBind: mount read-only
  bool source_is_dir = true;  // kBind: the mount point must be a directory (else a file)
  mode_t mode = 0755;         // kMkdir, kFile, kDevice
  // kMkdir: chown to these after the mkdir; -1 leaves the owner as made.
  uid_t owner_uid = static_cast<uid_t>(-1);
  gid_t owner_gid = static_cast<gid_t>(-1);
  dev_t device = 0;  // kDevice
  // kTmpfs/kProc/kDevpts/kInnerBind: MS_NOSUID | MS_NODEV | MS_NOEXEC (for kInnerBind a
  // flag not given is cleared). kBind: MS_NOEXEC if the tree was prepared noexec (only
  // read by the Landlock planner; the tree carries its flags).
  unsigned long flags = 0;
  // kInnerBind: the directory to bind, under the staging directory like `path`; when it is
  // `path` itself, the op carves that directory out of the root's tmpfs as a mount of its
  // own (writable while the root is read-only), and `data` says what tmpfs it stands for
  // (its mode and size: what an OCI bundle mounts there instead, runtime/oci).
  // kBind in a user namespace (source_fd == -1): the child clones `source_path` itself,
  // with these mount attributes, and refuses it unless it is still the object the parent
  // saw (device and inode). See jail/mounts.h, DeferBindTree.
  std::string source_path;
  uint64_t source_attrs = 0;
  uint64_t source_attrs_clear = 0;
  dev_t source_dev = 0;
  ino_t source_ino = 0;
  std::string description;  // for errors: "bind-mount /srv/skills -> /mnt/skills"
  // An OCI container's mounts (jail/container_mounts.cc): `path` is relative to the
  // staging directory and resolved inside it (openat2 RESOLVE_IN_ROOT), so that a symlink
  // in the container's image cannot aim a mount at a host path; missing directories on the
  // way are made. Also: kReadOnly and kMask skip a path that does not exist.
  bool in_root = false;
  std::string fstype;          // kFilesystem
  mode_t file_type = S_IFCHR;  // kDevice: S_IFCHR, S_IFBLK or S_IFIFO
};

// How the init (PID 1) behaves.
enum class InitMode {
  kOneShot,     // fork the command, exit with it (the kernel then kills the namespace)
  kPersistent,  // hold the namespaces and reap orphans until killed (corral create)
  // No init of corral's: the child itself execs the command, which is PID 1 of the new
  // PID namespace (an OCI container's process, runtime/oci/runc_container.h).
  kExecDirect,
};

// kExecDirect: the identity an OCI config asks for (jail/container.h), instead of the
// fixed one of corral's own jails (no capabilities, no supplementary groups, always
// no_new_privs). Capability sets are bit masks (bit n = capability n).
struct ContainerIdentity {
  std::vector<gid_t> groups;
  uint64_t bounding = 0;
  uint64_t effective = 0;
  uint64_t permitted = 0;
  uint64_t inheritable = 0;
  uint64_t ambient = 0;
  bool no_new_privs = false;
  int umask = -1;  // -1: as inherited
};

// One line of /proc/<pid>/uid_map or gid_map: `count` ids from `inside` map to `outside`.
struct IdMapping {
  uint32_t inside = 0;
  uint32_t outside = 0;
  uint32_t count = 1;
};

// Rootless mode (jail/user_ns.cc): the jail gets a user namespace of its own. The parent
// writes the id maps after clone (itself, or through newuidmap/newgidmap for subordinate
// ranges), then lets the child go on; until then the child has no ids to act as.
struct UserNamespacePlan {
  bool enabled = false;  // CLONE_NEWUSER is then in clone_flags
  std::vector<IdMapping> uid_map;
  std::vector<IdMapping> gid_map;
  // An unprivileged caller mapping only its own gid must first turn setgroups(2) off in
  // the namespace; the child then keeps its groups (it cannot drop them: see ids.cc).
  bool deny_setgroups = false;
  // Setuid helpers (Debian's uidmap) that may map subordinate ranges; empty: the parent
  // writes the maps itself (its own id alone, or anything when it is root).
  std::string newuidmap;
  std::string newgidmap;
  // The ids the child (the jail's init) takes once the maps are written: until then its
  // own host ids may be unmapped there (root's are), and an unmapped fsuid cannot create
  // a mount point (EOVERFLOW). 0 when a range maps it, else the command's ids.
  uint32_t init_uid = 0;
  uint32_t init_gid = 0;
};

struct JailPlan {
  // --- namespaces (jail/spawn.cc) ---
  unsigned long clone_flags = 0;  // CLONE_NEW* passed to clone3 (never CLONE_NEWCGROUP)
  bool new_cgroup_ns = false;     // unshare(CLONE_NEWCGROUP) after joining the cgroup
  bool die_with_parent = true;    // PR_SET_PDEATHSIG(SIGKILL) on the init
  InitMode init_mode = InitMode::kOneShot;
  UserNamespacePlan user_ns;
  // One-shot only: build the jail, then wait for the command on the status socket
  // (jail/command.h) instead of running argv/envp/workdir below. A prepared jail of a
  // pool (runtime/pool/jail_pool.h) is spawned this way before anyone knows what it will run.
  bool deferred_command = false;

  // --- root (jail/mounts.cc) ---
  std::string staging_dir;           // where the new root is built before pivot_root
  std::vector<MountOp> mounts;       // in order
  std::vector<UniqueFd> source_fds;  // owners of MountOp::source_fd
  bool read_only_root = true;        // make "/" read-only after pivot_root

  // --- identity and environment of the command (jail/ids.cc, jail/exec.cc) ---
  std::string hostname;  // empty = leave as is (no UTS namespace)
  bool loopback_up = false;
  // >= 0: join this network namespace (made by the caller, with corral's proxy listening
  // on its loopback: runtime/net/netproxy_launch.h) instead of a new one; the caller owns
  // the fd and clears CLONE_NEWNET from clone_flags.
  int net_ns_fd = -1;
  uid_t uid = 1000;
  gid_t gid = 1000;
  std::vector<std::pair<int, rlimit>> rlimits;  // only ever lowered (planner clamps)
  std::string workdir = "/";
  // The command opens a pty of the jail's devpts, sends the master on its stdin (a unix
  // socket) and takes the slave as its stdio and controlling terminal (jail/terminal.cc).
  bool allocate_tty = false;

  std::vector<std::string> argv_storage;
  std::vector<std::string> envp_storage;
  std::vector<std::string> path_dirs;  // PATH entries searched when argv[0] has no '/'
  // NULL-terminated views into the storage above; rebuilt by FinalizePointers().
  std::vector<char*> argv;
  std::vector<char*> envp;

  // --- an OCI container (init_mode kExecDirect; jail/container.h) ---
  bool use_container_identity = false;
  ContainerIdentity container_identity;
  // Namespaces joined (setns) before the root is built: an fd owned by the caller and its
  // CLONE_NEW* type (the pod's network, IPC and UTS namespaces of a Kubernetes pod).
  std::vector<std::pair<int, int>> join_namespaces;
  // Namespaced sysctls, written in the jail's namespaces before the root is built:
  // ("/proc/sys/net/ipv4/ip_forward", "1").
  std::vector<std::pair<std::string, std::string>> sysctls;
  // >= 0: a connected unix socket (the caller's --console-socket): the child opens a pty
  // of the container's devpts, sends the master there and takes the slave as its stdio
  // and controlling terminal, before the start gate.
  int console_socket_fd = -1;
  uint16_t console_rows = 0;  // the pty's size, when known
  uint16_t console_cols = 0;
  // >= 0: a listening unix socket. Once built, the child closes its setup channel (the
  // caller sees success) and waits for one connection on it (corral-runc start); that
  // connection is its setup channel from then on, so `start` learns whether the exec
  // succeeded.
  int start_gate_fd = -1;
  // Fds 3 .. 3+preserve_fds-1 of the caller go on to the command (runc's --preserve-fds).
  int preserve_fds = 0;
  // Propagation of the container's root after pivot_root (MS_PRIVATE, MS_SLAVE, with
  // MS_REC); 0 leaves it private.
  unsigned long root_propagation = 0;

  SeccompProgram seccomp;  // empty = no filter
  // Applied just before seccomp by the command and by the init (jail/landlock.h).
  LandlockPlan landlock;

  // Fills argv/envp from the storage vectors. Call after the storage is final.
  void FinalizePointers();

  JailPlan() = default;
  JailPlan(JailPlan&&) = default;
  JailPlan& operator=(JailPlan&&) = default;
  JailPlan(const JailPlan&) = delete;
  JailPlan& operator=(const JailPlan&) = delete;
};

}  // namespace corral::jail
