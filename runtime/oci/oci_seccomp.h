// corral's seccomp profile (seccomp-profiles/*.json or a profile file) in the OCI runtime
// spec's `linux.seccomp` form, for a bundle's config.json. Parent side.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"

namespace corral::runtime::oci {

// `profile` as JailSpec::seccomp_profile names it (default | strict | unconfined |
// /abs/path.json). corral's format is already the OCI/Docker one; what changes:
//   - the profile is checked by corral's own parser first (the same errors as process mode);
//   - rules whose Docker `includes`/`excludes` do not apply here (architecture, running
//     kernel) are dropped, and those keys removed (OCI has no such keys);
//   - `comment` keys and the legacy `name` (-> `names`) are normalised;
//   - `architectures` is the native one only, as corral's own filter is.
// "unconfined": null (no `linux.seccomp` at all).
Result<nlohmann::json> OciSeccomp(const std::string& profile);

}  // namespace corral::runtime::oci
