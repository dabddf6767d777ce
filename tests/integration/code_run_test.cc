// `corral code run` black-box through the corral binary, and the Python module (corral.
// Executor) driving it: hello world, a non-zero exit, a traceback's line, a timeout, an OOM
// kill; every default python.scan.deny_calls entry refused at its line with nothing run;
// warn mode runs and reports; the import allow-list; corral.secure_command; a persistent
// sandbox. Root only (real jails); leak-checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/corral_paths.h"
#include "tests/support/leak_check.h"
#include "tests/support/temp_dir.h"

namespace corral::test {
namespace {

using nlohmann::json;

class CodeRunTest : public LeakCheckedTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "corral code run creates jails: needs root";
  }

  // corral code run --json <flags...> -c <code>; the JSON result (null if none).
  json Code(const std::string& code, std::vector<std::string> flags = {},
            std::string* describe = nullptr) {
    std::vector<std::string> args = {"code", "run", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("-c");
    args.push_back(code);
    auto r = RunCorral(args);
    if (!r) {
      ADD_FAILURE() << r.error().message();
      return nullptr;
    }
    last_ = r->Describe();
    if (describe != nullptr) *describe = last_;
    json j = json::parse(r->out, nullptr, false);
    if (!j.is_object()) {
      ADD_FAILURE() << "no JSON result:\n" << last_;
      return nullptr;
    }
    EXPECT_EQ(r->exit_code, j["exit_code"].get<int>()) << last_;
    return j;
  }

  std::string Config(const std::string& yaml) {
    EXPECT_TRUE(dir_.WriteFile("corral.yaml", yaml));
    return dir_.Join("corral.yaml");
  }

  // The finding at `line` naming `name`, or null.
  static json FindingAt(const json& result, int line, const std::string& name) {
    for (const auto& f : result["findings"]) {
      if (f["line"] == line && f["name"] == name) return f;
    }
    return nullptr;
  }

  TempDir dir_;
  std::string last_;
};

TEST_F(CodeRunTest, HelloWorld) {
  json r = Code("print('hello, world')");
  EXPECT_EQ(r["status"], "ok") << last_;
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["stdout"], "hello, world\n");
  EXPECT_EQ(r["stderr"], "") << "the runner's header line is not the code's stderr";
  EXPECT_TRUE(r["findings"].empty());
  EXPECT_TRUE(r["limit"].is_null());
  EXPECT_EQ(r["scan_mode"], "deny");
  EXPECT_TRUE(r["scan_ms"].is_number());
  EXPECT_EQ(r["outcome"]["status"], "exited");
}

TEST_F(CodeRunTest, RunsAsTheJailUserWithNoStdinOfItsOwn) {
  json r = Code("import os, sys\nprint(os.getuid(), repr(sys.stdin.read()), __name__)");
  EXPECT_EQ(r["stdout"], "1000 '' __main__\n") << last_;
}

TEST_F(CodeRunTest, NonZeroExitAndTracebackLines) {
  json r = Code("import sys\nprint('out')\nsys.exit(3)");
  EXPECT_EQ(r["status"], "error") << last_;
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_EQ(r["stdout"], "out\n");

  json raised = Code("x = 1\n\nraise ValueError('boom')\n");
  EXPECT_EQ(raised["status"], "error") << last_;
  EXPECT_EQ(raised["exit_code"], 1);
  const std::string err = raised["stderr"];
  EXPECT_NE(err.find("File \"<snippet>\", line 3"), std::string::npos) << err;
  EXPECT_NE(err.find("ValueError: boom"), std::string::npos) << err;
  EXPECT_EQ(err.find("_runner"), std::string::npos) << "the runner's frames are not shown:\n"
                                                    << err;

  // The carets stand under what failed, with or without a newline after the last line.
  for (const char* code : {"a = None\nb = a.x + 1", "a = None\nb = a.x + 1\n"}) {
    json attr = Code(code);
    EXPECT_NE(attr["stderr"].get<std::string>().find("    b = a.x + 1\n        ^^^\n"),
              std::string::npos)
        << last_;
  }

  json syntax = Code("print('a'\n");
  EXPECT_EQ(syntax["status"], "error") << last_;
  EXPECT_NE(syntax["stderr"].get<std::string>().find("SyntaxError"), std::string::npos) << last_;
}

