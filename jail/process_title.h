// Lets a jail child rename itself in /proc/<pid>/cmdline. A clone()d child that never
// execs would otherwise show the caller's full command line (config paths, flags) to the
// sandboxed command as /proc/1/cmdline.
#pragma once

namespace corral::jail {

// Parent, from main(): remembers where the kernel placed argv[] (one contiguous area).
void RegisterArgvArea(int argc, char** argv);

// Child: overwrites that area (its private copy) with `title`. Async-signal-safe.
void SetProcessTitle(const char* title);

}  // namespace corral::jail
