// Plain TCP clients captured on capture addresses (runtime/netproxy/proxy_capture.h): a
// program in the jail that ignores proxy settings resolves an allowed name through
// corral's resolver, gets 127.100.x.y and connects there; corral listens on that address
// for each of the name's capture ports (Policy::CapturePorts) and treats such a
// connection as a client for (name, port): the decision (via "tcp"), then a relay with
// the TLS server name checked against the name.
#pragma once

#include <string>

#include "base/result.h"
#include "runtime/netproxy/proxy_context.h"

namespace corral::runtime::net {

// The name's capture address, with its listeners up (created in the jail's namespace on
// the first call for the name; a failed attempt is retried on the next call). Error when
// no address is left (kMaxCaptureNames) or the listeners could not be made.
Result<IpAddress> EnsureCaptureListeners(ProxyContext& ctx, const std::string& name);

}  // namespace corral::runtime::net