TEST_F(CodeRunTest, Timeout) {
  json r = Code("print('start', flush=True)\nwhile True:\n    pass\n", {"--timeout", "1"});
  EXPECT_EQ(r["status"], "timeout") << last_;
  EXPECT_EQ(r["exit_code"], 124);
  EXPECT_EQ(r["limit"], "wall_time");
  EXPECT_EQ(r["stdout"], "start\n");
}

TEST_F(CodeRunTest, OutOfMemory) {
  json r = Code("b = b'x' * (512 * 1024 * 1024)\nprint(len(b))\n", {"--memory", "64m"});
  EXPECT_EQ(r["status"], "oom") << last_;
  EXPECT_EQ(r["exit_code"], 137);
  EXPECT_EQ(r["limit"], "memory");
}

TEST_F(CodeRunTest, EachDefaultDenyCallIsRefusedAtItsLine) {
  // {code with the call on line 3, the name the finding must give}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"import os\nprint('ran')\nos.system('id')\n", "os.system"},
      {"import os\nprint('ran')\nos.popen('id')\n", "os.popen"},
      {"import os\nprint('ran')\nos.execv('/bin/true', ['true'])\n", "os.execv"},
      {"import os\nprint('ran')\nos.spawnl(os.P_WAIT, '/bin/true', 'true')\n", "os.spawnl"},
      {"import subprocess\nprint('ran')\nsubprocess.run(['id'])\n", "subprocess.run"},
      {"import pty\nprint('ran')\npty.spawn('/bin/sh')\n", "pty.spawn"},
      {"import pickle\nprint('ran')\npickle.loads(b'')\n", "pickle.loads"},
      {"import pickle\nprint('ran')\npickle.load(open('/dev/null', 'rb'))\n", "pickle.load"},
      {"import marshal\nprint('ran')\nmarshal.loads(b'')\n", "marshal.loads"},
      {"x = '1'\nprint('ran')\neval(x)\n", "eval"},
      {"x = '1'\nprint('ran')\nexec(x)\n", "exec"},
      {"x = '1'\nprint('ran')\ncompile(x, 'f', 'eval')\n", "compile"},
      {"x = 'os'\nprint('ran')\n__import__(x)\n", "__import__"},
      {"import importlib\nprint('ran')\nimportlib.import_module('os')\n",
       "importlib.import_module"},
  };
  for (const auto& [code, name] : cases) {
    json r = Code(code);
    EXPECT_EQ(r["status"], "refused") << name << "\n" << last_;
    EXPECT_EQ(r["exit_code"], 125) << name;
    EXPECT_EQ(r["stdout"], "") << name << ": nothing ran";
    json f = FindingAt(r, 3, name);
    ASSERT_FALSE(f.is_null()) << name << " not found at line 3:\n" << last_;
    EXPECT_EQ(f["key"], "python.scan.deny_calls") << name;
    EXPECT_NE(f["message"].get<std::string>().find(name), std::string::npos) << name;
  }
}

