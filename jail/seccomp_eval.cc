#include "jail/seccomp_eval.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <stddef.h>

#include <cstring>

namespace corral::jail {

uint32_t NativeAuditArch() {
#if defined(__x86_64__)
  return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  return AUDIT_ARCH_AARCH64;
#else
#error "seccomp_eval: unknown native architecture"
#endif
}

std::optional<uint32_t> RunSeccompFilter(const SeccompProgram& program, const seccomp_data& data,
                                         bool* reads_call) {
  unsigned char bytes[sizeof data];
  std::memcpy(bytes, &data, sizeof data);
  if (reads_call != nullptr) *reads_call = false;
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  const auto& code = program.instructions;
  for (size_t pc = 0; pc < code.size(); ++pc) {
    const sock_filter& f = code[pc];
    switch (f.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (f.k + 4 > sizeof data) return std::nullopt;
        if (reads_call != nullptr && f.k != offsetof(seccomp_data, nr) &&
            f.k != offsetof(seccomp_data, arch)) {
          *reads_call = true;
        }
        std::memcpy(&a, bytes + f.k, 4);
        break;
      case BPF_LD | BPF_IMM:
        a = f.k;
        break;
      case BPF_LDX | BPF_IMM:
        x = f.k;
        break;
      case BPF_LD | BPF_MEM:
        a = mem[f.k % BPF_MEMWORDS];
        break;
      case BPF_LDX | BPF_MEM:
        x = mem[f.k % BPF_MEMWORDS];
        break;
      case BPF_ST:
        mem[f.k % BPF_MEMWORDS] = a;
        break;
      case BPF_STX:
        mem[f.k % BPF_MEMWORDS] = x;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        a &= f.k;
        break;
      case BPF_ALU | BPF_OR | BPF_K:
        a |= f.k;
        break;
      case BPF_MISC | BPF_TAX:
        x = a;
        break;
      case BPF_MISC | BPF_TXA:
        a = x;
        break;
      case BPF_JMP | BPF_JA:
        pc += f.k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += (a == f.k) ? f.jt : f.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        pc += (a > f.k) ? f.jt : f.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += (a >= f.k) ? f.jt : f.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += (a & f.k) ? f.jt : f.jf;
        break;
      case BPF_RET | BPF_K:
        return f.k;
      case BPF_RET | BPF_A:
        return a;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;  // ran off the end: the kernel would not have accepted it
}

bool SeccompAllowsOutright(const SeccompProgram& program, std::initializer_list<int> nrs) {
  if (program.empty()) return true;
  for (int nr : nrs) {
    seccomp_data data{};
    data.nr = nr;
    data.arch = NativeAuditArch();
    bool reads_call = true;
    std::optional<uint32_t> action = RunSeccompFilter(program, data, &reads_call);
    if (!action || reads_call || (*action & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ALLOW) {
      return false;
    }
  }
  return true;
}

}  // namespace corral::jail
