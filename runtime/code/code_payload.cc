#include "runtime/code/code_payload.h"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/trusted_files.h"
#include "runtime/spec/utf8_text.h"

namespace corral::runtime::code {
namespace {

// Reads the payload (all of stdin), runs the runner's source and hands it the payload.
constexpr const char* kBootstrap =
    "import sys,json\n"
    "p=json.loads(sys.stdin.buffer.read())\n"
    "g={'__name__':'corral._runner'}\n"
    "exec(compile(p['modules']['corral._runner'],'/corral/_runner.py','exec'),g)\n"
    "g['main'](p)\n";

// Its files decide what the scan allows: only root or we may have written them.
Status CheckTrusted(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Error::FromErrno(errno, path);
  return CheckOwnedByRootOrUs(path, st);
}

}  // namespace

Result<std::string> FindPythonDir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CORRAL_PYTHON_DIR"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    if (std::string own = OwnExecutableDir(); !own.empty()) {
      candidates.push_back(own + "/../../share/corral/python");
    }
    candidates.emplace_back(CORRAL_PYTHON_INSTALL_DIR);
    candidates.emplace_back(CORRAL_PYTHON_SOURCE_DIR);
  }
  std::string tried;
  for (const std::string& dir : candidates) {
    struct stat st;
    if (::stat((dir + "/corral/_runner.py").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      tried += (tried.empty() ? "" : ", ") + dir;
      continue;
    }
    RETURN_IF_ERROR(CheckTrusted(dir + "/corral"));
    return dir;
  }
  return Error(ErrorCode::kNotFound,
               "corral's Python package (corral/_runner.py) not found; tried " + tried +
                   " (set CORRAL_PYTHON_DIR)");
}

Result<std::vector<std::pair<std::string, std::string>>> ReadCorralModules(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> modules;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/corral", ec)) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() != ".py" || !entry.is_regular_file()) continue;
    RETURN_IF_ERROR(CheckTrusted(path.string()));
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return Error(ErrorCode::kIo, "cannot read " + path.string());
    const std::string stem = path.stem().string();
    modules.emplace_back(stem == "__init__" ? "corral" : "corral." + stem, text.str());
  }
  if (ec) return Error::FromErrno(ec.value(), dir + "/corral");
  return modules;
}

Status CheckCode(const std::string& code) {
  if (code.size() > kMaxCodeBytes) {
    return Error(ErrorCode::kInvalidArgument, "code: " + std::to_string(code.size()) +
                                                  " bytes; at most " +
                                                  std::to_string(kMaxCodeBytes) + " are run");
  }
  if (!CheckUtf8Text(code, "code")) {
    return Error(ErrorCode::kInvalidArgument, "code: not valid UTF-8 text");
  }
  return {};
}

std::string BuildPayload(const std::string& code, const PythonSpec& policy,
                         const std::string& nonce,
                         const std::vector<std::pair<std::string, std::string>>& modules) {
  nlohmann::json commands = nlohmann::json::object();
  for (const auto& [name, path] : policy.commands) commands[name] = path;
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [name, text] : modules) sources[name] = text;
  nlohmann::json payload = {
      {"nonce", nonce},
      {"code", code},
      {"policy",
       {{"scan",
         {{"mode", std::string(Name(policy.scan.mode))},
          {"deny_calls", policy.scan.deny_calls},
          {"deny_modules", policy.scan.deny_modules},
          {"deny_paths", policy.scan.deny_paths},
          {"deny_environ", policy.scan.deny_environ}}},
        {"allowlist", policy.allowlist},
        {"commands", std::move(commands)},
        {"output_cap", policy.command_output_limit_bytes}}},
      {"modules", std::move(sources)},
  };
  return payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> RunnerArgv(const std::string& interpreter) {
  return {interpreter, "-I", "-c", kBootstrap};
}

std::string NewNonce() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace corral::runtime::code