TEST_F(CodeRunTest, RefusalWithoutJsonNamesLineCallAndKey) {
  auto r = RunCorral({"code", "run", "-c", "import os\n\nos.system('id')\n"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("line 3: os.system is denied (pattern 'os.system' in "
                        "python.scan.deny_calls)"),
            std::string::npos)
      << r->Describe();
  EXPECT_NE(r->err.find("python.scan.mode: warn"), std::string::npos) << r->Describe();
}

TEST_F(CodeRunTest, AliasesPathsEnvironAndModulesAreFindings) {
  const std::string config = Config("python:\n  scan: {deny_modules: [ctypes]}\n");
  json r = Code(
      "import os as o\nfrom subprocess import Popen as P\nprint(o.environ)\n"
      "open('/etc/shadow')\nimport ctypes\nprint(o.environ.get('HOME'))\n",
      {"--config", config});
  EXPECT_EQ(r["status"], "refused") << last_;
  EXPECT_FALSE(FindingAt(r, 2, "subprocess.Popen").is_null()) << last_;
  EXPECT_EQ(FindingAt(r, 3, "os.environ")["key"], "python.scan.deny_environ") << last_;
  EXPECT_EQ(FindingAt(r, 4, "/etc/shadow")["key"], "python.scan.deny_paths") << last_;
  EXPECT_EQ(FindingAt(r, 5, "ctypes")["key"], "python.scan.deny_modules") << last_;
  EXPECT_EQ(r["findings"].size(), 4u) << "os.environ.get(NAME) reads one variable:\n" << last_;
}

TEST_F(CodeRunTest, WarnModeRunsAndReports) {
  const std::string config = Config("python:\n  scan: {mode: warn}\n");
  json r = Code("x = '40 + 2'\nprint('ran')\nprint(eval(x))\n", {"--config", config});
  EXPECT_EQ(r["status"], "ok") << last_;
  EXPECT_EQ(r["stdout"], "ran\n42\n");
  EXPECT_EQ(r["scan_mode"], "warn");
  EXPECT_FALSE(FindingAt(r, 3, "eval").is_null()) << last_;

  auto plain = RunCorral({"code", "run", "--config", config, "-c", "print(eval('1'))"});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->exit_code, 0) << plain->Describe();
  EXPECT_EQ(plain->out, "1\n");
  EXPECT_NE(plain->err.find("corral: warning: line 1: eval is denied"), std::string::npos)
      << plain->Describe();
}

TEST_F(CodeRunTest, AllowListRefusesOtherModules) {
  const std::string config = Config("python:\n  allowlist: [json, math]\n");
  json refused = Code("import json\nimport requests\n", {"--config", config});
  EXPECT_EQ(refused["status"], "error") << last_;
  EXPECT_NE(refused["stderr"].get<std::string>().find(
                "ImportError: module 'requests' is not allowed (python.allowlist)"),
            std::string::npos)
      << last_;
  // os is loaded before the snippet starts; the statement is refused all the same.
  json os = Code("import os\n", {"--config", config});
  EXPECT_NE(os["stderr"].get<std::string>().find("module 'os' is not allowed"), std::string::npos)
      << last_;
  json from = Code("from email import message\n", {"--config", config});
  EXPECT_NE(from["stderr"].get<std::string>().find("module 'email' is not allowed"),
            std::string::npos)
      << last_;
  // json imports re, codecs, ...: the standard library's own imports keep working.
  json allowed = Code("import json, math\nprint(json.dumps({'pi': round(math.pi, 2)}))\n",
                      {"--config", config});
  EXPECT_EQ(allowed["status"], "ok") << last_;
  EXPECT_EQ(allowed["stdout"], "{\"pi\": 3.14}\n");
  // Without an allow-list any module imports.
  json open = Code("import email.message\nprint('ok')\n");
  EXPECT_EQ(open["stdout"], "ok\n") << last_;
}

// importlib.import_module() and __import__() do not go through the import statement's
// hook: the finder checks who asked (the scan denies both by default; warn mode lets them run).
TEST_F(CodeRunTest, AllowListCatchesImportModuleAndDunderImport) {
  const std::string config =
      Config("python:\n  scan: {mode: warn}\n  allowlist: [json, importlib]\n");
  json r = Code(
      "import importlib\nprint(importlib.import_module('json').dumps(2))\n"
      "importlib.import_module('csv')\n",
      {"--config", config});
  EXPECT_EQ(r["stdout"], "2\n") << last_;
  EXPECT_NE(r["stderr"].get<std::string>().find("module 'csv' is not allowed"), std::string::npos)
      << last_;
  json mod = Code("print(__import__('json').dumps(1))\n__import__('csv')\n", {"--config", config});
  EXPECT_EQ(mod["stdout"], "1\n") << last_;
  EXPECT_NE(mod["stderr"].get<std::string>().find("module 'csv' is not allowed"), std::string::npos)
      << last_;
}

