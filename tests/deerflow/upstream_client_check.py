#!/usr/bin/python3
"""Drives a live `corral serve` with DeerFlow's own client code, unchanged: its
RemoteSandboxBackend (the provisioner client) and AioSandbox (over the agent_sandbox SDK).

A manual check, not part of CI: it needs a DeerFlow checkout and the agent_sandbox SDK,
which corral does not carry. As root:

    tests/deerflow/upstream_client_check.py --corral build/cli/corral \\
        --deerflow ~/src/deer-flow/backend/packages/harness \\
        --sdk ~/src/agent-infra-sandbox/sdk/python

It starts a daemon on a free loopback port with a key and a scratch base_dir, runs DeerFlow's
calls and checks what DeerFlow reads from each, then kills the daemon with SIGKILL, starts a
new one and checks that the sandbox, its files and a background process survived. Prints
one line per check and exits 0 only if all passed. Removes its sandboxes and files.

DeerFlow's package __init__ files import its whole app (pydantic 2, langchain, ...). Where
that import fails (Debian 12 has pydantic 1), the check loads the same two modules and the
three they build on (deerflow.sandbox.{sandbox,search}, deerflow.runtime.user_context) from
the checkout into a scratch package with empty __init__ files, and stands in for the two
app-level helpers they use: VIRTUAL_PATH_PREFIX ("/mnt/user-data") and
user_should_see_legacy_skills (False). The SDK needs httpx and pydantic (python3-httpx,
python3-pydantic); its optional cloud provider (volcengine) gets an empty stand-in if absent.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

KEY = "upstream-check-key-0123456789"
# Its own sandbox id and (in main) its own runtime directory: it runs beside a live daemon
# and another check without meeting either.
SANDBOX = f"upstream-check-{os.getpid()}"
failures = []


def check(name, ok, detail=""):
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_deerflow(harness, scratch):
    """A deerflow package holding only the modules the client needs (see the docstring)."""
    src = os.path.join(harness, "deerflow")
    dst = os.path.join(scratch, "deerflow")
    for sub in ("", "config", "sandbox", "runtime", "skills", "skills/storage", "community",
                "community/aio_sandbox"):
        os.makedirs(os.path.join(dst, sub), exist_ok=True)
        open(os.path.join(dst, sub, "__init__.py"), "w").close()
    for rel in ("sandbox/sandbox.py", "sandbox/search.py", "runtime/user_context.py",
                "community/aio_sandbox/aio_sandbox.py", "community/aio_sandbox/backend.py",
                "community/aio_sandbox/remote_backend.py",
                "community/aio_sandbox/sandbox_info.py"):
        shutil.copyfile(os.path.join(src, rel), os.path.join(dst, rel))
    with open(os.path.join(dst, "config", "paths.py"), "w") as f:
        f.write('VIRTUAL_PATH_PREFIX = "/mnt/user-data"\n')
    with open(os.path.join(dst, "skills", "storage", "__init__.py"), "w") as f:
        f.write("def user_should_see_legacy_skills(user_id):\n    return False\n")


def import_client(args, scratch):
    sys.path.insert(0, args.sdk)
    try:
        import volcenginesdkcore  # noqa: F401  (the SDK's optional cloud provider)
    except ImportError:
        for mod in ("volcenginesdkcore", "volcenginesdkvefaas"):
            os.makedirs(os.path.join(scratch, "stubs", mod), exist_ok=True)
            open(os.path.join(scratch, "stubs", mod, "__init__.py"), "w").close()
        sys.path.insert(0, os.path.join(scratch, "stubs"))
    sys.path.insert(0, args.deerflow)
    try:
        from deerflow.community.aio_sandbox.aio_sandbox import AioSandbox
        from deerflow.community.aio_sandbox.remote_backend import RemoteSandboxBackend
        print("using DeerFlow's package as installed")
    except ImportError as e:
        print(f"DeerFlow's package does not import here ({e}); using its client modules alone")
        for name in [m for m in sys.modules if m == "deerflow" or m.startswith("deerflow.")]:
            del sys.modules[name]
        sys.path.remove(args.deerflow)
        scratch_deerflow(args.deerflow, os.path.join(scratch, "df"))
        sys.path.insert(0, os.path.join(scratch, "df"))
        from deerflow.community.aio_sandbox.aio_sandbox import AioSandbox
        from deerflow.community.aio_sandbox.remote_backend import RemoteSandboxBackend
    return AioSandbox, RemoteSandboxBackend


class Daemon:
    def __init__(self, corral, config, log):
        self.corral, self.config, self.log = corral, config, log
        self.proc = None

    def start(self, url):
        out = open(self.log, "a")
        self.proc = subprocess.Popen([self.corral, "serve", "--config", self.config],
                                     stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"corral serve did not answer /health (see {self.log})")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)


def run_checks(AioSandbox, RemoteSandboxBackend, url, base, daemon):
    be = RemoteSandboxBackend(provisioner_url=url, api_key=KEY)
    info = be.create("thread-upstream", SANDBOX, user_id="upstream-user")
    check("create returns a sandbox_url below the daemon",
          info.sandbox_url.startswith(url + f"/sandboxes/{SANDBOX}/"), info.sandbox_url)
    check("is_alive", be.is_alive(info))
    check("discover", be.discover(SANDBOX) is not None)
    check("list_running", SANDBOX in [i.sandbox_id for i in be.list_running()])
    sb = AioSandbox(SANDBOX, base_url=info.sandbox_url)
    check("home_dir", sb.home_dir == "/home/sandbox", sb.home_dir)
    out = sb.execute_command("echo hello; id -u; pwd")
    check("execute_command", out == "hello\n1000\n/mnt/user-data/workspace\n", repr(out))
    out = sb.execute_command("cat /nonexistent")
    check("execute_command stderr", "No such file or directory" in out, repr(out))
    out = sb.execute_command("echo $ONLY_HERE", env={"ONLY_HERE": "v1"})
    check("execute_command env", out == "v1\n", repr(out))
    out = sb.execute_command("echo ${ONLY_HERE:-unset}")
    check("env applies to that call only", out == "unset\n", repr(out))
    path = "/mnt/user-data/workspace/a/b/hello.txt"
    sb.write_file(path, "line1\nline2\nline3\n")
    sb.write_file(path, "line4\n", append=True)
    out = sb.read_file(path)
    check("write_file (parents created), append, read_file", out == "line1\nline2\nline3\nline4\n",
          repr(out))
    out = sb.read_file(path, start_line=2, end_line=3)
    check("read_file line range", out == "line2\nline3\n", repr(out))
    host = os.path.join(base, "users/upstream-user/threads/thread-upstream/user-data/workspace"
                              "/a/b/hello.txt")
    check("the file is in the thread's directory on the host", os.path.isfile(host), host)
    sb.update_file("/mnt/user-data/outputs/bin.dat", bytes(range(256)))
    data = sb.download_file("/mnt/user-data/outputs/bin.dat")
    check("update_file (base64) and download_file", data == bytes(range(256)), len(data))
    listing = sb.list_dir("/mnt/user-data")
    check("list_dir", "/mnt/user-data/outputs/bin.dat" in listing, listing)
    files, truncated = sb.glob("/mnt/user-data", "**/*.txt")
    check("glob", files == [path] and not truncated, (files, truncated))
    matches, _ = sb.grep("/mnt/user-data", "line[23]")
    check("grep", [(m.path, m.line_number, m.line) for m in matches] ==
          [(path, 2, "line2"), (path, 3, "line3")], matches)
    out = sb.execute_command("sleep 300 >/dev/null 2>&1 & echo $! > /tmp/bg.pid; echo started")
    check("a background process does not hold the call", out == "started\n", repr(out))
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        sb.execute_command(f"echo call{i}").strip())) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("8 concurrent calls", sorted(results) == [f"call{i}" for i in range(8)], results)

    daemon.stop(signal.SIGKILL)
    daemon.start(url)
    again = be.discover(SANDBOX)
    check("after kill -9 and a restart: discover, same url",
          again is not None and again.sandbox_url == info.sandbox_url, again)
    sb = AioSandbox(SANDBOX, base_url=info.sandbox_url)
    out = sb.read_file(path, start_line=4, end_line=4)
    check("after the restart: the file", out == "line4\n", repr(out))
    out = sb.execute_command("kill -0 $(cat /tmp/bg.pid) && echo alive")
    check("after the restart: the background process", out == "alive\n", repr(out))
    check("create again is idempotent",
          be.create("thread-upstream", SANDBOX, user_id="upstream-user").sandbox_url
          == info.sandbox_url)
    be.destroy(info)
    check("destroy", not be.is_alive(info))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corral", required=True, help="the corral binary")
    ap.add_argument("--deerflow", required=True, help="DeerFlow's backend/packages/harness")
    ap.add_argument("--sdk", required=True, help="agent-infra/sandbox's sdk/python")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="corral-upstream-check.")
    os.environ["CORRAL_RUNTIME_DIR"] = os.path.join(scratch, "run")  # the daemon's and rm's
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    base = os.path.join(scratch, "home")
    os.makedirs(base)
    config = os.path.join(scratch, "corral.yaml")
    with open(config, "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1:{port}\n  api_key: {KEY}\n"
                f"sandbox:\n  base_dir: {base}\n")
    daemon = Daemon(os.path.abspath(args.corral), config, os.path.join(scratch, "serve.log"))
    try:
        AioSandbox, RemoteSandboxBackend = import_client(args, scratch)
        daemon.start(url)
        run_checks(AioSandbox, RemoteSandboxBackend, url, base, daemon)
    except Exception as e:  # a client exception is a failed check, not a traceback
        check("no exception", False, f"{type(e).__name__}: {e}")
    finally:
        daemon.stop()
        subprocess.run([os.path.abspath(args.corral), "rm", "df-" + SANDBOX],
                       capture_output=True)
        if failures:
            print(f"daemon log kept: {scratch}/serve.log")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "ALL OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
