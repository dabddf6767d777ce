#include "runtime/run/landlock_plan.h"

#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/net/in_jail.h"
#include "runtime/net/policy.h"

namespace corral::runtime {

namespace {

namespace ll = jail::landlock;
using jail::LandlockPathRule;
using jail::MountOp;

std::string JailPath(const std::string& path, const std::string& staging_dir) {
  if (path == staging_dir) return "/";
  if (path.size() > staging_dir.size() && path.compare(0, staging_dir.size(), staging_dir) == 0 &&
      path[staging_dir.size()] == '/') {
    return path.substr(staging_dir.size());
  }
  return path;  // not under the staging directory: taken as a jail path already
}

bool IsBeneath(const std::string& path, const std::string& ancestor) {
  if (ancestor == "/") return true;
  return path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
         path[ancestor.size()] == '/';
}

// A mounted tree: read, write if it is writable, execute unless it is noexec.
uint64_t TreeAccess(bool read_only, unsigned long flags) {
  return ll::kRead | (read_only ? 0 : ll::kWrite) | ((flags & MS_NOEXEC) != 0 ? 0 : ll::kExecute);
}

class RuleList {
 public:
  void Grant(const std::string& path, uint64_t access) {
    if (LandlockPathRule* rule = Find(path)) {
      rule->access |= access;
    } else {
      rules_.push_back({path, access});
    }
  }
  void TakeWrite(const std::string& path) {
    if (LandlockPathRule* rule = Find(path)) rule->access &= ~ll::kWrite;
  }
  // Masked to what the ruleset handles; empty rules and those a rule above covers dropped.
  std::vector<LandlockPathRule> Finish(uint64_t handled) {
    for (LandlockPathRule& rule : rules_) rule.access &= handled;
    std::vector<LandlockPathRule> out;
    for (const LandlockPathRule& rule : rules_) {
      if (rule.access == 0) continue;
      bool covered = std::any_of(rules_.begin(), rules_.end(), [&](const LandlockPathRule& above) {
        return &above != &rule && IsBeneath(rule.path, above.path) &&
               (rule.access & ~above.access) == 0;
      });
      if (!covered) out.push_back(rule);
    }
    return out;
  }