TEST_F(CodeRunTest, SecureCommandRunsAllowedToolsOnly) {
  const std::string config = Config("python:\n  commands: [echo, sleep]\n");
  json r = Code(
      "from corral import secure_command\n"
      "r = secure_command.run('echo', args=['hi there', '$HOME;id'], timeout=10)\n"
      "print(r.exit_code, r.stdout.strip(), r.argv[0])\n"
      "try:\n"
      "    secure_command.run('id', timeout=5)\n"
      "except PermissionError as e:\n"
      "    print('refused:', e)\n"
      "t = secure_command.run('sleep', args=['30'], timeout=0.5)\n"
      "print('timed out:', t.timed_out, t.exit_code)\n",
      {"--config", config});
  EXPECT_EQ(r["status"], "ok") << last_;
  const std::string out = r["stdout"];
  EXPECT_NE(out.find("0 hi there $HOME;id /"), std::string::npos) << "no shell:\n" << out;
  EXPECT_NE(out.find("refused: command 'id' is not allowed (python.commands; allowed: echo, "
                     "sleep)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("timed out: True None"), std::string::npos) << out;
  EXPECT_TRUE(r["findings"].empty()) << "the scanner allows secure_command:\n" << last_;
}

TEST_F(CodeRunTest, CodeFromFileAndStdin) {
  ASSERT_TRUE(dir_.WriteFile("snippet.py", "print(6 * 7)\n"));
  auto file = RunCorral({"code", "run", dir_.Join("snippet.py")});
  ASSERT_TRUE(file);
  EXPECT_EQ(file->out, "42\n") << file->Describe();
  RunOptions options;
  options.stdin_data = "print('from stdin')\n";
  auto in = RunCorral({"code", "run", "-"}, options);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->out, "from stdin\n") << in->Describe();
  auto none = RunCorral({"code", "run"});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->exit_code, 125);
  EXPECT_NE(none->err.find("no code given"), std::string::npos) << none->Describe();
}

TEST_F(CodeRunTest, BadPolicyIsAConfigErrorWithItsFieldPath) {
  const std::string config = Config("python:\n  commands: [corral-no-such-tool]\n");
  auto r = RunCorral({"code", "run", "--config", config, "-c", "print(1)"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 125) << r->Describe();
  EXPECT_NE(r->err.find("python.commands[0]: \"corral-no-such-tool\": not found"),
            std::string::npos)
      << r->Describe();
}

TEST_F(CodeRunTest, PersistentSandbox) {
  auto created = RunCorral({"create", "--name", "code1"});
  ASSERT_TRUE(created);
  ASSERT_EQ(created->exit_code, 0) << created->Describe();
  json first =
      Code("open('/tmp/state', 'w').write('kept')\nprint('one')\n", {"--sandbox", "code1"});
  EXPECT_EQ(first["status"], "ok") << last_;
  json second = Code("print(open('/tmp/state').read())\n", {"--sandbox", "code1"});
  EXPECT_EQ(second["stdout"], "kept\n") << last_;
  json refused = Code("import os\nos.system('id')\n", {"--sandbox", "code1"});
  EXPECT_EQ(refused["status"], "refused") << last_;
  auto removed = RunCorral({"rm", "code1"});
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->exit_code, 0) << removed->Describe();
}

