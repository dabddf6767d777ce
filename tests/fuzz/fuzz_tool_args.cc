// Agent tool calls (tools/tools.h RunTool): the tool's name and its JSON arguments are
// what an agent sends. They run over an in-memory Sandbox, so every tool (bash included)
// is reached without touching the host; its grep and glob use the providers' real
// matchers (tools/providers/sandbox_search.h), which take agent-chosen patterns.
// Input: the tool name, a NUL, the JSON arguments.
#include <cstdint>
#include <map>
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "tools/providers/sandbox_fileops.h"
#include "tools/providers/sandbox_search.h"
#include "tools/tools.h"

namespace {

using namespace corral::runtime;

// Files by virtual path; anything outside /mnt/user-data is refused, as providers do.
class MemorySandbox : public Sandbox {
 public:
  MemorySandbox() : Sandbox("fuzz") {
    files_["/mnt/user-data/workspace/a.txt"] = "alpha\nbeta\ngamma\n";
    files_["/mnt/user-data/workspace/src/b.py"] = "def f():\n    return 1\n";
  }
  SbResult<CommandResult> DoExecuteCommand(const std::string& command, const EnvList&,
                                           std::optional<double>) override {
    return CommandResult{FormatCommandText(command, "", 0, std::nullopt), 0, false, {}, 0};
  }
  SbResult<std::string> DoReadFile(const std::string& path, std::optional<int> start,
                                   std::optional<int> end) override {
    RETURN_SB_IF_ERROR(Check(path));
    auto it = files_.find(path);
    if (it == files_.end()) return SandboxError{SandboxErrc::kNotFound, path, ENOENT};
    return SliceLines(it->second, start, end);
  }
  SbResult<std::string> DoDownloadFile(const std::string& path) override {
    return DoReadFile(path, std::nullopt, std::nullopt);
  }
  SbResult<std::vector<std::string>> DoListDir(const std::string& path, int) override {
    RETURN_SB_IF_ERROR(Check(path));
    std::vector<std::string> out;
    for (const auto& entry : files_) {
      if (entry.first.rfind(path, 0) == 0) out.push_back(entry.first);
    }
    return out;
  }
  SbStatus DoWriteFile(const std::string& path, const std::string& content, bool append) override {
    RETURN_SB_IF_ERROR(Check(path));
    if (files_.size() > 64 && !files_.count(path)) {
      return SandboxError{SandboxErrc::kIo, "too many files", ENOSPC};
    }
    std::string& file = files_[path];
    file = append ? file + content : content;
    if (file.size() > 1 << 20) file.resize(1 << 20);  // keeps one run's memory bounded
    return {};
  }
  SbStatus DoUpdateFile(const std::string& path, const std::string& bytes) override {
    return DoWriteFile(path, bytes, false);
  }
  SbResult<GlobResult> DoGlob(const std::string& path, const std::string& pattern, bool,
                              int max_results) override {
    RETURN_SB_IF_ERROR(Check(path));
    GlobResult result;
    for (const auto& entry : Under(path)) {
      if (!GlobMatches(pattern, entry.first)) continue;
      if (static_cast<int>(result.matches.size()) >= max_results) {
        result.truncated = true;
        break;
      }
      result.matches.push_back(entry.second);
    }
    return result;
  }
  SbResult<GrepResult> DoGrep(const std::string& path, const std::string& pattern,
                              const GrepOptions& options) override;

 private:
  static SbStatus Check(const std::string& path) {
    if (path.rfind("/mnt/user-data/", 0) != 0 || path.find("..") != std::string::npos) {
      return SandboxError{SandboxErrc::kPathEscape, "Access denied", EACCES};
    }
    return {};
  }
  // (path relative to `dir`, virtual path) of the files below `dir`.
  std::vector<std::pair<std::string, std::string>> Under(const std::string& dir) const {
    std::vector<std::pair<std::string, std::string>> out;
    std::string prefix = dir.back() == '/' ? dir : dir + "/";
    for (const auto& entry : files_) {
      if (entry.first.rfind(prefix, 0) == 0) {
        out.emplace_back(entry.first.substr(prefix.size()), entry.first);
      }
    }
    return out;
  }
  std::map<std::string, std::string> files_;
};

SbResult<GrepResult> MemorySandbox::DoGrep(const std::string& path, const std::string& pattern,
                                           const GrepOptions& options) {
  RETURN_SB_IF_ERROR(Check(path));
  auto matcher = LineMatcher::Create(pattern, options.literal, options.case_sensitive);
  if (!matcher) return matcher.error();
  GrepResult result;
  for (const auto& [rel, virtual_path] : Under(path)) {
    if (options.glob && !GlobMatches(*options.glob, rel)) continue;
    const std::string& text = files_.at(virtual_path);
    size_t start = 0;
    for (int line_no = 1; start < text.size(); ++line_no) {
      size_t end = std::min(text.find('\n', start), text.size());
      std::string line = text.substr(start, end - start);
      start = end + 1;
      // As the providers do (tools/providers/file_access.cc): long lines are not matched.
      if (line.size() > kGrepMaxLineChars || !matcher->Matches(line)) continue;
      if (static_cast<int>(result.matches.size()) >= options.max_results) {
        result.truncated = true;
        return result;
      }
      result.matches.push_back({virtual_path, line_no, GrepSummary(line)});
    }
  }
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [name, body] = corral::fuzz::SplitAtNul(corral::fuzz::AsString(data, size));
  nlohmann::json args = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded()) return 0;
  MemorySandbox sandbox;
  corral::tools::ToolSettings settings;
  settings.secrets = {"s3cr3t-value"};
  auto out = corral::tools::RunTool(sandbox, name, args, settings);
  if (!out.ok && out.text.rfind("Error: ", 0) != 0) {
    corral::fuzz::Fail("a failed tool's text does not start with \"Error: \"", out.text);
  }
  return 0;
}
