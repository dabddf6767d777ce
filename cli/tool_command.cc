// `corral tool NAME --thread T [--user U] [--args JSON | flags]`: one agent tool call,
// printing exactly the text the agent would get; `corral threads`: the thread sandboxes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "runtime/run/terminal_filter.h"
#include "runtime/sandboxes/persistent.h"
#include "runtime/spec/config.h"
#include "runtime/spec/provider_config.h"
#include "tools/providers/thread_dirs.h"
#include "tools/tool_service.h"

namespace corral::cli {
namespace {

struct CommonFlags {
  std::string config;
  std::string base_dir;
  std::string provider;                  // overrides sandbox.use
  std::string provisioner_url, aio_url;  // aio provider
};

struct ToolFlags {
  CommonFlags common;
  std::string tool, thread, user = runtime::kDefaultUserId, args;
  std::map<std::string, std::string> strings;  // --command, --path, ...
  std::map<std::string, int> ints;             // --start-line, ...
  std::map<std::string, bool> bools;           // --append, ...
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "corral: %s\n", message.c_str());
  return 125;
}

bool LoadConfig(const CommonFlags& f, runtime::ProviderConfig* config, runtime::JailSpec* spec) {
  if (!f.config.empty()) {
    if (auto st = runtime::LoadToolConfigFile(f.config, config, spec); !st) {
      std::fprintf(stderr, "corral: %s\n", st.error().message().c_str());
      return false;
    }
  }
  if (!f.base_dir.empty()) config->base_dir = f.base_dir;
  if (f.provider == "local") config->use = runtime::ProviderKind::kLocal;
  if (f.provider == "jail") config->use = runtime::ProviderKind::kJail;
  if (f.provider == "aio") config->use = runtime::ProviderKind::kAio;
  if (!f.provider.empty() && f.provider != "local" && f.provider != "jail" && f.provider != "aio") {
    std::fprintf(stderr, "corral: --provider: expected local, jail or aio (got \"%s\")\n",
                 f.provider.c_str());
    return false;
  }
  if (!f.provisioner_url.empty()) config->provisioner_url = f.provisioner_url;
  if (!f.aio_url.empty()) config->aio_url = f.aio_url;
  if (const char* key = std::getenv("CORRAL_API_KEY");
      key != nullptr && config->provisioner_api_key.empty()) {
    config->provisioner_api_key = key;
  }
  if (config->use == runtime::ProviderKind::kAio && config->provisioner_url.empty() &&
      config->aio_url.empty()) {
    std::fprintf(stderr,
                 "corral: the aio provider needs --provisioner-url (or sandbox.provisioner_url) "
                 "or --aio-url\n");
    return false;
  }
  return true;
}

void AddCommon(CLI::App* cmd, CommonFlags* f) {
  cmd->add_option("--config", f->config, "YAML config file (sandbox:, skills: and jail keys)");
  cmd->add_option("--base-dir", f->base_dir, "thread data directory (default /var/lib/corral)");
  cmd->add_option("--provider", f->provider, "local, jail or aio (overrides sandbox.use)");
  cmd->add_option("--provisioner-url", f->provisioner_url,
                  "aio: provisioner API that makes each thread's sandbox (key: "
                  "sandbox.provisioner_api_key or $CORRAL_API_KEY)");
  cmd->add_option("--aio-url", f->aio_url, "aio: one AIO server shared by every thread");
}

int RunToolCommand(const ToolFlags& f) {
  runtime::ProviderConfig config;
  runtime::JailSpec spec;
  if (!LoadConfig(f.common, &config, &spec)) return 125;
  nlohmann::json args = nlohmann::json::object();
  if (!f.args.empty()) {
    args = nlohmann::json::parse(f.args, nullptr, false);
    if (!args.is_object()) return Fail("--args: expected a JSON object");
  }
  for (const auto& [k, v] : f.strings) args[k] = v;
  for (const auto& [k, v] : f.ints) args[k] = v;
  for (const auto& [k, v] : f.bools) args[k] = v;
  auto service = tools::ToolService::FromConfig(config, spec);
  if (!service) return Fail(service.error().message());
  std::string audit_error;
  tools::ToolOutput out = (*service)->Call(f.user, f.thread, f.tool, args, &audit_error);
  if (!audit_error.empty()) std::fprintf(stderr, "corral: audit log: %s\n", audit_error.c_str());
  // The text holds what the sandbox printed or a file it wrote: on a terminal, through
  // the same filter as a run's output (runtime/run/terminal_filter.h); elsewhere as it is.
  if (::isatty(1)) {
    runtime::TerminalFilter filter;
    std::string shown;
    filter.Feed(out.text.data(), out.text.size(), &shown);
    filter.Finish(&shown);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fputc('\n', stdout);
  } else {
    std::fwrite(out.text.data(), 1, out.text.size(), stdout);
  }
  return out.ok ? 0 : 1;
}

int Threads(const CommonFlags& f, bool json) {
  runtime::ProviderConfig config;
  runtime::JailSpec spec;
  if (!LoadConfig(f, &config, &spec)) return 125;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [user, thread] : runtime::ListThreadDirs(config.base_dir)) {
    std::string name = runtime::JailSandboxName(config.base_dir, user, thread);
    auto info = runtime::InspectSandbox(name);
    std::string state = !info ? "none" : info->alive ? "running" : "dead";
    list.push_back({{"user", user},
                    {"thread", thread},
                    {"sandbox", name},
                    {"state", state},
                    {"processes", info ? info->processes : 0},
                    {"idle_seconds", info ? nlohmann::json(info->idle_seconds) : nullptr}});
  }
  if (json) {
    std::cout << list.dump() << std::endl;
    return 0;
  }
  std::printf("%-20s %-24s %-36s %-8s %5s\n", "USER", "THREAD", "SANDBOX", "STATE", "PROCS");
  for (const auto& t : list) {
    std::printf("%-20s %-24s %-36s %-8s %5zu\n", t["user"].get<std::string>().c_str(),
                t["thread"].get<std::string>().c_str(), t["sandbox"].get<std::string>().c_str(),
                t["state"].get<std::string>().c_str(), t["processes"].get<size_t>());
  }
  return 0;
}

}  // namespace

