"""A `corral serve` of a benchmark's own, for bench/serve_bench.py and serve_idle_bench.py:
loopback port 0, a temp base dir and runtime dir, no access log."""
import os
import re
import subprocess
import sys
import time

KEY = "bench-key-0123456789abcdef"


def start_daemon(binary, tmp, max_sandboxes, server_extra="", sandbox_extra=""):
    """(Popen, port) of a daemon whose dirs are under tmp. *_extra: more `key: value`
    pairs for the server: and sandbox: sections, each starting with ", "."""
    os.makedirs(f"{tmp}/base", exist_ok=True)
    os.makedirs(f"{tmp}/run", mode=0o700, exist_ok=True)
    with open(f"{tmp}/corral.yaml", "w") as f:
        f.write(f"server: {{listen: '127.0.0.1:0', api_key: {KEY}, access_log: 'off', "
                f"max_sandboxes: {max_sandboxes}{server_extra}}}\n"
                f"sandbox: {{base_dir: {tmp}/base, idle_timeout: 0, replicas: {max_sandboxes}"
                f"{sandbox_extra}}}\n")
    env = dict(os.environ, CORRAL_RUNTIME_DIR=f"{tmp}/run")
    log = open(f"{tmp}/serve.log", "w+")
    daemon = subprocess.Popen([binary, "serve", "--config", f"{tmp}/corral.yaml"], env=env,
                              stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(400):
        time.sleep(0.05)
        log.seek(0)
        m = re.search(r"listening on http://127.0.0.1:(\d+)", log.read())
        if m:
            return daemon, int(m.group(1))
    daemon.kill()
    sys.exit(f"daemon did not start; see {tmp}/serve.log")
