// The modes of a JailSpec (runtime/spec/spec.h): each a closed set of values, parsed once
// where it is read (the YAML loader, the CLI flags, the JSON of a record) and compared as
// an enum everywhere after, so a typo in a comparison fails to compile instead of quietly
// never matching. Each value's spelling in YAML, JSON and on the command line is its
// Name(); the tables in modes.cc are the one list of what a mode accepts.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::runtime {

// `mode`: corral's own jailer (runtime/run/) or an OCI bundle run by crun/runc (runtime/oci/).
enum class RunMode { kProcess, kContainer };
// `network.mode`: see NetworkSpec.
enum class NetworkMode { kNone, kAllowlist, kHost };
// `cgroups.driver`: auto picks what the host has (runtime/host/host_info.h).
enum class CgroupDriverChoice { kAuto, kV1, kV2 };
// `landlock.enabled`: spelled auto | true | false; kOn refuses to run without Landlock.
enum class LandlockMode { kAuto, kOn, kOff };
// `identity`: see JailSpec::identity.
enum class IdentityMode { kAuto, kReserved, kHostUid };
// `python.scan.mode`: deny (a finding refuses the run) | warn | off.
enum class ScanMode { kDeny, kWarn, kOff };
// `oci_runtime`'s names; kPath is an absolute path, kept beside it (OciRuntimeChoice).
enum class OciRuntimeName { kAuto, kCrun, kRunc, kPath };

// `oci_runtime`: auto | crun | runc | an absolute path to one of them.
struct OciRuntimeChoice {
  OciRuntimeName name = OciRuntimeName::kAuto;
  std::string path;  // kPath only

  bool operator==(const OciRuntimeChoice&) const = default;
};

// The spelling of a value (in YAML, JSON and flags).
std::string_view Name(RunMode m);
std::string_view Name(NetworkMode m);
std::string_view Name(CgroupDriverChoice m);
std::string_view Name(LandlockMode m);
std::string_view Name(IdentityMode m);
std::string_view Name(ScanMode m);
std::string_view Name(OciRuntimeName m);           // "" for kPath
std::string_view Name(const OciRuntimeChoice& c);  // the path for kPath

// The value spelled `text`, or nullopt. Exact spellings only (no case folding).
template <typename E>
std::optional<E> ParseMode(std::string_view text);
// "auto", "crun", "runc", or an absolute path (checked for crun/runc when it is run).
std::optional<OciRuntimeChoice> ParseOciRuntime(std::string_view text);

// The allowed spellings as a sentence: "auto, v1 or v2".
template <typename E>
std::string AllowedModes();

// What is wrong with `text` as a value of E, in Validate()'s words without the key:
// `must be auto, v1 or v2 (got "v3")`, or `must not contain a NUL byte (got "v2\0")`.
// Callers put the key (and file:line, or the flag) in front.
template <typename E>
std::string BadModeText(std::string_view text);
std::string BadOciRuntimeText(std::string_view text);

}  // namespace corral::runtime
