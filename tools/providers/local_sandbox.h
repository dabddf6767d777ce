// The local provider: DeerFlow's LocalSandbox — no isolation, the host's files and (only
// with allow_host_bash: true) the host's shell. Virtual paths (/mnt/user-data/...,
// /mnt/skills/..., /mnt/acp-workspace/..., configured mounts) map to host directories by
// longest prefix; ".." segments, paths outside the mappings and writes to read-only
// mappings are refused; every file operation resolves beneath its mapping's directory
// (tools/providers/file_access.h, RESOLVE_BENEATH), so a symlink cannot lead out of it. Host
// paths in command output are masked back to virtual paths. For development and for
// trusted agents; the jail provider is the security boundary. Parent side.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/providers/sandbox_fileops.h"
#include "tools/providers/sandbox_provider.h"

namespace corral::runtime {

struct LocalMapping {
  std::string container_path;  // virtual, absolute, no trailing '/'
  std::string host_path;
  bool read_only = false;
};

// The message DeerFlow gives when the local provider refuses bash.
extern const char* const kHostBashDisabledMessage;

class LocalSandbox : public Sandbox {
 public:
  LocalSandbox(std::string id, std::vector<LocalMapping> mappings, bool allow_host_bash);
  bool IsLocal() const override { return true; }

  // Virtual -> host paths in a command; host -> virtual paths in output.
  std::string ToHostPaths(const std::string& text) const;
  std::string MaskHostPaths(const std::string& text) const;
  // Validates and maps a virtual path (kPermissionDenied / kReadOnly with DeerFlow's text).
  SbResult<ResolvedPath> Resolve(const std::string& path, bool write) const;

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
  std::vector<LocalMapping> mappings_;  // longest container_path first
  bool allow_host_bash_;
};

class LocalSandboxProvider : public ProviderBase {
 public:
  explicit LocalSandboxProvider(ProviderConfig config);
  std::vector<LocalMapping> MappingsFor(const ThreadDirs& dirs) const;

 protected:
  std::string IdFor(const ThreadDirs& dirs) const override;
  Result<std::shared_ptr<Sandbox>> Create(const ThreadDirs& dirs) override;
};

}  // namespace corral::runtime
