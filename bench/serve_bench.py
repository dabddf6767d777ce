#!/usr/bin/env python3
"""Figures for `corral serve` (issue: the daemon), measured over real HTTP on loopback.

  sudo bench/serve_bench.py build/cli/corral-cli [N] [--warm W] [--session-slots S]

Starts a daemon on 127.0.0.1 (port 0) with a temp base dir and runtime dir, then:
  - POST /api/sandboxes -> first 200 of GET {sandbox_url}/v1/sandbox, per sandbox (median, p90);
  - POST /api/sandboxes -> first successful POST {sandbox_url}/v1/shell/exec of `true`;
  - GET v1/sandbox and POST v1/shell/exec `true` round trips on one keep-alive connection;
  - the daemon's RSS with 0 and N idle sandboxes.
Deletes every sandbox and stops the daemon (SIGTERM) at the end. Figures, not assertions.

With --warm W (sandbox.warm): the create -> first shell/exec figure twice in one run, from
a daemon without a pool (cold) and from one with W warm sandboxes (warm). Before each warm
create the bench waits, untimed, until the pool is full again (corral_warm_sandboxes = W):
the figure is that of a create arriving at a daemon whose pool has refilled, which is the
case the pool is for (back-to-back creates faster than a refill take the cold path).

With --session-slots S: the daemon's server.session_slots (default: the daemon's own, 32); 0
starts every session's shell the normal way, for a side-by-side figure.
"""
import http.client
import json
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

