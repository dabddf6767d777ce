// Entry point of corral_probe: dispatches argv[1] to a command (see probe.h).
#include <cstring>

#include "tests/probe/json_writer.h"
#include "tests/probe/probe.h"

namespace corral::probe {
namespace {

struct Command {
  const char* name;
  int (*fn)(const Args&);
  const char* usage;
};

constexpr Command kCommands[] = {
    {"report", CmdReport, "report: ids, caps, mounts, fds, env, net, pids, cgroup"},
    {"try-syscalls", CmdTrySyscalls, "try-syscalls: result of each dangerous syscall"},
    {"int80", CmdInt80, "int80: getpid through int $0x80 (expect SIGSYS)"},
    {"x32", CmdX32, "x32: getpid with the x32 bit set (expect SIGSYS)"},
    {"read-paths", CmdReadPaths, "read-paths PATH...: read each file, list each directory"},
    {"try-sockets", CmdTrySockets, "try-sockets: socket() of each family and netlink protocol"},
    {"write", CmdWrite, "write PATH: create and write a file"},
    {"read", CmdRead, "read PATH: read a file"},
    {"kill", CmdKill, "kill PID [SIG]: kill(PID, SIG), SIG defaults to 0"},
    {"setuid-test", CmdSetuidTest, "setuid-test PATH: exec PATH report (a setuid copy)"},
    {"exit", CmdExit, "exit N: exit with status N"},
    {"sleep", CmdSleep, "sleep SECONDS"},
    {"fd-count", CmdFdCount, "fd-count: number of open fds"},
    {"alloc", CmdAlloc, "alloc MB: allocate and touch MB MiB"},
    {"forkbomb", CmdForkbomb, "forkbomb [MAX] [CHILD_SECONDS]: fork until refused"},
    {"spin", CmdSpin, "spin SECONDS: burn CPU"},
    {"flood", CmdFlood, "flood BYTES: write BYTES to stdout (summary on stderr)"},
    {"daemon", CmdDaemon, "daemon [SECONDS]: setsid + double fork a sleeper"},
    {"ignore-term", CmdIgnoreTerm, "ignore-term SECONDS: ignore SIGTERM and sleep"},
};

int Help() {
  JsonWriter j;
  j.BeginObject().Key("commands").BeginArray();
  for (const Command& c : kCommands) j.String(c.usage);
  j.EndArray().EndObject();
  PrintJson(j);
  return 0;
}

}  // namespace
}  // namespace corral::probe

int main(int argc, char** argv) {
  using namespace corral::probe;
  if (argc < 2 || strcmp(argv[1], "help") == 0) return argc < 2 ? (Help(), 2) : Help();
  Args args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (strcmp(argv[1], c.name) == 0) return c.fn(args);
  }
  return UsageError(std::string("unknown command: ") + argv[1]);
}
