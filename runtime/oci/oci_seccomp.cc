#include "runtime/oci/oci_seccomp.h"

#include <sys/utsname.h>

#include "base/files.h"
#include "jail/seccomp.h"
#include "jail/seccomp_profile_parse.h"

namespace corral::runtime::oci {

namespace {

jail::KernelVersion RunningKernel() {
  utsname u{};
  if (::uname(&u) != 0) return {};
  return jail::ParseKernelVersion(u.release).value_or(jail::KernelVersion{});
}

Result<std::string> ProfileText(const std::string& profile) {
  if (!profile.empty() && profile[0] == '/') return ReadFile(profile);
  return jail::BuiltinSeccompProfileText(profile);
}

}  // namespace

Result<nlohmann::json> OciSeccomp(const std::string& profile) {
  if (profile == "unconfined") return nlohmann::json(nullptr);
  auto text = ProfileText(profile);
  if (!text) return text.error().WithContext("seccomp profile " + profile);
  // corral's parser decides what the profile means (and refuses what it refuses); the raw
  // JSON is walked beside it, rule i being syscalls[i] (the parser keeps file order).
  auto parsed = jail::ParseSeccompProfile(*text);
  if (!parsed) return parsed.error().WithContext("seccomp profile " + profile);
  nlohmann::json raw = nlohmann::json::parse(*text);
  const jail::KernelVersion kernel = RunningKernel();

  nlohmann::json out;
  out["defaultAction"] = raw.at("defaultAction");
  if (raw.contains("defaultErrnoRet")) out["defaultErrnoRet"] = raw["defaultErrnoRet"];
  out["architectures"] = nlohmann::json::array({"SCMP_ARCH_X86_64"});
  nlohmann::json syscalls = nlohmann::json::array();
  const nlohmann::json& rules =
      raw.contains("syscalls") ? raw["syscalls"] : nlohmann::json::array();
  for (size_t i = 0; i < parsed->rules.size() && i < rules.size(); ++i) {
    if (!jail::SeccompRuleApplies(parsed->rules[i], kernel)) continue;
    nlohmann::json rule;
    rule["names"] = parsed->rules[i].names;
    rule["action"] = rules[i].at("action");
    if (rules[i].contains("errnoRet")) rule["errnoRet"] = rules[i]["errnoRet"];
    if (rules[i].contains("args")) rule["args"] = rules[i]["args"];
    syscalls.push_back(std::move(rule));
  }
  out["syscalls"] = std::move(syscalls);
  return out;
}

}  // namespace corral::runtime::oci
