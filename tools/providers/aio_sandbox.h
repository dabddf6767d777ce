// The aio provider: the agent tools over HTTP, against a server that speaks the AIO sandbox
// API (docs/deerflow-contract.md, "AIO sandbox HTTP API") — a `corral serve` on another
// host, or a real AIO container. Each thread's sandbox is created through a provisioner
// (`sandbox.provisioner_url`: `corral serve`'s or DeerFlow's provisioner API, with
// `provisioner_api_key`), which hands back the sandbox's URL; or, without a provisioner,
// every thread shares the one AIO server at `sandbox.aio_url` (a single container, for
// development: threads are not isolated from each other there).
//
// The server does the path checks and runs the commands; this side only maps the Sandbox
// operations onto the API and the API's answers back onto SbResult codes. Parent side.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tools/providers/sandbox_provider.h"

namespace corral::runtime {

class AioSandbox : public Sandbox {
 public:
  // `base_url` is the sandbox's URL (the API's paths are joined onto it: {base_url}/v1/...).
  AioSandbox(std::string id, std::string base_url);

  const std::string& base_url() const { return base_url_; }

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
  // POSTs `body` to v1/<route>; the envelope's `data` on success, else the error the
  // envelope (or the HTTP status) describes. `path` names the file for error messages.
  SbResult<nlohmann::json> Call(const std::string& route, const nlohmann::json& body,
                                const std::string& path, double timeout_seconds = 60);
  SbResult<CommandResult> ExecThroughShell(const std::string& command, double seconds);

  std::string base_url_;
  bool has_bash_api_ = true;  // false once the server answered 404 on v1/bash/exec
};

class AioSandboxProvider : public ProviderBase {
 public:
  explicit AioSandboxProvider(ProviderConfig config);
  // The host's thread directories are not what a remote sandbox sees.
  bool uses_thread_data_mounts() const override { return false; }

 protected:
  std::string IdFor(const ThreadDirs& dirs) const override;
  Result<std::shared_ptr<Sandbox>> Create(const ThreadDirs& dirs) override;
  bool Alive(Sandbox& sandbox) override;
  void Destroy(Sandbox& sandbox) override;

 private:
  Result<std::string> Provision(const ThreadDirs& dirs, const std::string& id);
};

// Base64 of `bytes` (RFC 4648, with padding): the AIO API's binary file writes.
std::string Base64Encode(const std::string& bytes);

}  // namespace corral::runtime
