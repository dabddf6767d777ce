#include "jail/process_title.h"

#include <sys/prctl.h>

#include <cstring>

namespace corral::jail {

namespace {
char* g_argv_start = nullptr;
size_t g_argv_len = 0;
}  // namespace

void RegisterArgvArea(int argc, char** argv) {
  if (argc <= 0 || argv == nullptr || argv[0] == nullptr) return;
  // The strings are laid out back to back; stop at the first one that is not.
  char* end = argv[0] + std::strlen(argv[0]) + 1;
  for (int i = 1; i < argc && argv[i] == end; ++i) end = argv[i] + std::strlen(argv[i]) + 1;
  g_argv_start = argv[0];
  g_argv_len = static_cast<size_t>(end - argv[0]);
}

void SetProcessTitle(const char* title) {
  ::prctl(PR_SET_NAME, title, 0, 0, 0);
  if (g_argv_start == nullptr || g_argv_len < 2) return;
  size_t n = std::strlen(title);
  if (n > g_argv_len - 2) n = g_argv_len - 2;
  std::memcpy(g_argv_start, title, n);
  g_argv_start[n] = '\0';
  // A non-NUL last byte tells the kernel the area was rewritten (setproctitle style), so
  // /proc/<pid>/cmdline then stops at the first NUL instead of showing the padding.
  std::memset(g_argv_start + n + 1, ' ', g_argv_len - n - 1);
}

}  // namespace corral::jail
