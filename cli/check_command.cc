// `corral check [--json]`: probes the host and reports what `corral run` will enforce here.
// Exit code 0 when the default config can run on this host, 1 otherwise.

#include <iostream>

#include "cli/commands.h"
#include "runtime/host/check_report.h"
#include "runtime/host/host_info.h"

namespace corral::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  CLI::App* check =
      app.add_subcommand("check", "what this host supports and what `corral run` will enforce");
  auto json = std::make_shared<bool>(false);
  check->add_flag("--json", *json, "print one JSON object instead of the text report");
  check->callback([json, exit_code] {
    Result<runtime::HostInfo> host = runtime::ProbeHost();
    if (!host) {
      std::cerr << "corral check: probing the host: " << host.error().message() << "\n";
      *exit_code = 1;
      return;
    }
    const bool can_run = runtime::EvaluateHost(*host, runtime::JailSpec{}).can_run;
    if (*json) {
      std::cout << runtime::CheckReportJson(*host).dump(2) << "\n";
    } else {
      std::cout << runtime::FormatCheckReport(*host);
    }
    *exit_code = can_run ? 0 : 1;
  });
}

}  // namespace corral::cli
