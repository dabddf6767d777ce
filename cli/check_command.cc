// `corral check [--json] [jail options]`: probes the host and reports what `corral run` with
// those options (or the default config) will enforce here. Exit code 0 when it can run,
// 1 when it would be refused, 2 when the options themselves are wrong.

#include <iostream>

#include "cli/commands.h"
#include "cli/jail_flags.h"
#include "runtime/host/check_report.h"
#include "runtime/host/host_info.h"
#include "runtime/run/identity.h"

namespace corral::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  CLI::App* check = app.add_subcommand(
      "check", "what this host supports and what `corral run` (with these options) will enforce");
  auto json = std::make_shared<bool>(false);
  auto flags = std::make_shared<JailFlags>();
  check->add_flag("--json", *json, "print one JSON object instead of the text report");
  AddJailFlags(check, flags.get());
  check->callback([json, flags, exit_code] {
    runtime::JailSpec spec;
    if (!BuildSpec(*flags, &spec)) {
      *exit_code = 2;
      return;
    }
    Result<runtime::HostInfo> host = runtime::ProbeHost();
    if (!host) {
      std::cerr << "corral check: probing the host: " << host.error().message() << "\n";
      *exit_code = 1;
      return;
    }
    // Who the jail's ids would be on the host (runtime/run/identity.h).
    runtime::IdentityCheck& identity = host->identity.emplace();
    if (auto id = runtime::ResolveIdentity(spec)) {
      identity = {id->mode, id->uid, id->gid, id->note, ""};
    } else {
      identity.error = id.error().message();
    }
    const bool defaults = spec == runtime::JailSpec{};
    const bool can_run = runtime::EvaluateHost(*host, spec).can_run;
    if (*json) {
      std::cout << runtime::CheckReportJson(*host, spec).dump(2) << "\n";
    } else {
      std::cout << runtime::FormatCheckReport(*host, spec,
                                              defaults ? "the default config" : "this config");
    }
    *exit_code = can_run ? 0 : 1;
  });
}

}  // namespace corral::cli
