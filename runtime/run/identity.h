// Who the jail's uid/gid are on the host in root mode (issue 17, part 4).
//
// Without a user namespace the jail's uid 1000 is host uid 1000, which is a real account
// on many hosts (the first user Debian creates): host `ps` shows the sandbox's processes
// under that name, and whoever holds it can signal or trace them and owns what they write.
// So, where the host has a reserved range (a `corral:START:COUNT` line in both /etc/subuid
// and /etc/subgid, written by `corral setup ids`) and user namespaces, a root-mode jail
// gets a user namespace mapped as
//   jail 0    -> host 0            the jail's setup and init: capabilities only in the
//                                  namespace; root-owned files in the jail stay root's
//   jail 1000 -> host START+slot   the command: an id no account has
// and nothing else (every other host id is `nobody` in the jail).
//
// The slot is stable for what a sandbox keeps on the host: the user_data_dir (a DeerFlow
// thread's directory) when there is one, else a persistent sandbox's name; one-shot runs
// without either share slot 0. Slots come from a hash (FNV-1a) of that key, not from a
// table: nothing to store, lock or lose, and the daemon and the CLI agree without talking.
// Two keys can share a slot (1 - e^(-n^2/2(COUNT-1)): about 1 % for 36 live threads with the
// default 65536); they are still apart in every namespace and cgroup, and see only their
// own mounts: what they share is the host id, as every sandbox shared uid 1000 before.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "jail/plan.h"
#include "jail/user_ns.h"
#include "runtime/run/outcome.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// The name of corral's line in /etc/subuid and /etc/subgid (no account of that name is
// needed: root writes the maps itself, newuidmap is never asked).
inline constexpr const char* kReservedRangeName = "corral";
// Above systemd-nspawn's container ranges (524288..1879048191) and below 2^31 (tools
// that read ids as signed numbers): 0x70000000.
inline constexpr uint32_t kDefaultReservedStart = 1879048192;
inline constexpr uint32_t kDefaultReservedCount = 65536;

// Where the id databases are (tests point these at fake files).
struct IdFiles {
  std::string subuid = "/etc/subuid";
  std::string subgid = "/etc/subgid";
  std::string passwd = "/etc/passwd";
  std::string group = "/etc/group";
};

struct ReservedRange {
  jail::SubordinateRange uids;
  jail::SubordinateRange gids;
};

// corral's ranges in the texts of /etc/subuid and /etc/subgid; nullopt unless both have one.
std::optional<ReservedRange> FindReservedRange(const std::string& subuid_text,
                                               const std::string& subgid_text);

// Refuses a range that holds an id some account or group has (passwd/group texts), or that
// overlaps another entry of the subid texts (someone else's containers), naming it.
Status CheckRangeFree(const ReservedRange& range, const IdFiles& files);

// 0 for an empty key (one-shot runs share it), else 1 + FNV-1a(key) % (count - 1).
uint32_t SlotFor(const std::string& key, uint32_t count);

// The slot's key: a claimed warm sandbox's identity_claimed_key; else the user_data_dir
// (lexically normalized) when set, else identity_key.
std::string IdentityKeyOf(const JailSpec& spec);

struct HostIdentity {
  std::string mode;  // "reserved", "host-uid" or "rootless"
  uid_t uid = 0;     // the host ids that spec.uid / spec.gid are
  gid_t gid = 0;
  uint32_t slot = 0;  // reserved only
  std::string note;   // why host-uid when the spec said auto
};

// From the spec and the id files. identity: reserved without a usable range is an error,
// as is a range that overlaps an account (auto too: the line says the operator meant it).
Result<HostIdentity> ResolveIdentity(const JailSpec& spec, const IdFiles& files = IdFiles());

// What a persistent sandbox's record keeps (corral create, a claimed warm sandbox): the
// key of its slot (its name; a user_data_dir, when set, is the key instead) and the mode
// its identity resolved to, so that its execs and host-side file access keep the ids its
// init got even if a range is reserved (or the config changes) while it runs.
Status PinIdentity(const std::string& sandbox_name, JailSpec* spec);

// For the outcome JSON; unset when the identity cannot be resolved (the run fails then).
std::optional<IdentityOutcome> IdentityOutcomeFor(const JailSpec& spec);

// The user namespace of a root-mode jail with a reserved identity (see the top).
jail::UserNamespacePlan ReservedUserNamespace(const JailSpec& spec, const HostIdentity& id);

// `corral setup ids`: adds corral's line to /etc/subuid and /etc/subgid (under shadow's
// lock files, replacing each file by rename) unless both have it; never moves an existing
// reservation. Returns what it did, for the user.
Result<std::string> ReserveRange(std::optional<uint32_t> start, std::optional<uint32_t> count,
                                 const IdFiles& files = IdFiles());

// `corral setup ids --remove`: drops corral's lines from both files, under the same locks.
// Files written under the range keep their owners. Returns what it did, for the user.
Result<std::string> ReleaseRange(const IdFiles& files = IdFiles());

}  // namespace corral::runtime
