// The body of POST /api/sandboxes (docs/deerflow-contract.md §7), parsed and checked the
// way DeerFlow's reference provisioner does: 422 with a pydantic-like {"detail": [...]} for a
// body that is not the schema (bad JSON, a missing or mistyped field, an id off its
// pattern), 400 {"detail": "<reason>"} for a bad extra mount. Pure apart from the
// filesystem look-ups of the mount checks; unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace corral::server {

// The container paths DeerFlow's client forwards (and the reference server accepts).
inline constexpr const char* kAllowedExtraMountTargets[] = {
    "/mnt/acp-workspace",
    "/mnt/skills/custom",
    "/mnt/skills/integrations",
    "/mnt/integrations/lark-cli/config",
    "/mnt/integrations/lark-cli/config/locks",
    "/mnt/integrations/lark-cli/data",
    "/mnt/integrations/lark-cli/runtime",
};
inline constexpr size_t kMaxExtraMounts = 10;

struct ExtraMount {
  std::string host_path;
  std::string container_path;
  bool read_only = true;
  bool operator==(const ExtraMount&) const = default;
};

struct CreateParams {
  std::string sandbox_id;
  std::optional<std::string> thread_id;  // null: an anonymous sandbox
  std::string user_id = "default";
  bool include_legacy_skills = false;
  bool provision_lark_cli_runtime = false;
  bool provision_lark_cli_broker = false;
  std::vector<ExtraMount> extra_mounts;
};

struct RequestError {
  int status = 400;
  nlohmann::json body;  // {"detail": ...}
};

// "" when `id` can be a sandbox id ([A-Za-z0-9_-]{1,64}), else why not, for a 4xx.
std::string SandboxIdProblem(std::string_view id);

// `base_dir`: sandbox.base_dir; every extra mount's host path must lie under it (after
// resolving: no symlink anywhere in it), be absolute and normalized, and exist unless
// read-write (the daemon creates a missing read-write one, as DirectoryOrCreate does).
std::variant<CreateParams, RequestError> ParseCreateRequest(std::string_view body,
                                                            const std::string& base_dir);

}  // namespace corral::server
