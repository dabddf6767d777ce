// The jail provider: each (user, thread) is a persistent corral sandbox
// (runtime/sandboxes/persistent.h) named JailSandboxName(user, thread), created on first Acquire
// with the thread's user-data (rw), acp-workspace (ro), skills (ro) and configured mounts,
// and found again by name by any later corral process. Commands are execs into it (own
// timeout, background processes live on); file operations resolve inside the sandbox's
// root as the sandbox user (tools/providers/file_access.h). Parent side.
#pragma once

#include <memory>
#include <string>

#include "runtime/sandboxes/persistent.h"
#include "runtime/sandboxes/sandbox_store.h"
#include "tools/providers/sandbox_fileops.h"
#include "tools/providers/sandbox_provider.h"

namespace corral::runtime {

class JailSandbox : public Sandbox {
 public:
  // Serves the sandbox `hold` names; the hold keeps idle reapers off it while this lives.
  explicit JailSandbox(SandboxHold hold);

  const SandboxRecord& record() const { return record_; }

  // For the AIO API's file list (server/): entries below the directory `path` down to
  // max_depth, with sizes, times and modes; nothing skipped. Same resolution as the rest.
  SbResult<std::vector<FileEntry>> ListEntries(const std::string& path, int max_depth);

 protected:
  SbResult<CommandResult> DoExecuteCommand(const std::string& command, const EnvList& env,
                                           std::optional<double> timeout) override;
  SbResult<std::string> DoReadFile(const std::string& path, std::optional<int> start_line,
                                   std::optional<int> end_line) override;
  SbResult<std::string> DoDownloadFile(const std::string& path) override;
  SbResult<std::vector<std::string>> DoListDir(const std::string& path, int max_depth) override;
  SbStatus DoWriteFile(const std::string& path, const std::string& content, bool append) override;
  SbStatus DoUpdateFile(const std::string& path, const std::string& bytes) override;
  SbResult<GlobResult> DoGlob(const std::string& path, const std::string& pattern,
                              bool include_dirs, int max_results) override;
  SbResult<GrepResult> DoGrep(const std::string& path, const std::string& pattern,
                              const GrepOptions& options) override;

 private:
  SbResult<ResolvedPath> Resolve(const std::string& path) const;
  SandboxHold hold_;
  const SandboxRecord& record_;
};

class JailSandboxProvider : public ProviderBase {
 public:
  JailSandboxProvider(ProviderConfig config, JailSpec base_spec);
  bool uses_thread_data_mounts() const override { return true; }

  // The spec a thread's sandbox is created from (for tests and `corral threads`).
  JailSpec SpecFor(const ThreadDirs& dirs) const;

 protected:
  std::string IdFor(const ThreadDirs& dirs) const override;
  Result<std::shared_ptr<Sandbox>> Create(const ThreadDirs& dirs) override;
  bool Alive(Sandbox& sandbox) override;
  void Destroy(Sandbox& sandbox) override;

 private:
  // The sandbox of `name` if it is alive and this thread's; nullptr if there is none (a
  // dead one is removed); an error if it belongs to another thread.
  Result<std::shared_ptr<Sandbox>> FindLive(const std::string& name, const ThreadDirs& dirs);
  JailSpec base_spec_;
};

}  // namespace corral::runtime
