// The one place that knows every provider: MakeProvider picks the one `config.use` names.
// Apart from the base class (sandbox_provider.h), which each provider includes, so that the
// base never includes its subclasses.
#pragma once

#include <memory>

#include "base/result.h"
#include "runtime/spec/provider_config.h"
#include "runtime/spec/spec.h"
#include "tools/providers/sandbox_provider.h"

namespace corral::runtime {

// The provider `config.use` names: local, jail or aio. `jail_spec` is the base of every jail
// sandbox (limits, seccomp, namespaces from the main config); the jail provider adds the
// thread's mounts.
Result<std::unique_ptr<SandboxProvider>> MakeProvider(const ProviderConfig& config,
                                                      const JailSpec& jail_spec);

}  // namespace corral::runtime
