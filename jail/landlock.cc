#include "jail/landlock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "jail/child_text.h"
#include "jail/setup_record.h"

namespace corral::jail {

namespace {

// The kernel's structures (include/uapi/linux/landlock.h), as of ABI 4; later ABIs only
// append fields, and a shorter structure is what an older kernel expects.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
struct NetPortAttr {
  uint64_t allowed_access;
  uint64_t port;
};
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;
constexpr unsigned kCreateRulesetVersion = 1U << 0;

int CreateRuleset(const RulesetAttr& attr, size_t size) {
  return static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
}

int AddRule(int ruleset, int type, const void* attr) {
  return static_cast<int>(::syscall(SYS_landlock_add_rule, ruleset, type, attr, 0));
}

bool Fail(int report_fd, int err, const char* what, const char* path) {
  char text[480];
  ChildText message(text, sizeof text);
  message.Add(what);
  if (path != nullptr) message.Add(" ").Add(path);
  ReportSetupFailure(report_fd, SetupStep::kLandlock, err, text);
  return false;
}

// Adds `fd` with `access`, less what a non-directory cannot be granted.
int AddPathRule(int ruleset, int fd, uint64_t access) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) access &= landlock::kFileRights;
  if (access == 0) return 0;
  PathBeneathAttr rule{access, fd};
  return AddRule(ruleset, kRulePathBeneath, &rule) == 0 ? 0 : errno;
}

bool AddRules(const LandlockPlan& plan, int ruleset, int extra_exec_fd, int report_fd) {
  for (const LandlockPathRule& rule : plan.rules) {
    int fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      // Gone (a persistent sandbox's user removed it): no rule is less access, not more.
      if (errno == ENOENT) continue;
      return Fail(report_fd, errno, "landlock: open", rule.path.c_str());
    }
    int err = AddPathRule(ruleset, fd, rule.access & plan.handled_fs);
    ::close(fd);
    if (err != 0) return Fail(report_fd, err, "landlock_add_rule", rule.path.c_str());
  }
  if (extra_exec_fd >= 0) {
    int err = AddPathRule(ruleset, extra_exec_fd,
                          (landlock::kExecute | landlock::kReadFile) & plan.handled_fs);
    if (err != 0) return Fail(report_fd, err, "landlock_add_rule for the init program", nullptr);
  }
  if (plan.handled_net == 0) return true;
  for (uint16_t port : plan.connect_ports) {
    NetPortAttr rule{landlock::kConnectTcp & plan.handled_net, port};
    if (AddRule(ruleset, kRuleNetPort, &rule) != 0) {
      return Fail(report_fd, errno, "landlock_add_rule (TCP port)", nullptr);
    }
  }
  return true;
}

}  // namespace

namespace landlock {

uint64_t FsRightsOf(int abi) {
  if (abi <= 0) return 0;
  uint64_t rights = (1ULL << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

uint64_t NetRightsOf(int abi) { return abi >= 4 ? kBindTcp | kConnectTcp : 0; }

}  // namespace landlock

int ProbeLandlockAbi(int* err) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi > 0) {
    *err = 0;
    return static_cast<int>(abi);
  }
  *err = errno;
  return 0;
}

bool ApplyLandlock(const LandlockPlan& plan, int extra_exec_fd, int report_fd) {
  if (!plan.enforce) return true;
  RulesetAttr attr{plan.handled_fs, plan.handled_net};
  // Without TCP rights, the ABI 1-3 size: those kernels reject the longer structure.
  size_t size = plan.handled_net != 0 ? sizeof attr : sizeof attr.handled_access_fs;
  int ruleset = CreateRuleset(attr, size);
  if (ruleset < 0) return Fail(report_fd, errno, "landlock_create_ruleset", nullptr);
  bool ok = AddRules(plan, ruleset, extra_exec_fd, report_fd);
  if (ok && ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    ok = Fail(report_fd, errno, "landlock_restrict_self", nullptr);
  }
  ::close(ruleset);
  return ok;
}

}  // namespace corral::jail
