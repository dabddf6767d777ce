// corral_probe: run inside a jail by the integration tests; reports what it sees as one JSON
// object on stdout, or performs a resource action on request. Usage:
//   corral_probe <command> [args...]      (corral_probe help lists the commands)
//
// Each Cmd* function is one command. It receives the arguments after the command name,
// prints its JSON and returns the process exit code (0 unless the command says otherwise;
// 2 for a usage error). Commands that must not be run in-process (syscalls that change the
// probe's own state) run in a forked child.
#pragma once

#include <string>
#include <vector>

namespace corral::probe {

using Args = std::vector<std::string>;

// report.cc
int CmdReport(const Args& args);

// try_syscalls.cc
int CmdTrySyscalls(const Args& args);
int CmdInt80(const Args& args);
int CmdX32(const Args& args);

// surface.cc
int CmdReadPaths(const Args& args);
int CmdTrySockets(const Args& args);

// actions.cc
int CmdWrite(const Args& args);
int CmdRead(const Args& args);
int CmdKill(const Args& args);
int CmdSetuidTest(const Args& args);
int CmdExit(const Args& args);
int CmdSleep(const Args& args);
int CmdFdCount(const Args& args);

// resources.cc
int CmdAlloc(const Args& args);
int CmdForkbomb(const Args& args);
int CmdSpin(const Args& args);
int CmdFlood(const Args& args);
int CmdDaemon(const Args& args);
int CmdIgnoreTerm(const Args& args);

// Helpers shared by the commands (util.cc).

// Reads a whole file (procfs files report size 0, so this reads until EOF). Returns 0 or
// the errno of the failing call.
int ReadWholeFile(const std::string& path, std::string* out);
// Parses a non-negative decimal number; false if `s` is not one.
bool ParseNumber(const std::string& s, long long* out);
// Prints {"error":"usage","message":...} and returns 2.
int UsageError(const std::string& message);
// Sleeps `seconds` of wall time, resuming after signals.
void SleepSeconds(double seconds);

}  // namespace corral::probe
