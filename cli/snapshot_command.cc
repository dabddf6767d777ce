// Snapshots of an overlaid workspace and forks (runtime/sandboxes/workspace_snapshot.h):
// `corral snapshot NAME [TAG]`, `snapshot ls/inspect/rm/budget`, `corral fork NAME NEW`.
// Starting a sandbox from a snapshot is `corral create --from TAG`.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/outcome_report.h"
#include "runtime/sandboxes/workspace_snapshot.h"
#include "runtime/spec/sizes.h"
#include "runtime/volumes/sandbox_fork.h"

namespace corral::cli {

namespace {

struct SnapshotFlags {
  std::vector<std::string> args;  // NAME [TAG], or tags
  std::string tag;                // fork --tag
  std::optional<std::string> budget;
  bool json = false;
};

// NAME-YYYYmmdd-HHMMSS: the tag of a snapshot taken without one.
std::string DefaultSnapshotTag(const std::string& sandbox) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
  return sandbox.substr(0, 40) + "-" + when;
}

int TakeSnapshot(const SnapshotFlags& f) {
  if (f.args.empty() || f.args.size() > 2) {
    return ReportRefusal(Error(ErrorCode::kInvalidArgument,
                               "snapshot: give the sandbox and, if you like, a tag (corral "
                               "snapshot NAME [TAG]; corral snapshot ls lists them)"));
  }
  const std::string tag = f.args.size() == 2 ? f.args[1] : DefaultSnapshotTag(f.args[0]);
  auto snapshot = runtime::SnapshotSandbox(f.args[0], tag);
  if (!snapshot) return ReportRefusal(snapshot.error(), f.json);
  if (f.json) {
    std::cout << runtime::SnapshotJson(*snapshot, runtime::SnapshotUsers(*snapshot)).dump(2)
              << std::endl;
  } else {
    std::printf("%s\n", snapshot->tag.c_str());
  }
  return 0;
}

std::string SnapshotUsersText(const std::vector<std::string>& users) {
  if (users.empty()) return "-";
  std::string text;
  for (const auto& u : users) text += (text.empty() ? "" : ", ") + u;
  return text;
}

int ListSnapshotsCommand(const SnapshotFlags& f) {
  if (Status st = runtime::FinishWorkspaceSnapshots(); !st) return ReportRefusal(st.error());
  std::vector<std::string> unreadable;
  const auto snapshots = runtime::ListSnapshots(&unreadable);
  for (const auto& u : unreadable) std::fprintf(stderr, "corral: %s\n", u.c_str());
  auto budget = runtime::ReadSnapshotBudget();
  if (!budget) return ReportRefusal(budget.error());
  if (f.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : snapshots) {
      list.push_back(runtime::SnapshotJson(s, runtime::SnapshotUsers(s)));
    }
    std::cout << nlohmann::json{{"snapshots", list},
                                {"budget_bytes", budget->budget_bytes},
                                {"used_bytes", budget->used_bytes}}
                     .dump(2)
              << std::endl;
    return 0;
  }
  std::printf("%-28s %-16s %-9s %-7s %-5s %s\n", "TAG", "SANDBOX", "SIZE", "FILES", "DEPTH",
              "USED BY");
  for (const auto& s : snapshots) {
    std::printf("%-28s %-16s %-9s %-7lld %-5zu %s\n", s.tag.c_str(), s.sandbox.c_str(),
                runtime::FormatSize(s.size_bytes).c_str(), static_cast<long long>(s.entries),
                s.layers.size(), SnapshotUsersText(runtime::SnapshotUsers(s)).c_str());
  }
  std::printf("%s of the budget of %s used\n", runtime::FormatSize(budget->used_bytes).c_str(),
              runtime::FormatSize(budget->budget_bytes).c_str());
  return 0;
}

int InspectSnapshots(const SnapshotFlags& f) {
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  for (const auto& tag : f.args) {
    auto snapshot = runtime::ReadSnapshot(tag);
    if (!snapshot) {
      rc = ReportRefusal(snapshot.error());
      continue;
    }
    nlohmann::json j = runtime::SnapshotJson(*snapshot, runtime::SnapshotUsers(*snapshot));
    j["layers"] = snapshot->layers;
    out.push_back(std::move(j));
  }
  std::cout << out.dump(2) << std::endl;
  return rc;
}

// In as many passes as it takes: a snapshot named here that another one named here stands
// on goes once that one has.
int RemoveSnapshots(const SnapshotFlags& f) {
  std::vector<std::string> left = f.args;
  std::vector<Error> errors;
  for (bool progress = true; progress && !left.empty();) {
    progress = false;
    errors.clear();
    std::vector<std::string> again;
    for (const auto& tag : left) {
      if (Status st = runtime::RemoveSnapshot(tag); !st) {
        again.push_back(tag);
        errors.push_back(st.error());
        continue;
      }
      std::printf("%s\n", tag.c_str());
      progress = true;
    }
    left = std::move(again);
  }
  int rc = 0;
  for (const Error& e : errors) rc = ReportRefusal(e);
  return rc;
}

