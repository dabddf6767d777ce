// corral-runc: runc's command line over corral's jail, for callers that drive an OCI
// runtime by runc's verbs and flags: containerd's runc shim (BinaryName), CRI, podman and
// conmon (--runtime). The verbs are runtime/oci/runc_container.h; this file only reads
// the command line, writes errors where runc's callers look for them (stderr and the
// --log file, as JSON lines with --log-format json) and exits as runc does (1 on error).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/runc/features.h"
#include "runtime/oci/runc_container.h"

namespace {

using corral::runtime::oci::GlobalOptions;

struct RuncLog {
  std::string path;
  bool json = false;

  void Write(const char* level, const std::string& message) const {
    if (path.empty()) return;
    std::ofstream out(path, std::ios::app);
    if (!out) return;
    if (json) {
      char when[32];
      std::time_t now = std::time(nullptr);
      std::tm tm{};
      ::gmtime_r(&now, &tm);
      std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
      out << nlohmann::json{{"level", level}, {"msg", message}, {"time", when}}.dump() << "\n";
    } else {
      out << level << ": " << message << "\n";
    }
  }
};

int Fail(const RuncLog& log, const std::string& message) {
  log.Write("error", message);
  std::cerr << "corral-runc: " << message << "\n";
  return 1;
}

int Finish(const RuncLog& log, const corral::Status& status) {
  return status.has_value() ? 0 : Fail(log, status.error().message());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"corral-runc: an OCI runtime with runc's command line and corral's jail"};
  app.set_version_flag("-v,--version",
                       "corral-runc version " CORRAL_RUNC_VERSION "\nspec: 1.1.0\n");
  GlobalOptions global;
  RuncLog log;
  std::string log_format = "text";
  std::string rootless = "false";
  bool debug = false;
  app.add_option("--root", global.root, "where container records are kept")->capture_default_str();
  app.add_option("--log", log.path, "append errors here (the caller's log file)");
  app.add_option("--log-format", log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--systemd-cgroup", global.systemd_cgroup,
               "linux.cgroupsPath is slice:prefix:name (made as cgroupfs directories)");
  app.add_flag("--debug", debug, "accepted, as runc takes it");
  app.add_option("--rootless", rootless, "only false or auto: corral-runc runs as root")
      ->check(CLI::IsMember({"false", "auto"}));
  app.require_subcommand(1);

  corral::runtime::oci::CreateOptions create;
  bool no_pivot = false;
  bool no_new_keyring = false;
  auto add_create_flags = [&](CLI::App* sub) {
    sub->add_option("-b,--bundle", create.bundle, "the bundle directory (config.json)");
    sub->add_option("--pid-file", create.pid_file, "write the process's pid here");
    sub->add_option("--console-socket", create.console_socket,
                    "a unix socket that receives the pty master (process.terminal)");
    sub->add_option("--preserve-fds", create.preserve_fds, "pass fds 3..3+N-1 on");
    sub->add_flag("--no-pivot", no_pivot, "accepted: corral-runc falls back to MS_MOVE itself");
    sub->add_flag("--no-new-keyring", no_new_keyring,
                  "accepted: corral-runc never makes a session keyring");
    sub->add_option("id", create.id, "container id")->required();
  };
  CLI::App* create_cmd = app.add_subcommand("create", "build a container, stopped at its start");
  add_create_flags(create_cmd);
  CLI::App* run_cmd = app.add_subcommand("run", "create, start, wait, delete");
  add_create_flags(run_cmd);

