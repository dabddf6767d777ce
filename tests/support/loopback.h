// TCP on the host's 127.0.0.1 for tests that run a server of their own there.
#pragma once

#include <cstdint>

namespace corral::test {

// A port nothing listens on right now (bound once, then released).
uint16_t FreeLoopbackPort();

// Does something accept connections on 127.0.0.1:port?
bool LoopbackAccepts(uint16_t port);

// Waits up to ~5 s for LoopbackAccepts(port).
bool WaitForLoopbackListener(uint16_t port);

}  // namespace corral::test