 private:
  LandlockPathRule* Find(const std::string& path) {
    auto it = std::find_if(rules_.begin(), rules_.end(),
                           [&](const LandlockPathRule& r) { return r.path == path; });
    return it == rules_.end() ? nullptr : &*it;
  }
  std::vector<LandlockPathRule> rules_;
};

std::string Unavailable(int abi, int err) {
  if (abi == 1) {
    return "the kernel's Landlock ABI 1 cannot allow renaming files across directories "
           "(corral needs ABI " +
           std::to_string(ll::kMinimumAbi) + ")";
  }
  if (err == EOPNOTSUPP) return "the kernel has Landlock but it is disabled at boot (lsm=)";
  if (err == ENOSYS) return "the kernel has no Landlock";
  const char* name = strerrorname_np(err);
  return std::string("Landlock is unavailable (") + (name != nullptr ? name : "unknown") + ")";
}

// What a jail in allowlist mode connects to: the proxy and the resolver (DNS over TCP for
// long answers), and — for a plain TCP client whose connection corral captures on the
// loopback address the resolver gave it — the ports the allow rules name (80 and 443 for
// a rule without one). A rule for any port leaves connect unfenced; bind stays fenced.
void AllowListPorts(const NetworkSpec& network, jail::LandlockPlan* plan) {
  std::vector<uint16_t> ports = {net::kHttpProxyPort, net::kSocksPort, net::kDnsPort};
  for (const std::string& text : network.allow) {
    auto rule = net::ParseRule(text);
    if (!rule) continue;  // Validate refused it already
    if (rule->any_port) {
      plan->handled_net &= ~ll::kConnectTcp;
      plan->connect_ports.clear();
      return;
    }
    if (rule->port) {
      ports.push_back(*rule->port);
    } else {
      ports.insert(ports.end(), {80, 443});
    }
  }
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  plan->connect_ports = std::move(ports);
}

}  // namespace

int HostLandlockAbi(int* err) {
  struct Probe {
    int abi;
    int err;
  };
  static const Probe probe = [] {
    Probe p{};
    p.abi = jail::ProbeLandlockAbi(&p.err);
    return p;
  }();
  *err = probe.err;
  return probe.abi;
}

Result<jail::LandlockPlan> DecideLandlock(const JailSpec& spec, int abi, int err) {
  jail::LandlockPlan plan;
  plan.abi = abi;
  const LandlockMode enabled = spec.landlock.enabled;
  if (enabled == LandlockMode::kOff) {
    plan.reason = "landlock.enabled is false";
    return plan;
  }
  if (abi < ll::kMinimumAbi) {
    const std::string why = Unavailable(abi, err);
    if (enabled == LandlockMode::kOn) {
      return Error(ErrorCode::kUnsupported,
                   "landlock.enabled: true, but " + why +
                       "; set landlock.enabled to auto (or --landlock auto) to run without it");
    }
    plan.reason = why;
    return plan;
  }
  plan.enforce = true;
  plan.handled_fs = ll::FsRightsOf(abi);
  // TCP is fenced where it guards a way out: allowlist's namespace reaches the proxy, which
  // reaches the world. network none's namespace holds nothing but its own loopback, so a dev
  // server and the curl that tests it may bind and connect there; host is not fenced.
  if (spec.landlock.tcp && spec.network.mode == NetworkMode::kAllowlist) {
    plan.handled_net = ll::NetRightsOf(abi);
    AllowListPorts(spec.network, &plan);
  }
  return plan;
}

std::vector<LandlockPathRule> LandlockRules(const std::vector<MountOp>& mounts,
                                            const std::string& staging_dir, bool read_only_root,
                                            const std::vector<std::string>& omit,
                                            uint64_t handled_fs) {
  RuleList rules;
  for (const MountOp& op : mounts) {
    const std::string path = JailPath(op.path, staging_dir);
    switch (op.kind) {
      case MountOp::Kind::kTmpfs:
        if (path == "/") {
          // Holds only mount points, symlinks and generated files (their own rules).
          rules.Grant(path, read_only_root ? ll::kReadDir : TreeAccess(false, op.flags));
        } else {
          rules.Grant(path, TreeAccess(op.read_only, op.flags));
        }
        break;
      case MountOp::Kind::kBind:
        if (std::find(omit.begin(), omit.end(), path) != omit.end()) break;
        rules.Grant(path, TreeAccess(op.read_only, op.flags));
        break;
      case MountOp::Kind::kInnerBind:  // an area of the root's tmpfs, or a /proc mask
        rules.Grant(path, TreeAccess(op.read_only, op.flags));
        break;
      case MountOp::Kind::kProc:
        rules.Grant(path, ll::kRead | ll::kWriteFile | ll::kTruncate);
        break;
      case MountOp::Kind::kDevpts:
        rules.Grant(path, ll::kReadDir | ll::kDevice);
        break;
      case MountOp::Kind::kDevice:
        rules.Grant(path, ll::kDevice);
        break;
      case MountOp::Kind::kFile:
        rules.Grant(path, ll::kReadFile);
        break;
      case MountOp::Kind::kReadOnly:
      case MountOp::Kind::kRemountReadOnly:
        rules.TakeWrite(path);
        break;
      case MountOp::Kind::kMkdir:
      case MountOp::Kind::kRmdir:
      case MountOp::Kind::kFilesystem:  // OCI containers only: they have no Landlock plan
      case MountOp::Kind::kMask:
      case MountOp::Kind::kSymlink:
        break;
    }
  }
  return rules.Finish(handled_fs);
}

Status AddLandlock(const JailSpec& spec, jail::JailPlan* plan) {
  int err = 0;
  int abi = HostLandlockAbi(&err);
  ASSIGN_OR_RETURN(plan->landlock, DecideLandlock(spec, abi, err));
  if (plan->landlock.enforce) {
    plan->landlock.rules = LandlockRules(plan->mounts, plan->staging_dir, plan->read_only_root,
                                         spec.landlock.omit, plan->landlock.handled_fs);
  }
  return Ok();
}

LandlockOutcome LandlockOutcomeOf(const jail::LandlockPlan& plan) {
  return {plan.enforce, plan.abi, plan.enforce && plan.handled_net != 0, plan.reason};
}

LandlockOutcome LandlockOutcomeFor(const JailSpec& spec) {
  int err = 0;
  int abi = HostLandlockAbi(&err);
  auto plan = DecideLandlock(spec, abi, err);
  if (!plan) return {false, abi, false, plan.error().message()};
  return LandlockOutcomeOf(*plan);
}

nlohmann::json LandlockPlanToJson(const jail::LandlockPlan& plan) {
  nlohmann::json rules = nlohmann::json::array();
  for (const LandlockPathRule& rule : plan.rules) {
    rules.push_back({{"path", rule.path}, {"access", rule.access}});
  }
  return {{"enforce", plan.enforce},
          {"abi", plan.abi},
          {"handled_fs", plan.handled_fs},
          {"handled_net", plan.handled_net},
          {"rules", rules},
          {"connect_ports", plan.connect_ports},
          {"reason", plan.reason}};
}

jail::LandlockPlan LandlockPlanFromJson(const nlohmann::json& j) {
  jail::LandlockPlan plan;
  try {
    j.at("enforce").get_to(plan.enforce);
    j.at("abi").get_to(plan.abi);
    j.at("handled_fs").get_to(plan.handled_fs);
    j.at("handled_net").get_to(plan.handled_net);
    for (const auto& rule : j.at("rules")) {
      plan.rules.push_back({rule.at("path").get<std::string>(), rule.at("access").get<uint64_t>()});
    }
    j.at("connect_ports").get_to(plan.connect_ports);
    j.at("reason").get_to(plan.reason);
  } catch (const nlohmann::json::exception& e) {
    plan = jail::LandlockPlan{};
    plan.reason = std::string("unreadable Landlock record: ") + e.what();
  }
  return plan;
}

}  // namespace corral::runtime
