// `corral cp SRC NAME:DST` and `corral cp NAME:SRC DST`: files and directories between the
// host and a persistent sandbox, like `docker cp`; `-` is a tar stream on stdin/stdout.
// The work, and the path safety, are runtime::CopyToSandbox/CopyFromSandbox's.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "runtime/sandboxes/copy.h"

namespace corral::cli {

namespace {

struct CpFlags {
  std::string src;
  std::string dst;
};

struct SandboxRef {
  std::string name;
  std::string path;
};

// "NAME:PATH" when NAME could be a sandbox's name ([A-Za-z0-9_-]{1,64}); a host path that
// holds a ':' is given as ./a:b or /abs/a:b.
std::optional<SandboxRef> ParseRef(const std::string& word) {
  size_t colon = word.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 64) return std::nullopt;
  for (size_t i = 0; i < colon; ++i) {
    char c = word[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return std::nullopt;
  }
  return SandboxRef{word.substr(0, colon), word.substr(colon + 1)};
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "corral: cp: %s\n", message.c_str());
  return 125;
}

int Cp(const CpFlags& f) {
  std::optional<SandboxRef> from = ParseRef(f.src);
  std::optional<SandboxRef> to = ParseRef(f.dst);
  if (from && to) {
    return Usage("both SRC and DST are in a sandbox; copy out to the host, then in");
  }
  if (!from && !to) {
    return Usage(
        "one of SRC and DST must be NAME:PATH, a path in a sandbox (a host path "
        "with a ':' is written ./a:b)");
  }
  runtime::CopyRequest request;
  const SandboxRef& ref = from ? *from : *to;
  request.sandbox = ref.name;
  request.sandbox_path = ref.path;
  request.host_path = from ? f.dst : f.src;
  request.stream_fd = from ? 1 : 0;
  Status done = from ? runtime::CopyFromSandbox(request) : runtime::CopyToSandbox(request);
  if (!done) {
    std::fprintf(stderr, "corral: cp: %s\n", done.error().message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void AddCpCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<CpFlags>();
  CLI::App* cp =
      app.add_subcommand("cp",
                         "copy files/directories between the host and a sandbox: cp SRC NAME:DST, "
                         "cp NAME:SRC DST ('-': a tar stream on stdin/stdout)");
  cp->add_option("src", flags->src, "host path, NAME:PATH or -")->required();
  cp->add_option("dst", flags->dst, "host path, NAME:PATH or -")->required();
  cp->callback([flags, exit_code] { *exit_code = Cp(*flags); });
}

}  // namespace corral::cli
