#include "jail/seccomp.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "base/unique_fd.h"
#include "jail/seccomp_embedded.h"
#include "jail/seccomp_profile_parse.h"

namespace corral::jail {
namespace {

Error Bad(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, CtxDeleter>;

// One (syscall, rule) pair after name resolution.
struct Entry {
  const SeccompRuleSpec* rule;
  const std::string* name;
  std::vector<scmp_arg_cmp> conditions;
};

bool SameCondition(const scmp_arg_cmp& a, const scmp_arg_cmp& b) {
  return a.arg == b.arg && a.op == b.op && a.datum_a == b.datum_a && a.datum_b == b.datum_b;
}

bool IsSubset(const std::vector<scmp_arg_cmp>& small, const std::vector<scmp_arg_cmp>& big) {
  for (const scmp_arg_cmp& c : small) {
    bool found = false;
    for (const scmp_arg_cmp& d : big) found = found || SameCondition(c, d);
    if (!found) return false;
  }
  return true;
}

std::vector<scmp_arg_cmp> Conditions(const SeccompRuleSpec& rule) {
  std::vector<scmp_arg_cmp> out;
  for (const SeccompArgSpec& a : rule.args) {
    out.push_back(scmp_arg_cmp{a.index, a.op, a.value, a.value_two});
  }
  return out;
}

KernelVersion RunningKernel() {
  utsname u{};
  if (::uname(&u) != 0) return {};
  return ParseKernelVersion(u.release).value_or(KernelVersion{});
}

// Groups the applicable rules by syscall number. Names this libseccomp does not know for
// the native arch (a negative number: unknown, or a pseudo-syscall of another ABI) are
// skipped so one profile can name syscalls of newer kernels.
std::map<int, std::vector<Entry>> ResolveRules(const SeccompProfileSpec& spec) {
  const KernelVersion kernel = RunningKernel();
  std::map<int, std::vector<Entry>> by_nr;
  for (const SeccompRuleSpec& rule : spec.rules) {
    if (!SeccompRuleApplies(rule, kernel)) continue;
    for (const std::string& name : rule.names) {
      int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name.c_str());
      if (nr < 0) continue;
      by_nr[nr].push_back(Entry{&rule, &name, Conditions(rule)});
    }
  }
  return by_nr;
}

// libseccomp keeps the rule with fewer conditions when one rule's conditions are a subset
// of another's, whatever their actions: an unconditional "allow ioctl" silently swallows
// a conditional "deny ioctl TIOCSTI". It also refuses a rule whose action is the default
// one. Both would change the policy behind the author's back, so they are errors here.
//
// A profile written for runc (an OCI config's linux.seccomp: podman's and containerd's
// defaults have such pairs) is compiled as libseccomp would take it under runc: with
// `dropped` given, the rules libseccomp would ignore are listed there and left out
// (`skip` marks them) instead of refused.
Status CheckEntries(const std::vector<Entry>& entries, uint32_t default_action,
                    std::vector<std::string>* dropped, std::vector<bool>* skip) {
  skip->assign(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& a = entries[i];
    for (size_t j = 0; j < entries.size(); ++j) {
      const Entry& b = entries[j];
      if (a.rule->action == b.rule->action) continue;
      if (dropped != nullptr) {
        // A rule with the default action is never added (runc skips it), so it shadows nothing.
        if (a.rule->action == default_action || b.rule->action == default_action) continue;
        if (IsSubset(a.conditions, b.conditions) && !(*skip)[i] && !(*skip)[j]) {
          (*skip)[j] = true;
          dropped->push_back(b.rule->path + " \"" + *b.name + "\" (shadowed by " + a.rule->path +
                             ")");
        }
        continue;
      }
      if (a.rule->action == default_action) {
        return Bad(a.rule->path + ": " + "\"" + *a.name +
                   "\": action equals defaultAction, which libseccomp cannot express next "
                   "to the rule in " +
                   b.rule->path + "; give it another action or errnoRet");
      }
      if (IsSubset(a.conditions, b.conditions)) {
        return Bad(b.rule->path + ": \"" + *b.name + "\": shadowed by the rule in " + a.rule->path +
                   " (its conditions are a subset, its action differs); " +
                   "libseccomp would drop this rule");
      }
    }
  }
  return Ok();
}

Status AddRules(scmp_filter_ctx ctx, const SeccompProfileSpec& spec,
                std::vector<std::string>* dropped) {
  for (const auto& [nr, entries] : ResolveRules(spec)) {
    std::vector<bool> skip;
    RETURN_IF_ERROR(CheckEntries(entries, spec.default_action, dropped, &skip));
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (skip[i]) continue;
      if (e.rule->action == spec.default_action) continue;  // a no-op (checked above)
      int rc = seccomp_rule_add_exact_array(
          ctx, e.rule->action, nr, static_cast<unsigned>(e.conditions.size()), e.conditions.data());
      if (rc < 0) {
        return Bad(e.rule->path + ": libseccomp rejected the rule for \"" + *e.name +
                   "\": " + std::strerror(-rc));
      }
    }
  }
  return Ok();
}

Result<std::vector<sock_filter>> ExportBpf(scmp_filter_ctx ctx) {
  UniqueFd fd(::memfd_create("corral-seccomp-bpf", MFD_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, "memfd_create");
  int rc = seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) return Error::FromErrno(-rc, "seccomp_export_bpf");
  off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size < 0) return Error::FromErrno(errno, "lseek on the exported filter");
  if (size == 0 || size % sizeof(sock_filter) != 0) {
    return Error(ErrorCode::kInternal,
                 "exported seccomp filter has odd size " + std::to_string(size));
  }
  std::vector<sock_filter> program(static_cast<size_t>(size) / sizeof(sock_filter));
  char* out = reinterpret_cast<char*>(program.data());
  for (off_t done = 0; done < size;) {
    ssize_t n = ::pread(fd.get(), out + done, static_cast<size_t>(size - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno(n < 0 ? errno : EIO, "reading the exported filter");
    done += n;
  }
  if (program.size() > BPF_MAXINSNS) {
    return Bad("filter has " + std::to_string(program.size()) + " instructions, the kernel " +
               "takes at most " + std::to_string(BPF_MAXINSNS));
  }
  return program;
}

Result<SeccompProgram> Compile(const SeccompProfileSpec& spec, std::vector<std::string>* dropped) {
  // "Allow everything" is no filter at all (not even the architecture check).
  if (spec.default_action == SCMP_ACT_ALLOW && spec.rules.empty()) return SeccompProgram{};
  SeccompCtx ctx(seccomp_init(spec.default_action));
  if (!ctx) return Bad("libseccomp rejected defaultAction");
  // Calls through another ABI (int 0x80, x32's nr | 0x40000000) never reach the rules,
  // which are written for native syscall numbers; they kill the whole process.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  // A binary search over syscall numbers instead of a linear chain: the allow-lists are
  // long and every syscall pays for the lookup.
  if (rc == 0) rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) return Error::FromErrno(-rc, "seccomp_attr_set");
  RETURN_IF_ERROR(AddRules(ctx.get(), spec, dropped));
  ASSIGN_OR_RETURN(std::vector<sock_filter> program, ExportBpf(ctx.get()));
  return SeccompProgram{std::move(program)};
}

}  // namespace

Result<SeccompProgram> CompileSeccompProfile(const std::string& json_text,
                                             const std::string& origin) {
  return CompileRuncSeccompProfile(json_text, origin, nullptr);
}

// `dropped` null: corral's own strict reading (CompileSeccompProfile).
Result<SeccompProgram> CompileRuncSeccompProfile(const std::string& json_text,
                                                 const std::string& origin,
                                                 std::vector<std::string>* dropped) {
  const std::string context = "seccomp profile " + origin;
  auto spec = ParseSeccompProfile(json_text);
  if (!spec) return spec.error().WithContext(context);
  auto program = Compile(*spec, dropped);
  if (!program) return program.error().WithContext(context);
  return program;
}

int InstallSeccomp(const SeccompProgram& program) {
  if (program.empty()) return 0;
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.instructions.size());
  fprog.filter = const_cast<sock_filter*>(program.instructions.data());
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) return errno;
  return 0;
}

}  // namespace corral::jail