import serve_daemon
from serve_daemon import KEY


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def shell(conn, path, command):
    conn.request("POST", path + "/v1/shell/exec", json.dumps({"command": command}),
                 {"Content-Type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, {}


SESSION_SLOTS = None  # --session-slots; None: the daemon's default


def start_daemon(binary, tmp, n, warm):
    """(Popen, port) of a daemon with its own base and runtime dirs under tmp."""
    server_extra = "" if SESSION_SLOTS is None else f", session_slots: {SESSION_SLOTS}"
    return serve_daemon.start_daemon(binary, tmp, n + 10, server_extra=server_extra,
                                     sandbox_extra=f", warm: {warm}")


def metric(conn, name):
    conn.request("GET", "/metrics", headers={"X-API-Key": KEY})
    r = conn.getresponse()
    for line in r.read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1.0


def create_to_exec(binary, n, warm):
    """Create -> first successful shell/exec `true`, ms per sandbox; and how many were warm."""
    tmp = tempfile.mkdtemp(prefix="corral-serve-bench-")
    daemon, port = start_daemon(binary, tmp, n, warm)
    host = f"127.0.0.1:{port}"
    api = http.client.HTTPConnection("127.0.0.1", port)
    sb = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    out, created = [], []
    claimed = 0
    try:
        for i in range(n):
            deadline = time.time() + 120
            while warm and metric(api, "corral_warm_sandboxes") < warm and time.time() < deadline:
                time.sleep(0.02)
            time.sleep(0.2)  # the refill's last steps (and its CPU) out of the way
            t0 = time.perf_counter()
            api.request("POST", "/api/sandboxes",
                        json.dumps({"sandbox_id": f"b{i}", "thread_id": f"t{i}"}), headers)
            r = api.getresponse()
            body = json.loads(r.read())
            if r.status != 200:
                sys.exit(f"create failed: {r.status} {body}")
            path = body["sandbox_url"].split(host, 1)[1]
            created.append((time.perf_counter() - t0) * 1000)
            status, res = shell(sb, path, "true")
            if status != 200 or not res.get("success", False):
                sys.exit(f"shell/exec failed: {status} {res}")
            out.append((time.perf_counter() - t0) * 1000)
        claimed = int(metric(api, 'corral_sandbox_events_total{event="created_warm"}'))
    finally:
        for i in range(n):
            api.request("DELETE", f"/api/sandboxes/b{i}", headers=headers)
            api.getresponse().read()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    return out, created, claimed


def compare_warm(binary, n, warm):
    cold, cold_create, _ = create_to_exec(binary, n, 0)
    hot, hot_create, claimed = create_to_exec(binary, n, warm)
    q = lambda v: statistics.quantiles(v, n=10)[-1] if len(v) > 1 else v[0]
    print(f"sandboxes: {n} per daemon; sandbox.warm: {warm}")
    print(f"POST /api/sandboxes -> first shell/exec `true` answered, cold: median "
          f"{statistics.median(cold):.1f} ms, p90 {q(cold):.1f} ms")
    print(f"POST /api/sandboxes -> first shell/exec `true` answered, warm: median "
          f"{statistics.median(hot):.1f} ms, p90 {q(hot):.1f} ms ({claimed} of {n} claimed warm)")
    print(f"of which POST /api/sandboxes alone: cold median {statistics.median(cold_create):.1f} ms, "
          f"warm median {statistics.median(hot_create):.1f} ms")


def main():
    args = sys.argv[1:]
    global SESSION_SLOTS
    warm = 0
    if "--session-slots" in args:
        at = args.index("--session-slots")
        SESSION_SLOTS = int(args[at + 1])
        del args[at:at + 2]
    if "--warm" in args:
        at = args.index("--warm")
        warm = int(args[at + 1])
        del args[at:at + 2]
    binary = args[0]
    n = int(args[1]) if len(args) > 1 else 50
    if warm > 0:
        return compare_warm(binary, n, warm)
    tmp = tempfile.mkdtemp(prefix="corral-serve-bench-")
    daemon, port = start_daemon(binary, tmp, n, 0)
    host = f"127.0.0.1:{port}"
    api = http.client.HTTPConnection("127.0.0.1", port)
    sb = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    rss0 = rss_kib(daemon.pid)
    ready_ms, exec_ms, urls = [], [], []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            api.request("POST", "/api/sandboxes",
                        json.dumps({"sandbox_id": f"b{i}", "thread_id": f"t{i}"}), headers)
            r = api.getresponse()
            body = json.loads(r.read())
            if r.status != 200:
                sys.exit(f"create failed: {r.status} {body}")
            path = body["sandbox_url"].split(host, 1)[1]
            while True:
                sb.request("GET", path + "/v1/sandbox")
                r = sb.getresponse()
                r.read()
                if r.status == 200:
                    break
            ready_ms.append((time.perf_counter() - t0) * 1000)
            status, out = shell(sb, path, "true")
            if status != 200 or not out.get("success", False):
                sys.exit(f"shell/exec failed: {status} {out}")
            exec_ms.append((time.perf_counter() - t0) * 1000)
            urls.append(path)
        rt = []
        for _ in range(500):
            t0 = time.perf_counter()
            sb.request("GET", urls[0] + "/v1/sandbox")
            sb.getresponse().read()
            rt.append((time.perf_counter() - t0) * 1000)
        ex = []
        for _ in range(100):
            t0 = time.perf_counter()
            shell(sb, urls[0], "true")
            ex.append((time.perf_counter() - t0) * 1000)
        time.sleep(1)
        rssn = rss_kib(daemon.pid)
        q = statistics.quantiles(ready_ms, n=10)
        print(f"sandboxes: {n}")
        print(f"POST /api/sandboxes -> first 200 of v1/sandbox: median {statistics.median(ready_ms):.1f} ms, "
              f"p90 {q[-1]:.1f} ms, total {sum(ready_ms) / 1000:.1f} s")
        print(f"POST /api/sandboxes -> first shell/exec `true` answered: median {statistics.median(exec_ms):.1f} ms")
        print(f"GET v1/sandbox round trip (keep-alive): median {statistics.median(rt):.3f} ms")
        print(f"POST v1/shell/exec `true` round trip (fresh session each): median {statistics.median(ex):.1f} ms")
        print(f"daemon RSS: {rss0 / 1024:.1f} MiB at start, {rssn / 1024:.1f} MiB with {n} idle sandboxes "
              f"({(rssn - rss0) / max(n, 1):.1f} KiB each)")
    finally:
        for i in range(n):
            api.request("DELETE", f"/api/sandboxes/b{i}", headers=headers)
            api.getresponse().read()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
