// A workspace reviewed before it reaches the host (runtime/sandboxes/workspace_overlay.h):
// `corral diff NAME` and `corral commit NAME [--discard]`, for a sandbox created with
// --workspace-overlay.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/outcome_report.h"
#include "runtime/sandboxes/workspace_overlay.h"

namespace corral::cli {

namespace {

struct WorkspaceFlags {
  std::string sandbox;
  bool json = false;
  bool discard = false;
};

int Diff(const WorkspaceFlags& f) {
  auto changes = runtime::DiffWorkspace(f.sandbox);
  if (!changes) return ReportRefusal(changes.error());
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : *changes) {
      out.push_back({{"path", c.path},
                     {"kind", runtime::ChangeName(c.kind)},
                     {"type", std::string(1, c.type)}});
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  for (const auto& c : *changes) {
    std::printf("%s %s%s\n", runtime::ChangeLetter(c.kind), c.path.c_str(),
                c.type == 'd' ? "/" : "");
  }
  return 0;
}

int Commit(const WorkspaceFlags& f) {
  auto done =
      f.discard ? runtime::DiscardWorkspace(f.sandbox) : runtime::CommitWorkspace(f.sandbox);
  if (!done) return ReportRefusal(done.error());
  if (f.json) {
    std::cout << nlohmann::json{{"sandbox", f.sandbox},
                                {"discarded", f.discard},
                                {"written", done->written},
                                {"removed", done->removed}}
                     .dump()
              << std::endl;
  } else {
    std::printf("%s: %zu written, %zu removed%s\n", f.sandbox.c_str(), done->written, done->removed,
                f.discard ? " in the sandbox (its changes dropped)" : "");
  }
  return 0;
}

}  // namespace

void AddWorkspaceCommands(CLI::App& app, int* exit_code) {
  auto diff_flags = std::make_shared<WorkspaceFlags>();
  CLI::App* diff = app.add_subcommand(
      "diff", "what a sandbox changed in its workspace (created with --workspace-overlay)");
  diff->add_option("name", diff_flags->sandbox, "the sandbox")->required();
  diff->add_flag("--json", diff_flags->json, "[{path, kind, type}] instead of A/C/D lines");
  diff->footer(
      "A added, C changed, D deleted, against the host directory; a directory ends in /. A "
      "rename is a D and an A.");
  diff->callback([diff_flags, exit_code] { *exit_code = Diff(*diff_flags); });

  auto commit_flags = std::make_shared<WorkspaceFlags>();
  CLI::App* commit = app.add_subcommand(
      "commit", "write a sandbox's workspace changes to the host directory (or --discard them)");
  commit->add_option("name", commit_flags->sandbox, "the sandbox")->required();
  commit->add_flag("--discard", commit_flags->discard,
                   "drop the changes instead: the sandbox sees the host directory again");
  commit->add_flag("--json", commit_flags->json, "{sandbox, discarded, written, removed}");
  commit->callback([commit_flags, exit_code] { *exit_code = Commit(*commit_flags); });
}

}  // namespace corral::cli
