// `corral serve [--config FILE] [--listen ADDR] [--allow-remote]`: the daemon an agent
// framework talks to over HTTP (server/README.md). Everything happens in server/daemon.h.
#include "cli/commands.h"
#include "server/daemon.h"

namespace corral::cli {

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<server::ServeOptions>();
  auto listen = std::make_shared<std::string>();
  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the provisioner and AIO sandbox HTTP APIs (DeerFlow's remote sandboxes)");
  serve->add_option("--config", o->config_path,
                    "YAML config file (server:, sandbox:, skills: and jail keys)");
  serve->add_option("--listen", *listen,
                    "IP:PORT or unix:/PATH (default: server.listen, 127.0.0.1:8002)");
  serve->add_flag("--allow-remote", o->allow_remote,
                  "allow a non-loopback listen address (same as server.allow_remote: true)");
  serve->callback([o, listen, exit_code] {
    if (!listen->empty()) o->listen = *listen;
    *exit_code = server::RunServe(*o);
  });
}

}  // namespace corral::cli
