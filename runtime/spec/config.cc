#include "runtime/spec/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>

#include "base/files.h"
#include "runtime/spec/config_design.h"
#include "runtime/spec/config_network.h"
#include "runtime/spec/config_python.h"
#include "runtime/spec/config_schema.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/server_config.h"
#include "runtime/spec/utf8_text.h"
#include "runtime/spec/yaml_documents.h"

namespace corral::runtime {
namespace {

using namespace config_schema;  // NOLINT: the loader is written in its terms

// ---- The schema. New top-level sections go in TopLevel. ----

const Table<MountSpec>& MountTable() {
  static const Table<MountSpec> table = {
      // One of host_path and volume (Validate says which is missing).
      StringKey("host_path", &MountSpec::host_path),
      StringKey("volume", &MountSpec::volume),
      StringKey("container_path", &MountSpec::container_path, /*required=*/true),
      BoolKey("read_only", &MountSpec::read_only),
  };
  return table;
}

const Table<JailSpec>& UserTable() {
  static const Table<JailSpec> table = {IdKey("uid", &JailSpec::uid), IdKey("gid", &JailSpec::gid)};
  return table;
}

const Table<NamespaceSpec>& NamespaceTable() {
  static const Table<NamespaceSpec> table = {
      BoolKey("pid", &NamespaceSpec::pid),       BoolKey("uts", &NamespaceSpec::uts),
      BoolKey("ipc", &NamespaceSpec::ipc),       BoolKey("net", &NamespaceSpec::net),
      BoolKey("cgroup", &NamespaceSpec::cgroup),
  };
  return table;
}

const Table<JailSpec>& SeccompTable() {
  static const Table<JailSpec> table = {StringKey("profile", &JailSpec::seccomp_profile)};
  return table;
}

const Table<LimitsSpec>& LimitsTable() {
  static const Table<LimitsSpec> table = {
      SizeKey("memory", &LimitsSpec::memory_bytes),
      NumberKey("cpus", &LimitsSpec::cpus, 0, /*exclusive=*/true),
      IntKey("pids", &LimitsSpec::pids, 1),
      NumberKey("timeout", &LimitsSpec::timeout_seconds, 0, /*exclusive=*/false),
      OptionalIntKey("cpu_time", &LimitsSpec::cpu_time_seconds, 1),
      SizeKey("output", &LimitsSpec::output_limit_bytes),
      SizeKey("tmp_size", &LimitsSpec::tmp_size_bytes),
      SizeKey("file_size", &LimitsSpec::file_size_bytes),
      IntKey("open_files", &LimitsSpec::open_files, 1),
      NumberKey("kill_grace", &LimitsSpec::kill_grace_seconds, 0, /*exclusive=*/false),
  };
  return table;
}

const Table<CgroupSpec>& CgroupTable() {
  static const Table<CgroupSpec> table = {ModeKey("driver", &CgroupSpec::driver),
                                          StringKey("parent", &CgroupSpec::parent)};
  return table;
}

const Table<UnsafeSpec>& UnsafeTable() {
  static const Table<UnsafeSpec> table = {
      BoolKey("allow_root", &UnsafeSpec::allow_root),
      BoolKey("allow_missing_limits", &UnsafeSpec::allow_missing_limits),
      BoolKey("allow_unconfined_seccomp", &UnsafeSpec::allow_unconfined_seccomp),
      BoolKey("host_network", &UnsafeSpec::host_network),
      NetworkResolveKey(),
      // `corral serve` without an API key; checked here, read by LoadServerConfigFile.
      {"no_auth",
       [](const YAML::Node& n, const Where& w, Reader& r, UnsafeSpec&) {
         bool v;
         (void)r.Bool(n, w, &v);
       }},
  };
  return table;
}

// `landlock.enabled`: auto or a YAML boolean (true/True/TRUE, false/...), unquoted as a
// boolean key takes it; the spelling in JSON and `config explain` is Name()'s.
Rule<LandlockSpec> LandlockEnabledKey() {
  return {"enabled", [](const YAML::Node& n, const Where& w, Reader& r, LandlockSpec& l) {
            static const std::set<std::string> kTrue = {"true", "True", "TRUE"};
            static const std::set<std::string> kFalse = {"false", "False", "FALSE"};
            const std::string text = n.IsScalar() && !IsQuoted(n) ? n.Scalar() : "";
            if (text == "auto") {
              l.enabled = LandlockMode::kAuto;
            } else if (kTrue.count(text) > 0) {
              l.enabled = LandlockMode::kOn;
            } else if (kFalse.count(text) > 0) {
              l.enabled = LandlockMode::kOff;
            } else {
              r.Report(w, "expected " + AllowedModes<LandlockMode>() + ", got " + Describe(n));
            }
          }};
}

// `oci_runtime`: a mode's names or an absolute path (runtime/spec/modes.h).
Rule<JailSpec> OciRuntimeKey() {
  return {"oci_runtime", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec& spec) {
            std::string v;
            if (!r.String(n, w, &v)) return;
            if (std::optional<OciRuntimeChoice> choice = ParseOciRuntime(v)) {
              spec.oci_runtime = *choice;
            } else {
              r.Report(w, BadOciRuntimeText(v));
            }
          }};
}

const Table<LandlockSpec>& LandlockTable() {
  static const Table<LandlockSpec> table = {
      LandlockEnabledKey(),
      BoolKey("tcp", &LandlockSpec::tcp),
      StringListKey("omit", &LandlockSpec::omit),
  };
  return table;
}

// DeerFlow's `skills:` section configures the tool layer (runtime/spec/provider_config.h,
// read by `corral tool`), as does its `sandbox:` (SandboxSectionKey, which also reads the
// process-sandbox design's `sandbox:`). A jail accepts it so that one file configures both,
// and still checks it, so a typo there is not silently ignored.
Rule<JailSpec> SkillsSectionKey() {
  return {"skills", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec&) {
            ProviderConfig scratch;
            Status st = LoadProviderConfig(YAML::Node(), n, &scratch);
            if (!st) r.Report(w, st.error().message());
          }};
}

