// Id-mapped mounts: a directory whose files belong on disk to one uid/gid, shown inside a
// jail as another's (the kernel's MOUNT_ATTR_IDMAP). A claimed warm sandbox shows its
// thread's directories with the warm sandbox's ids this way (runtime/pool/warm_claim.h),
// and a volume (runtime/volumes/) is shown as the sandbox user's own in every sandbox that
// mounts it, whichever host id that sandbox's user has. Root only.
#pragma once

#include <sys/types.h>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::runtime {

// A user namespace whose maps say: `disk` ids (as the files have them) are `shown` ids, and
// root is root; every other id is unmapped (shown as nobody, and not writable). Its child
// only unshares and waits; the maps are written from here. Nothing else uses the namespace.
Result<UniqueFd> IdmapUserNamespace(uid_t disk_uid, gid_t disk_gid, uid_t shown_uid,
                                    gid_t shown_gid);

// Gives the detached mount tree `tree` (jail::PrepareBindTree, an image's) that id mapping,
// recursively. `what` names the mount in the error.
Status IdmapTree(int tree, uid_t disk_uid, gid_t disk_gid, uid_t shown_uid, gid_t shown_gid,
                 const std::string& what);

}  // namespace corral::runtime
