#include "cli/runc/features.h"

#include <sys/capability.h>

#include <iostream>
#include <nlohmann/json.hpp>

namespace corral::runc_cli {

namespace {

nlohmann::json CapabilityNames() {
  nlohmann::json names = nlohmann::json::array();
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    char* name = cap_to_name(cap);
    if (name == nullptr) continue;
    std::string upper = name;
    cap_free(name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    names.push_back(upper);
  }
  return names;
}

}  // namespace

std::string FeaturesJson() {
  nlohmann::json doc = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", "1.1.0"},
      {"hooks", nlohmann::json::array()},
      {"mountOptions",
       {"bind", "rbind", "ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "noatime",
        "nodiratime", "relatime", "strictatime", "nosymfollow", "private", "rprivate"}},
      {"linux",
       {{"namespaces", {"cgroup", "ipc", "mount", "network", "pid", "uts"}},
        {"capabilities", CapabilityNames()},
        {"cgroup", {{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false}}},
        {"seccomp",
         {{"enabled", true},
          {"actions",
           {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
            "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"}},
          {"operators",
           {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
            "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"}},
          {"archs", {"SCMP_ARCH_X86_64"}}}},
        {"apparmor", {{"enabled", false}}},
        {"selinux", {{"enabled", false}}},
        {"intelRdt", {{"enabled", false}}}}},
      {"annotations", {{"dev.corral.runtime", "corral-runc"}}}};
  return doc.dump(2);
}

int PrintList(const runtime::oci::GlobalOptions& global, const std::string& format, bool quiet) {
  namespace oci = runtime::oci;
  Result<std::vector<std::string>> ids = oci::ListContainers(global);
  if (!ids) {
    std::cerr << "corral-runc: " << ids.error().message() << "\n";
    return 1;
  }
  nlohmann::json all = nlohmann::json::array();
  if (!quiet && format == "table") std::cout << "ID\tPID\tSTATUS\tBUNDLE\tCREATED\n";
  for (const std::string& id : *ids) {
    Result<std::string> state = oci::ContainerStateJson(global, id);
    if (!state) continue;  // removed meanwhile, or not a container's directory
    nlohmann::json doc = nlohmann::json::parse(*state);
    if (quiet) {
      std::cout << id << "\n";
    } else if (format == "json") {
      all.push_back(doc);
    } else {
      std::cout << id << "\t" << doc["pid"] << "\t" << doc["status"].get<std::string>() << "\t"
                << doc["bundle"].get<std::string>() << "\t" << doc["created"].get<std::string>()
                << "\n";
    }
  }
  if (!quiet && format == "json") std::cout << all.dump() << "\n";
  return 0;
}

}  // namespace corral::runc_cli