// `server:` configures `corral serve` (runtime/spec/server_config.h); checked here too.
Rule<JailSpec> ServerSectionKey() {
  return {"server", [](const YAML::Node& n, const Where& w, Reader& r, JailSpec&) {
            ServerConfig scratch;
            if (Status st = LoadServerConfig(n, &scratch); !st) r.Report(w, st.error().message());
          }};
}

const Table<JailSpec>& TopLevel() {
  static const Table<JailSpec> table = {
      OptionalStringKey("rootfs", &JailSpec::rootfs),
      StringKey("hostname", &JailSpec::hostname),
      BoolKey("rootless", &JailSpec::rootless),
      RuntimeModeKey(),  // process | container (runtime/spec/config_design.h)
      OciRuntimeKey(),
      ModeKey("identity", &JailSpec::identity),
      SectionKey("user", UserTable()),
      OptionalStringKey("workdir", &JailSpec::workdir),
      BoolKey("workspace_overlay", &JailSpec::workspace_overlay),
      StringMapKey("env", &JailSpec::env),
      SectionKey("namespaces", &JailSpec::namespaces, NamespaceTable()),
      OptionalStringKey("skills_dir", &JailSpec::skills_dir),
      OptionalStringKey("user_data_dir", &JailSpec::user_data_dir),
      OptionalStringKey("acp_workspace_dir", &JailSpec::acp_workspace_dir),
      ListKey("mounts", &JailSpec::mounts, MountTable()),
      SectionKey("seccomp", SeccompTable()),
      SectionKey("limits", &JailSpec::limits, LimitsTable()),
      SectionKey("cgroups", &JailSpec::cgroups, CgroupTable()),
      NetworkSectionKey(),
      SectionKey("landlock", &JailSpec::landlock, LandlockTable()),
      SectionKey("unsafe", &JailSpec::unsafe, UnsafeTable()),
      PythonSectionKey(),
      SandboxSectionKey(),
      SkillsSectionKey(),
      ServerSectionKey(),
  };
  return table;
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Result<uint32_t> ParseId(const std::string& text, const std::string& flag) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > kMaxId) {
    return Error(ErrorCode::kInvalidArgument,
                 "user " + Quote(flag) + ": expected UID[:GID] with decimal ids below " +
                     std::to_string(kMaxId + 1ull) + ", got " + Quote(text));
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

Status LoadConfigText(const std::string& yaml, const std::string& origin, JailSpec* spec) {
  ASSIGN_OR_RETURN(const YAML::Node doc, LoadYamlDocument(yaml, origin));
  return LoadConfigDocument(doc, origin, spec);
}

Status LoadConfigDocument(const YAML::Node& doc, const std::string& origin, JailSpec* spec) {
  Reader reader;
  try {
    if (doc.IsDefined() && !doc.IsNull()) {
      // The design's shape brings its own defaults, under whatever the file sets.
      const bool design = doc.IsMap() && IsDesignSandbox(doc["sandbox"]);
      if (design) ApplyDesignDefaults(*spec);
      ApplyTable(TopLevel(), doc, Where{}, reader, *spec);
      if (design) {
        FinishDesignSandbox(doc, reader, *spec);  // reconciles the network too
      } else {
        ReconcileHostNetwork(doc, reader, *spec);
      }
    }
  } catch (const YAML::Exception& e) {
    // The readers check node types before converting, so this is a bug, not bad input.
    return Error(ErrorCode::kInternal, origin + ": reading config: " + e.what());
  }
  if (reader.problems().empty()) {
    for (const std::string& note : reader.notes()) {
      std::fprintf(stderr, "corral: note: %s:%s\n", origin.c_str(), note.c_str());
    }
    return Ok();
  }
  std::string message;
  for (const std::string& problem : reader.problems()) {
    message += (message.empty() ? "" : "\n") + origin + ":" + problem;
  }
  return Error(ErrorCode::kInvalidArgument, message);
}

Status LoadConfigFile(const std::string& path, JailSpec* spec) {
  Result<std::string> text = ReadFile(path);
  if (!text) return text.error().WithContext("reading config");
  return LoadConfigText(*text, path, spec);
}

std::vector<std::string> ConfigKeyPaths() { return KeyPaths(TopLevel()); }

Result<MountSpec> ParseMountFlag(const std::string& flag) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = flag.find(':', start)) != std::string::npos; start = colon + 1) {
    parts.push_back(flag.substr(start, colon - start));
  }
  parts.push_back(flag.substr(start));
  const bool mode_ok =
      parts.size() == 2 || (parts.size() == 3 && (parts[2] == "ro" || parts[2] == "rw"));
  if (!mode_ok || parts[0].empty() || parts[1].empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        "mount " + Quote(flag) + ": expected HOST:CONTAINER[:ro|rw], e.g. /srv/data:/data:ro");
  }
  MountSpec m;
  m.host_path = parts[0];
  m.container_path = parts[1];
  m.read_only = parts.size() == 2 || parts[2] == "ro";
  return m;
}

