// The layout of a jail's fresh root, as an ordered list of jail::MountOps:
//   /            the jail's one tmpfs (limits.tmp_size), read-only once built
//   /usr /bin /sbin /lib*   host (or rootfs) directories bound read-only; merged-usr
//                symlinks recreated as symlinks
//   /etc         a curated snapshot: generated passwd/group/hosts/hostname, small config
//                files copied, a few directories bound read-only; never shadow, sudoers,
//                ssh keys or TLS private keys
//   /home/sandbox, /tmp, /var/tmp, /run, /dev/shm   writable: directories of the root's
//                tmpfs bound over themselves, sharing its size (no superblock each)
//   /mnt/skills (ro), /mnt/user-data (rw), /mnt/acp-workspace (ro), custom mounts
//   /dev         null zero full random urandom tty, devpts with ptmx, /dev/shm
//   /proc        fresh; sensitive entries masked (files by the host's /dev/null, directories
//                by one empty directory of the root), /proc/sys & co read-only
// Three superblocks in all: the tmpfs, proc and devpts.
// Parent side; part of Plan().
#pragma once

#include <set>
#include <string>

#include "base/result.h"
#include "jail/plan.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

Status AddRootLayout(const JailSpec& spec, jail::JailPlan* plan);

// The jail paths that a jail built from `spec` has a mount at (/usr, /tmp, /home/sandbox,
// /mnt/user-data, -v targets, ...), planned without opening anything.
Result<std::set<std::string>> MountPointsOf(const JailSpec& spec);

// Whether `path` or a directory above it (other than /) is one of `mount_points`: if not,
// it lies in the root's tmpfs, read-only once the jail runs, and a working directory there
// gets a tmpfs of its own (as docker run -w makes one in the container's writable layer).
bool PathInsideAMount(const std::set<std::string>& mount_points, const std::string& path);

}  // namespace corral::runtime
