"""corral's runner for `corral code run`: the first Python code of the jail's interpreter.

corral starts `python3 -I -c <bootstrap>` in the jail with a JSON payload on stdin:
  {"nonce", "code", "policy": {"scan": {...}, "allowlist": [...], "commands": {...},
   "output_cap"}, "modules": {"corral": source, "corral._scan": source, ...}}
The bootstrap (runtime/code/code_payload.cc) executes this file and calls main(payload).
The corral package comes in the payload, not from a mount, so the same run works in a fresh
jail, a pooled one and a persistent sandbox created long before.

main() scans the snippet (corral._scan), writes ONE header line to stderr before the
snippet can write anything:
  "\\x1ecorral-code " + {"nonce", "findings", "refused", "scan_ms"} + "\\n"
then either exits with REFUSED_EXIT or installs the import allow-list, configures
corral.secure_command and runs the snippet as __main__ with filename "<snippet>".
"""
import builtins
import importlib.abc
import importlib.util
import json
import linecache
import os
import sys
import time

HEADER_PREFIX = "\x1ecorral-code "
REFUSED_EXIT = 86  # informative only: corral trusts the header, not the exit code
SNIPPET = "<snippet>"


class _PayloadLoader(importlib.abc.Loader):
    def __init__(self, modules):
        self._modules = modules

    def _path(self, name):
        return "/corral/" + ("__init__" if name == "corral" else name.split(".", 1)[1]) + ".py"

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        exec(compile(self._modules[name], self._path(name), "exec"), module.__dict__)

    def get_source(self, name):
        return self._modules.get(name)


class _PayloadFinder(importlib.abc.MetaPathFinder):
    """Serves the corral package from the payload's sources."""

    def __init__(self, modules):
        self._loader = _PayloadLoader(modules)
        self._modules = modules

    def find_spec(self, name, path=None, target=None):
        if name not in self._modules:
            return None
        return importlib.util.spec_from_loader(name, self._loader, is_package=(name == "corral"))


def _header(findings, refused, scan_ms, nonce):
    line = HEADER_PREFIX + json.dumps({"nonce": nonce, "findings": findings, "refused": refused,
                                       "scan_ms": scan_ms}) + "\n"
    data = line.encode()
    while data:
        data = data[os.write(2, data):]


def _print_user_traceback(exc):
    """Like python3's own report, without the runner's frames before the snippet's and the
    import guard's after them (its ImportError is the snippet's import failing)."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != SNIPPET:
        tb = tb.tb_next
    report = traceback.TracebackException(type(exc), exc, tb)
    report.stack = traceback.StackSummary.from_list(
        [f for f in report.stack if not f.filename.startswith("/corral/_guard")])
    sys.stderr.write("".join(report.format()))


def main(payload):
    modules = payload["modules"]
    sys.meta_path.insert(0, _PayloadFinder(modules))
    # The snippet reads no stdin of its own (the payload came through it).
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    code = payload["code"]
    policy = payload["policy"]
    scan = policy["scan"]

    started = time.perf_counter()
    findings = []
    if scan.get("mode") != "off":
        from corral import _scan
        try:
            findings = _scan.scan(code, scan)
        except SyntaxError:
            findings = []  # compile() below reports it as Python would
    scan_ms = (time.perf_counter() - started) * 1000.0
    refused = bool(findings) and scan.get("mode", "deny") == "deny"
    _header(findings, refused, scan_ms, payload["nonce"])
    if refused:
        sys.exit(REFUSED_EXIT)

    from corral import _guard, secure_command
    secure_command._configure(policy.get("commands", {}), policy.get("output_cap", 1 << 20))
    user_globals = {"__name__": "__main__", "__file__": SNIPPET, "__builtins__": builtins}
    # Every line ends in a newline, as linecache's own reads make them: traceback places its
    # carets one column to the right on a last line without one.
    lines = code.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[SNIPPET] = (len(code), None, lines, SNIPPET)
    sys.argv = [SNIPPET]
    try:
        compiled = compile(code, SNIPPET, "exec")
    except SyntaxError as e:
        _print_user_traceback(e)
        sys.exit(1)
    _guard.install(policy.get("allowlist", []), user_globals)
    try:
        exec(compiled, user_globals)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: B902 - report every failure like python3 would
        _print_user_traceback(e)
        sys.exit(130 if isinstance(e, KeyboardInterrupt) else 1)