bool IsValidVolumeName(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

Result<MountSpec> ParseVolumeFlag(const std::string& flag) {
  const size_t colon = flag.find(':');
  const std::string name = flag.substr(0, colon);
  std::string target = colon == std::string::npos ? "" : flag.substr(colon + 1);
  bool read_only = false;
  if (target.ends_with(":ro") || target.ends_with(":rw")) {
    read_only = target.ends_with(":ro");
    target.resize(target.size() - 3);
  }
  if (name.empty() || target.empty() || target.find(':') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume " + Quote(flag) + ": expected NAME:CONTAINER[:ro|rw], e.g. data:/data");
  }
  if (!IsValidVolumeName(name)) {
    return Error(ErrorCode::kInvalidArgument,
                 "volume " + Quote(flag) + ": the name " + kVolumeNameRule);
  }
  MountSpec m;
  m.volume = name;
  m.container_path = target;
  m.read_only = read_only;
  return m;
}

Result<std::pair<std::string, std::string>> ParseEnvFlag(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 "env " + Quote(flag) + ": expected NAME=VALUE (VALUE may be empty)");
  }
  std::string name = flag.substr(0, eq);
  if (!IsEnvName(name)) {
    return Error(
        ErrorCode::kInvalidArgument,
        "env " + Quote(flag) + ": NAME must match [A-Za-z_][A-Za-z0-9_]*, got " + Quote(name));
  }
  return std::make_pair(std::move(name), flag.substr(eq + 1));
}

Result<std::pair<uint32_t, uint32_t>> ParseUserFlag(const std::string& flag) {
  const size_t colon = flag.find(':');
  ASSIGN_OR_RETURN(uint32_t uid, ParseId(flag.substr(0, colon), flag));
  uint32_t gid = uid;
  if (colon != std::string::npos) {
    ASSIGN_OR_RETURN(gid, ParseId(flag.substr(colon + 1), flag));
  }
  return std::make_pair(uid, gid);
}

}  // namespace corral::runtime