  std::string id;
  CLI::App* start_cmd = app.add_subcommand("start", "run the created container's process");
  start_cmd->add_option("id", id)->required();
  CLI::App* state_cmd = app.add_subcommand("state", "print the container's state as JSON");
  state_cmd->add_option("id", id)->required();
  bool all = false;
  std::string signal_text = "SIGTERM";
  CLI::App* kill_cmd = app.add_subcommand("kill", "signal the container's process");
  kill_cmd->add_flag("-a,--all", all, "every process of the container");
  kill_cmd->add_option("id", id)->required();
  kill_cmd->add_option("signal", signal_text);
  bool force = false;
  CLI::App* delete_cmd = app.add_subcommand("delete", "remove a stopped container");
  delete_cmd->add_flag("-f,--force", force, "kill it first if it is not stopped");
  delete_cmd->add_option("id", id)->required();
  CLI::App* pause_cmd = app.add_subcommand("pause", "freeze every process of the container");
  pause_cmd->add_option("id", id)->required();
  CLI::App* resume_cmd = app.add_subcommand("resume", "thaw the container");
  resume_cmd->add_option("id", id)->required();
  std::string format = "table";
  CLI::App* ps_cmd = app.add_subcommand("ps", "the container's processes");
  ps_cmd->add_option("-f,--format", format)->check(CLI::IsMember({"table", "json"}));
  ps_cmd->add_option("id", id)->required();
  ps_cmd->allow_extras();  // ps options after the id, as runc passes them on to ps(1)
  bool quiet = false;
  CLI::App* list_cmd = app.add_subcommand("list", "the containers under --root");
  list_cmd->add_option("-f,--format", format)->check(CLI::IsMember({"table", "json"}));
  list_cmd->add_flag("-q,--quiet", quiet, "ids only");
  CLI::App* features_cmd = app.add_subcommand("features", "what this runtime supports (JSON)");
  // Verbs of runc's that corral-runc does not have yet: named, with a clear refusal.
  std::vector<CLI::App*> missing;
  corral::runtime::oci::ExecOptions exec;
  CLI::App* exec_cmd = app.add_subcommand("exec", "run a process in a running container");
  exec_cmd->add_option("-p,--process", exec.process_file, "an OCI process object (JSON)");
  exec_cmd->add_flag("-d,--detach", exec.detach, "return once it runs (the caller reaps it)");
  exec_cmd->add_option("--pid-file", exec.pid_file, "write the process's pid here");
  exec_cmd->add_option("--console-socket", exec.console_socket, "receives the pty master");
  exec_cmd->add_flag("-t,--tty", exec.tty, "a pty (without --process)");
  exec_cmd->add_option("--cwd", exec.cwd, "working directory (without --process)");
  exec_cmd->add_option("-e,--env", exec.env, "KEY=value added (without --process)");
  exec_cmd->add_option("--preserve-fds", exec.preserve_fds, "pass fds 3..3+N-1 on");
  // ID [COMMAND [ARG...]]: everything from the id on is taken as it is.
  exec_cmd->prefix_command();
  std::string resources_file;
  CLI::App* update_cmd = app.add_subcommand("update", "change a running container's limits");
  update_cmd
      ->add_option("-r,--resources", resources_file,
                   "linux.resources JSON, from a file or - (stdin)")
      ->required();
  update_cmd->add_option("id", id)->required();
  bool stats_once = false;
  int interval_seconds = 5;
  CLI::App* events_cmd = app.add_subcommand("events", "the container's cgroup figures (JSON)");
  events_cmd->add_flag("--stats", stats_once, "one stats event, then exit");
  events_cmd->add_option("--interval", interval_seconds, "seconds between events")
      ->check(CLI::PositiveNumber);
  events_cmd->add_option("id", id)->required();
  for (const char* verb : {"checkpoint", "restore", "spec"}) {
    CLI::App* sub = app.add_subcommand(verb, "not supported by corral-runc yet");
    sub->allow_extras();
    sub->prefix_command();
    missing.push_back(sub);
  }
  CLI11_PARSE(app, argc, argv);
  log.json = log_format == "json";
  (void)debug;
  (void)no_pivot;
  (void)no_new_keyring;

  namespace oci = corral::runtime::oci;
  for (CLI::App* sub : missing) {
    if (sub->parsed()) {
      return Fail(log,
                  std::string("\"") + sub->get_name() + "\" is not supported by corral-runc yet");
    }
  }
  if (create_cmd->parsed() || run_cmd->parsed()) {
    std::vector<std::string> notes;
    if (create_cmd->parsed()) {
      corral::Status created = oci::CreateContainer(global, create, &notes);
      for (const std::string& note : notes) log.Write("info", note);
      return Finish(log, created);
    }
    corral::Result<int> code = oci::RunContainer(global, create, &notes);
    if (!code) return Fail(log, code.error().message());
    return *code;
  }
  if (exec_cmd->parsed()) {
    std::vector<std::string> rest = exec_cmd->remaining();
    if (rest.empty()) return Fail(log, "exec: no container id");
    exec.id = rest.front();
    exec.args.assign(rest.begin() + 1, rest.end());
    corral::Result<int> code = oci::ExecInContainer(global, exec);
    if (!code) return Fail(log, code.error().message());
    return *code;
  }
  if (start_cmd->parsed()) return Finish(log, oci::StartContainer(global, id));
  if (update_cmd->parsed()) {
    std::string text;
    if (resources_file == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      std::ifstream in(resources_file);
      if (!in) return Fail(log, "update: cannot read " + resources_file);
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    std::vector<std::string> notes;
    corral::Status updated = oci::UpdateContainer(global, id, text, &notes);
    for (const std::string& note : notes) log.Write("info", note);
    return Finish(log, updated);
  }
  if (events_cmd->parsed()) {
    for (;;) {
      corral::Result<std::string> event = oci::ContainerStatsEvent(global, id);
      if (!event) return stats_once ? Fail(log, event.error().message()) : 0;
      std::cout << *event << std::endl;
      if (stats_once) return 0;
      ::sleep(static_cast<unsigned>(interval_seconds));
    }
  }
  if (state_cmd->parsed()) {
    corral::Result<std::string> state = oci::ContainerStateJson(global, id);
    if (!state) return Fail(log, state.error().message());
    std::cout << *state << "\n";
    return 0;
  }
  if (kill_cmd->parsed()) {
    corral::Result<int> sig = oci::ParseSignal(signal_text);
    if (!sig) return Fail(log, sig.error().message());
    return Finish(log, oci::KillContainer(global, id, *sig, all));
  }
  if (delete_cmd->parsed()) return Finish(log, oci::DeleteContainer(global, id, force));
  if (pause_cmd->parsed()) return Finish(log, oci::PauseContainer(global, id, true));
  if (resume_cmd->parsed()) return Finish(log, oci::PauseContainer(global, id, false));
  if (ps_cmd->parsed()) {
    corral::Result<std::vector<pid_t>> pids = oci::ContainerPids(global, id);
    if (!pids) return Fail(log, pids.error().message());
    if (format == "json") {
      std::cout << nlohmann::json(*pids).dump() << "\n";
    } else {
      std::cout << "PID\n";
      for (pid_t pid : *pids) std::cout << pid << "\n";
    }
    return 0;
  }
  if (list_cmd->parsed()) return corral::runc_cli::PrintList(global, format, quiet);
  if (features_cmd->parsed()) {
    std::cout << corral::runc_cli::FeaturesJson() << "\n";
    return 0;
  }
  return Fail(log, "no verb");
}
