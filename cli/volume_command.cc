// Named volumes: `corral volume create/ls/inspect/rm` (runtime/volumes/). Mounting one is
// `--volume NAME:/path` (or `-v NAME:/path`) of run and create.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/human_units.h"
#include "cli/outcome_report.h"
#include "runtime/spec/sizes.h"
#include "runtime/volumes/volume_info.h"

namespace corral::cli {

namespace {

struct VolumeFlags {
  std::vector<std::string> names;
  std::optional<std::string> size;
  bool json = false;
  bool quiet = false;
  bool force = false;
};

int Create(const VolumeFlags& f) {
  std::optional<int64_t> size;
  if (f.size) {
    auto parsed = runtime::ParseSize(*f.size);
    if (!parsed) return ReportRefusal(parsed.error().WithContext("--size " + *f.size));
    size = *parsed;
  }
  auto store = runtime::VolumeStore::Open();
  if (!store) return ReportRefusal(store.error());
  auto record = store->Create(f.names.front(), size);
  if (!record) return ReportRefusal(record.error());
  if (f.json) {
    auto info = runtime::InspectVolume(record->name);
    if (!info) return ReportRefusal(info.error());
    std::cout << runtime::VolumeInfoJson(*info).dump(2) << std::endl;
  } else {
    std::printf("%s\n", record->name.c_str());
  }
  return 0;
}

std::string UsersText(const runtime::VolumeInfo& info) {
  if (info.users.empty()) return "-";
  std::string text;
  for (const auto& u : info.users) text += (text.empty() ? "" : ", ") + u.what;
  return text;
}

int Ls(const VolumeFlags& f) {
  std::vector<runtime::UnreadableVolume> unreadable;
  const bool usage = !f.quiet;
  std::vector<runtime::VolumeInfo> volumes = runtime::ListVolumes(usage, &unreadable);
  for (const auto& u : unreadable) {
    std::fprintf(stderr, "corral: %s%s\n", u.name.empty() ? "" : (u.name + ": ").c_str(),
                 u.why.c_str());
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : volumes) out.push_back(runtime::VolumeInfoJson(v));
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  if (f.quiet) {
    for (const auto& v : volumes) std::printf("%s\n", v.record.name.c_str());
    return 0;
  }
  std::printf("%-24s %-10s %-9s %-9s %s\n", "NAME", "KIND", "SIZE", "USED", "MOUNTED BY");
  for (const auto& v : volumes) {
    const auto& r = v.record;
    std::printf("%-24s %-10s %-9s %-9s %s\n", r.name.c_str(), r.size_bytes ? "image" : "directory",
                r.size_bytes ? Size(*r.size_bytes).c_str() : "-",
                v.usage ? Size(v.usage->bytes).c_str() : "-", UsersText(v).c_str());
  }
  return 0;
}

int Inspect(const VolumeFlags& f) {
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  for (const auto& name : f.names) {
    auto info = runtime::InspectVolume(name);
    if (!info) {
      rc = ReportRefusal(info.error());
      continue;
    }
    out.push_back(runtime::VolumeInfoJson(*info));
  }
  std::cout << out.dump(2) << std::endl;
  return rc;
}

int Rm(const VolumeFlags& f) {
  int rc = 0;
  for (const auto& name : f.names) {
    if (Status st = runtime::RemoveVolume(name, f.force); !st) {
      rc = ReportRefusal(st.error());
      continue;
    }
    std::printf("%s\n", name.c_str());
  }
  return rc;
}

}  // namespace

void AddVolumeCommands(CLI::App& app, int* exit_code) {
  CLI::App* volume = app.add_subcommand(
      "volume", "named volumes: host directories corral owns, which outlive sandboxes");
  volume->require_subcommand(1);

  auto create_flags = std::make_shared<VolumeFlags>();
  CLI::App* create = volume->add_subcommand("create", "make a volume");
  create->add_option("name", create_flags->names, "the volume's name")->required()->expected(1);
  create->add_option("--size", create_flags->size,
                     "bound its size (e.g. 1G): an ext4 image of that size, mounted through a "
                     "loop device (root only); without it, a directory");
  create->add_flag("--json", create_flags->json, "print the new volume as `volume inspect` does");
  create->callback([create_flags, exit_code] { *exit_code = Create(*create_flags); });

  auto ls_flags = std::make_shared<VolumeFlags>();
  CLI::App* ls = volume->add_subcommand("ls", "list volumes, their size, use and users");
  ls->alias("list");
  ls->add_flag("--json", ls_flags->json, "one JSON array, as `volume inspect` gives each");
  ls->add_flag("-q,--quiet", ls_flags->quiet, "names only (and no walk of the data)");
  ls->callback([ls_flags, exit_code] { *exit_code = Ls(*ls_flags); });

  auto inspect_flags = std::make_shared<VolumeFlags>();
  CLI::App* inspect = volume->add_subcommand("inspect", "a volume's record, use and users (JSON)");
  inspect->add_option("names", inspect_flags->names, "volume names")->required();
  inspect->callback([inspect_flags, exit_code] { *exit_code = Inspect(*inspect_flags); });

  auto rm_flags = std::make_shared<VolumeFlags>();
  CLI::App* rm = volume->add_subcommand("rm", "remove volumes (refused while mounted)");
  rm->alias("remove");
  rm->add_option("names", rm_flags->names, "volume names")->required();
  rm->add_flag("-f,--force", rm_flags->force,
               "remove it even while mounted: its files go now; the sandboxes that mount it "
               "keep what they have open");
  rm->callback([rm_flags, exit_code] { *exit_code = Rm(*rm_flags); });
}

}  // namespace corral::cli