// The design's example, with only its import line changed, and the module's other results.
TEST_F(CodeRunTest, PythonModuleEndToEnd) {
  const std::string config = Config("python:\n  allowlist: [json, math]\n");
  ASSERT_TRUE(dir_.WriteFile("client.py", R"PY(
import json, sys
from corral import SandboxExecutor

executor = SandboxExecutor(config=sys.argv[1])
result = executor.run("import json\nprint(json.dumps([1, 2]))\n")
print(json.dumps({"case": "hello", "stdout": result.stdout, "exit_code": result.exit_code,
                  "status": result.status}))

from corral import Executor, Result
for case, code, kwargs in [
    ("exit", "raise SystemExit(4)\n", {}),
    ("timeout", "while True:\n    pass\n", {"timeout": 1}),
    ("oom", "b = b'x' * (512 * 1024 * 1024)\n", {"memory": "64m"}),
    ("refused", "import os\n\nos.system('id')\n", {}),
    ("import", "import requests\n", {}),
    ("mount", "open('/x/f', 'w')\n", {"extra_args": ["-v", sys.argv[2] + ":/x:rw"]}),
]:
    r = Executor(config=sys.argv[1], **kwargs).run(code)
    assert isinstance(r, Result)
    print(json.dumps({"case": case, "status": r.status, "exit_code": r.exit_code,
                      "limit": r.limit, "stderr": r.stderr, "warnings": r.warnings,
                      "findings": [[f["line"], f["name"]] for f in r.findings]}))
)PY"));
  RunOptions options;
  options.timeout = std::chrono::milliseconds(120000);
  options.env = {"PYTHONPATH=" + SourceDir() + "/python", "CORRAL_BINARY=" + CorralBinary()};
  // A read-write mount the sandbox user cannot write (root's, 0755).
  ASSERT_TRUE(dir_.MakeDirs("roots-only"));
  ASSERT_EQ(::chmod(dir_.Join("roots-only").c_str(), 0755), 0);
  auto r = RunProgram("/usr/bin/python3", {dir_.Join("client.py"), config, dir_.Join("roots-only")},
                      options);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->exit_code, 0) << r->Describe();
  std::map<std::string, json> by_case;
  std::istringstream lines(r->out);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    by_case[j["case"]] = j;
  }
  EXPECT_EQ(by_case["hello"]["stdout"], "[1, 2]\n") << r->out;
  EXPECT_EQ(by_case["hello"]["exit_code"], 0);
  EXPECT_EQ(by_case["hello"]["status"], "ok");
  EXPECT_EQ(by_case["exit"]["status"], "error") << r->out;
  EXPECT_EQ(by_case["exit"]["exit_code"], 4);
  EXPECT_EQ(by_case["timeout"]["status"], "timeout") << r->out;
  EXPECT_EQ(by_case["timeout"]["limit"], "wall_time");
  EXPECT_EQ(by_case["oom"]["status"], "oom") << r->out;
  EXPECT_EQ(by_case["oom"]["exit_code"], 137);
  EXPECT_EQ(by_case["refused"]["status"], "refused") << r->out;
  EXPECT_EQ(by_case["refused"]["findings"], json::parse(R"([[3, "os.system"]])")) << r->out;
  EXPECT_NE(
      by_case["refused"]["stderr"].get<std::string>().find("corral: refused: line 3: os.system"),
      std::string::npos)
      << r->out;
  // The warning and the hint reach the Python caller: the host's fix, not Landlock.
  EXPECT_EQ(by_case["mount"]["status"], "error") << r->out;
  const std::string mount_warnings = by_case["mount"]["warnings"].dump();
  EXPECT_NE(mount_warnings.find("On the host: chown -R "), std::string::npos) << r->out;
  EXPECT_NE(mount_warnings.find("not writable by the sandbox user"), std::string::npos) << r->out;
  EXPECT_EQ(mount_warnings.find("--landlock off"), std::string::npos) << r->out;
  EXPECT_EQ(by_case["import"]["status"], "error") << r->out;
  EXPECT_NE(by_case["import"]["stderr"].get<std::string>().find(
                "module 'requests' is not allowed (python.allowlist)"),
            std::string::npos)
      << r->out;
}

}  // namespace
}  // namespace corral::test
