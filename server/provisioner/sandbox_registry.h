// What the daemon remembers of each sandbox it made, on disk, so that a restarted daemon
// (also after kill -9) serves the same sandboxes under the same URLs:
//   <dir>/lock                  flock held by the running daemon (one daemon per dir)
//   <dir>/sandboxes/<id>.json   one RegistryEntry, written atomically (temp + rename)
// <dir> is <runtime dir>/serve (/run/corral/serve, or $CORRAL_RUNTIME_DIR/serve): mode
// 0700, files 0600, root's. One file per sandbox keeps create and delete O(1) however many
// sandboxes there are. The entries hold the URL tokens: nothing here is ever logged.
// Thread-safe (each call touches one file). Parent side.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::server {

struct RegistryEntry {
  std::string sandbox_id;   // DeerFlow's id
  std::string corral_name;  // the persistent corral sandbox
  std::string token;        // the sandbox_url's secret
  std::string user_id;
  std::optional<std::string> thread_id;  // nullopt: anonymous
  std::string user_data;                 // host directory mounted at /mnt/user-data
  double created_at = 0;                 // unix seconds
  bool operator==(const RegistryEntry&) const = default;
};

nlohmann::json EntryToJson(const RegistryEntry& entry);
// kInvalidArgument naming the bad field.
Result<RegistryEntry> EntryFromJson(const nlohmann::json& json);

class SandboxRegistry {
 public:
  // Creates <dir> (0700) and takes its lock; kAlreadyExists when another daemon holds it.
  static Result<SandboxRegistry> Open(const std::string& dir);

  Status Save(const RegistryEntry& entry) const;
  Status Remove(const std::string& sandbox_id) const;
  // Every entry on disk. Unreadable or malformed files are skipped and named in *problems.
  std::vector<RegistryEntry> Load(std::vector<std::string>* problems) const;

  const std::string& dir() const { return dir_; }

 private:
  SandboxRegistry(std::string dir, UniqueFd lock) : dir_(std::move(dir)), lock_(std::move(lock)) {}
  std::string PathOf(const std::string& sandbox_id) const;
  std::string dir_;
  UniqueFd lock_;
};

}  // namespace corral::server
