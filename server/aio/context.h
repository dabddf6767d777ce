// What `GET v1/sandbox` reports about a sandbox beyond its spec, read from the host without
// running anything in it (the readiness probe polls this route):
//   - runtimes: the Python and Node.js interpreters in the sandbox's root, as the AIO SDK's
//     ToolSpec {ver, bin, alias}. Python's version is its file name's (python3.11 -> "3.11");
//     Node's comes from node_version.h when the headers are installed, else `ver` is left
//     out (it is optional in the SDK) rather than running `node --version` on every probe.
//   - listening TCP ports of the sandbox's own network namespace (/proc/<init>/net/tcp{,6},
//     state LISTEN), as strings (the SDK's occupied_ports is a list of str). A sandbox that
//     shares the host's network namespace reports none: the host's ports are not its own.
// Paths inside the sandbox are resolved with openat2(RESOLVE_IN_ROOT): a symlink in the
// sandbox cannot point the daemon at a host file.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace corral::server::aio {

// {"python": [ToolSpec...], "nodejs": [ToolSpec...]}
nlohmann::json SandboxRuntimes(pid_t init_pid);

// ["8080", ...], sorted numerically, each port once.
nlohmann::json ListeningPorts(pid_t init_pid, bool own_network_namespace);

}  // namespace corral::server::aio