void AddToolCommands(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ToolFlags>();
  CLI::App* tool = app.add_subcommand(
      "tool", "Run one agent tool (bash ls read_file write_file str_replace glob grep)");
  tool->add_option("name", f->tool, "tool name")->required();
  tool->add_option("--thread", f->thread, "conversation thread id")->required();
  tool->add_option("--user", f->user, "user id (default: default)");
  tool->add_option("--args", f->args, "tool arguments as a JSON object");
  AddCommon(tool, &f->common);
  for (const char* s :
       {"command", "path", "content", "pattern", "glob", "old_str", "new_str", "description"}) {
    std::string flag = std::string("--") + s;
    for (char& c : flag) c = c == '_' ? '-' : c;
    tool->add_option_function<std::string>(
        flag, [f, s](const std::string& v) { f->strings[s] = v; }, std::string("argument ") + s);
  }
  for (const char* s : {"start_line", "end_line", "max_results"}) {
    std::string flag = std::string("--") + s;
    for (char& c : flag) c = c == '_' ? '-' : c;
    tool->add_option_function<int>(
        flag, [f, s](int v) { f->ints[s] = v; }, std::string("argument ") + s);
  }
  for (const char* s : {"append", "replace_all", "include_dirs", "literal", "case_sensitive"}) {
    std::string flag = std::string("--") + s;
    for (char& c : flag) c = c == '_' ? '-' : c;
    tool->add_flag_callback(
        flag, [f, s]() { f->bools[s] = true; }, std::string("argument ") + s);
  }
  tool->callback([f, exit_code]() { *exit_code = RunToolCommand(*f); });

  auto tf = std::make_shared<CommonFlags>();
  auto json = std::make_shared<bool>(false);
  CLI::App* threads = app.add_subcommand("threads", "List thread directories and their sandboxes");
  AddCommon(threads, tf.get());
  threads->add_flag("--json", *json, "one JSON array");
  threads->callback([tf, json, exit_code]() { *exit_code = Threads(*tf, *json); });
}

}  // namespace corral::cli
