#include "cli/front/full_cli.h"

#include <asm/unistd.h>

#include "cli/front/sys.h"
#include "cli/front/text.h"

namespace corral::cli::front {

namespace {

namespace sys = corral::front::sys;
using corral::front::Buffer;

constexpr int kMaxCandidates = 3;

// Next to this program (a build tree), then as installed relative to it (bin/ and
// libexec/corral/ under one prefix, wherever it was moved), then the configured prefix;
// an explicit $CORRAL_CLI_PROGRAM alone, without a silent fallback to another file.
int FindCandidates(const char* self, char* const* envp, Buffer (&candidates)[kMaxCandidates]) {
  int count = 0;
  const char* forced = sys::GetEnv(const_cast<char**>(envp), kCliProgramEnv);
  if (forced != nullptr && *forced != '\0') {
    candidates[count++].Append(forced);
    return count;
  }
  size_t slash = 0;
  for (size_t i = 0; self[i] != '\0'; ++i) {
    if (self[i] == '/') slash = i;
  }
  if (slash > 0) {
    candidates[count].Append(self, slash);
    candidates[count++].Append("/corral-cli");
    candidates[count].Append(self, slash);
    candidates[count++].Append("/../libexec/corral/corral-cli");
  }
  candidates[count++].Append(CORRAL_CLI_INSTALL_PATH);
  return count;
}

// The environment with CORRAL_FRONT_EXE=<self> in place of any earlier value, in
// `env_array` (which `front_var` must outlive); nullptr when out of memory.
char** EnvWithFrontExe(const char* self, char* const* envp, Buffer& front_var, Buffer& env_array) {
  front_var.Append(kFrontExeEnv);
  front_var.Append("=");
  front_var.Append(self);
  size_t envc = 0;
  while (envp != nullptr && envp[envc] != nullptr) ++envc;
  auto* env = reinterpret_cast<char**>(env_array.Reserve((envc + 2) * sizeof(char*)));
  if (env == nullptr) return nullptr;
  size_t k = 0;
  for (size_t i = 0; i < envc; ++i) {
    if (self[0] != '\0' && sys::StartsWith(envp[i], kFrontExeEnv) &&
        envp[i][sizeof kFrontExeEnv - 1] == '=') {
      continue;
    }
    env[k++] = envp[i];
  }
  if (self[0] != '\0') env[k++] = const_cast<char*>(front_var.c_str());
  env[k] = nullptr;
  return env;
}

}  // namespace

int ExecFullCli(char* const* argv, char* const* envp) {
  char self[4096];
  long n = sys::Syscall(__NR_readlink, reinterpret_cast<long>("/proc/self/exe"),
                        reinterpret_cast<long>(self), sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';

  Buffer candidates[kMaxCandidates];
  int count = FindCandidates(self, envp, candidates);
  Buffer front_var, env_array;
  char** env = EnvWithFrontExe(self, envp, front_var, env_array);
  if (env == nullptr) {
    sys::WriteAll(2, "corral: out of memory\n");
    return 125;
  }

  long first_error = 0;
  for (int i = 0; i < count; ++i) {
    long err = sys::Syscall(__NR_execve, reinterpret_cast<long>(candidates[i].c_str()),
                            reinterpret_cast<long>(argv), reinterpret_cast<long>(env));
    if (first_error == 0 || first_error == -2) first_error = err;  // prefer more than ENOENT
  }
  Buffer message;
  message.Append("corral: cannot start the corral CLI program (looked for ");
  for (int i = 0; i < count; ++i) {
    if (i > 0) message.Append(", ");
    message.Append(candidates[i].data(), candidates[i].size());
  }
  message.Append("): ");
  message.Append(sys::ErrnoText(first_error));
  message.Append("\n");
  sys::WriteAll(2, message.c_str());
  return 125;
}

}  // namespace corral::cli::front
