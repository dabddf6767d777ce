#include "tools/providers/provider_factory.h"

#include "tools/providers/aio_sandbox.h"
#include "tools/providers/jail_sandbox.h"
#include "tools/providers/local_sandbox.h"

namespace corral::runtime {

Result<std::unique_ptr<SandboxProvider>> MakeProvider(const ProviderConfig& config,
                                                      const JailSpec& jail_spec) {
  if (config.use == ProviderKind::kLocal) {
    return std::unique_ptr<SandboxProvider>(new LocalSandboxProvider(config));
  }
  if (config.use == ProviderKind::kAio) {
    return std::unique_ptr<SandboxProvider>(new AioSandboxProvider(config));
  }
  return std::unique_ptr<SandboxProvider>(new JailSandboxProvider(config, jail_spec));
}

}  // namespace corral::runtime