int SnapshotBudgetCommand(const SnapshotFlags& f) {
  if (f.budget) {
    auto bytes = runtime::ParseSize(*f.budget);
    if (!bytes) return ReportRefusal(bytes.error().WithContext("budget " + *f.budget));
    if (Status st = runtime::SetSnapshotBudget(*bytes); !st) return ReportRefusal(st.error());
  }
  auto budget = runtime::ReadSnapshotBudget();
  if (!budget) return ReportRefusal(budget.error());
  if (f.json) {
    std::cout << nlohmann::json{{"budget_bytes", budget->budget_bytes},
                                {"used_bytes", budget->used_bytes}}
                     .dump()
              << std::endl;
  } else {
    std::printf("budget %s, used %s\n", runtime::FormatSize(budget->budget_bytes).c_str(),
                runtime::FormatSize(budget->used_bytes).c_str());
  }
  return 0;
}

struct ForkFlags {
  std::string parent;
  std::string name;
  std::string tag;
  bool json = false;
};

int ForkCommand(const ForkFlags& f) {
  runtime::CreateRequest request;
  request.name = f.name;
  auto fork = runtime::ForkSandbox(f.parent, std::move(request), f.tag);
  if (!fork) return ReportRefusal(fork.error(), f.json);
  if (f.json) {
    std::cout << nlohmann::json{{"sandbox", fork->sandbox.name},
                                {"id", fork->sandbox.id},
                                {"parent", f.parent},
                                {"snapshot", fork->snapshot.tag}}
                     .dump()
              << std::endl;
  } else {
    std::printf("%s\n", fork->sandbox.name.c_str());
  }
  return 0;
}

}  // namespace

void AddSnapshotCommands(CLI::App& app, int* exit_code) {
  auto take_flags = std::make_shared<SnapshotFlags>();
  CLI::App* snapshot = app.add_subcommand(
      "snapshot", "keep a sandbox's workspace as it is now (created with --workspace-overlay)");
  snapshot->add_option("args", take_flags->args, "NAME [TAG] (TAG: default NAME-<utc time>)");
  snapshot->add_flag("--json", take_flags->json, "print the snapshot as `snapshot inspect` does");
  snapshot->footer(
      "No copy is made: the workspace's changes become a read-only layer, and the sandbox goes "
      "on with a new one over it. `corral create --from TAG` and `corral fork` start sandboxes "
      "from it.");

  auto ls_flags = std::make_shared<SnapshotFlags>();
  CLI::App* ls = snapshot->add_subcommand("ls", "list snapshots, their size and users");
  ls->add_flag("--json", ls_flags->json, "{snapshots: [...], budget_bytes, used_bytes}");
  ls->callback([ls_flags, exit_code] { *exit_code = ListSnapshotsCommand(*ls_flags); });

  auto inspect_flags = std::make_shared<SnapshotFlags>();
  CLI::App* inspect = snapshot->add_subcommand("inspect", "snapshots' records and users (JSON)");
  inspect->add_option("tags", inspect_flags->args, "snapshot tags")->required();
  inspect->callback([inspect_flags, exit_code] { *exit_code = InspectSnapshots(*inspect_flags); });

  auto rm_flags = std::make_shared<SnapshotFlags>();
  CLI::App* rm = snapshot->add_subcommand("rm", "remove snapshots (refused while used)");
  rm->add_option("tags", rm_flags->args, "snapshot tags")->required();
  rm->callback([rm_flags, exit_code] { *exit_code = RemoveSnapshots(*rm_flags); });

  auto budget_flags = std::make_shared<SnapshotFlags>();
  CLI::App* budget = snapshot->add_subcommand(
      "budget", "show, or set, the disk space all snapshots may take (default 10G)");
  budget->add_option("size", budget_flags->budget, "a size: 512M, 20G");
  budget->add_flag("--json", budget_flags->json, "{budget_bytes, used_bytes}");
  budget->callback(
      [budget_flags, exit_code] { *exit_code = SnapshotBudgetCommand(*budget_flags); });

  snapshot->callback([snapshot, take_flags, exit_code] {
    for (const CLI::App* sub : snapshot->get_subcommands()) {
      if (sub->parsed()) return;  // ls, inspect, rm, budget: their own callback ran
    }
    *exit_code = TakeSnapshot(*take_flags);
  });

  auto fork_flags = std::make_shared<ForkFlags>();
  CLI::App* fork = app.add_subcommand(
      "fork", "a new sandbox whose workspace starts as another's is now (files, not processes)");
  fork->add_option("name", fork_flags->parent, "the sandbox to fork")->required();
  fork->add_option("new", fork_flags->name, "the new sandbox's name")->required();
  fork->add_option("--tag", fork_flags->tag, "the snapshot both stand on (default NEW-fork)");
  fork->add_flag("--json", fork_flags->json, "{sandbox, id, parent, snapshot}");
  fork->callback([fork_flags, exit_code] { *exit_code = ForkCommand(*fork_flags); });
}

}  // namespace corral::cli
