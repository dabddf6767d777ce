"""corral's Python module (standard library only).

On the host, run model-written code in a corral jail:

    from corral import SandboxExecutor          # or Executor: the same class
    executor = SandboxExecutor(config="my_sandbox.yaml")
    result = executor.run(code)
    result.stdout, result.exit_code

Executor runs `corral code run --json` (the CLI; `corral` on PATH, or $CORRAL_BINARY, or
binary=...), or talks to a `corral serve` daemon when given url= and api_key= (each run in
the persistent sandbox `sandbox=`, or in one it creates on first use and removes on close()).

Inside the jail, during `corral code run`, the same package gives the snippet
`corral.secure_command` (run a tool from python.commands). Imports here stay lazy: the jail's
runner loads this file too, and should not pay for subprocess or urllib.
"""

__all__ = ["Executor", "SandboxExecutor", "Result", "CorralError"]


class CorralError(RuntimeError):
    """corral itself failed (bad config, no such sandbox, daemon unreachable); the code's
    own failures are Results with status "error"."""


class Result:
    """One run of a snippet.

    status: ok | error (non-zero exit) | timeout | oom | killed (another signal or limit)
            | refused (the static scan refused it; nothing ran) | setup_failed
    exit_code: the interpreter's exit status (124 timeout, 128+N signal N, 137 OOM kill,
               125 when refused or corral could not run it)
    findings: the static scan's findings, each {"line", "col", "name", "key", "message"}
              (a refusal also says them in stderr)
    limit: the limit that fired ("wall_time", "memory", ...) or None
    warnings: what corral warned about this run: weakened isolation, a read-write mount the
              sandbox user cannot write (with the host command that fixes it), and a hint
              when the code was refused a permission
    """

    def __init__(self, data):
        self.raw = data
        self.stdout = data.get("stdout", "")
        self.stderr = data.get("stderr", "")
        self.exit_code = data.get("exit_code")
        self.status = data.get("status", "")
        self.limit = data.get("limit")
        self.findings = data.get("findings", [])
        outcome = data.get("outcome") or {}
        self.warnings = list(outcome.get("warnings") or [])
        hint = (outcome.get("landlock") or {}).get("hint")
        if hint:
            self.warnings.append(hint)

    @property
    def ok(self):
        return self.status == "ok"

    def __repr__(self):
        return "Result(status=%r, exit_code=%r, findings=%d)" % (
            self.status, self.exit_code, len(self.findings))


class Executor:
    def __init__(self, config=None, *, binary=None, url=None, api_key=None, sandbox=None,
                 timeout=None, memory=None, extra_args=(), lang="python"):
        self.config = config
        self.binary = binary
        self.url = url.rstrip("/") if url else None
        self.api_key = api_key
        self.sandbox = sandbox
        self.timeout = timeout
        self.memory = memory
        self.extra_args = list(extra_args)
        self.lang = lang
        self._created_sandbox = None
        if self.url and config:
            raise ValueError("config= is the CLI's; a daemon uses its own config")

    # ---- the CLI ----
    def _corral(self):
        import os
        import shutil
        if self.binary:
            return self.binary
        env = os.environ.get("CORRAL_BINARY")
        if env:
            return env
        found = shutil.which("corral")
        if not found:
            raise CorralError("corral not found on PATH (set binary= or $CORRAL_BINARY)")
        return found

    def _cli_argv(self):
        argv = [self._corral(), "code", "run", "--json", "--lang", self.lang]
        if self.config:
            argv += ["--config", str(self.config)]
        if self.sandbox:
            argv += ["--sandbox", self.sandbox]
        if self.timeout is not None:
            argv += ["--timeout", str(self.timeout)]
        if self.memory is not None:
            argv += ["--memory", str(self.memory)]
        return argv + self.extra_args + ["-"]

    def _run_cli(self, code):
        import json
        import subprocess
        proc = subprocess.run(self._cli_argv(), input=code.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        try:
            data = json.loads(proc.stdout.decode("utf-8", "replace"))
        except ValueError:
            data = None
        if not isinstance(data, dict) or "status" not in data:
            raise CorralError("corral code run failed (exit %d): %s" % (
                proc.returncode, proc.stderr.decode("utf-8", "replace").strip()))
        if data.get("status") == "setup_failed" and "stdout" not in data:
            raise CorralError(proc.stderr.decode("utf-8", "replace").strip()
                              or data.get("error", {}).get("message", "setup failed"))
        return Result(data)

    # ---- the daemon ----
    def _request(self, method, path, body=None):
        import json
        import urllib.error
        import urllib.request
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + "/api/corral/v1" + path, data=data,
                                     method=method)
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("X-API-Key", self.api_key)
        try:
            with urllib.request.urlopen(req) as resp:
                return json.loads(resp.read().decode())
        except urllib.error.HTTPError as e:
            raise CorralError("%s %s: HTTP %d: %s" % (method, path, e.code,
                                                       e.read().decode("utf-8", "replace")))
        except urllib.error.URLError as e:
            raise CorralError("%s: %s" % (self.url, e.reason))

    def _run_daemon(self, code):
        if not self.sandbox:
            created = self._request("POST", "/sandboxes", {})
            self.sandbox = self._created_sandbox = created["name"]
        body = {"code": code, "lang": self.lang}
        if self.timeout is not None:
            body["timeout"] = self.timeout
        return Result(self._request("POST", "/sandboxes/%s/code" % self.sandbox, body))

    def run(self, code):
        """Runs `code` (a string) and returns its Result."""
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        return self._run_daemon(code) if self.url else self._run_cli(code)

    def close(self):
        """Removes the sandbox this executor created on a daemon, if any."""
        if self._created_sandbox:
            name, self._created_sandbox = self._created_sandbox, None
            self._request("DELETE", "/sandboxes/%s" % name)
            self.sandbox = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


SandboxExecutor = Executor  # the process-sandbox design's name for it
