// systemd readiness (Type=notify): READY=1 once listening, STOPPING=1 at SIGTERM, when
// $NOTIFY_SOCKET is set. libsystemd is loaded with dlopen("libsystemd.so.0") at serve time
// and never linked: corral-cli is the program behind every `corral run`, and linking
// libsystemd (and what it pulls in) would cost every run its start-up time. Without the
// library, or without $NOTIFY_SOCKET, these do nothing.
#pragma once

#include <string>

namespace corral::server {

// Returns false when a notification was wanted ($NOTIFY_SOCKET set) but could not be sent.
bool SdNotify(const std::string& state);

}  // namespace corral::server
