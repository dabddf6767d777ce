#!/usr/bin/env python3
"""Idle-sandbox figures for `corral serve`: many sandboxes brought up through the
provisioner API over real HTTP on loopback, then left idle.

  sudo bench/serve_idle_bench.py build/cli/corral-cli N [CLIENTS]

Starts a daemon on 127.0.0.1 (port 0) with a temp base dir and runtime dir, then, with
CLIENTS concurrent keep-alive connections (default 4), POSTs N sandboxes (each its own
thread directory) and reports:
  - bring-up: wall time for all N, creates per second, median and p90 create latency;
  - host memory per idle sandbox, three ways: the drop of MemAvailable (median of five
    reads before and after; moves with page cache and other tenants, so it is the upper
    figure on a busy host), the sandbox cgroup's memory usage, and its init's PSS;
  - the daemon's RSS with 0 and N idle sandboxes;
  - tear-down: wall time to DELETE all N.
Figures, not assertions. Deletes every sandbox and stops the daemon at the end.
"""
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import serve_daemon
from serve_daemon import KEY
HEADERS = {"X-API-Key": KEY, "Content-Type": "application/json"}


def kib_field(path, field):
    try:
        with open(path) as f:
            m = re.search(rf"^{field}:\s+(\d+)", f.read(), re.M)
            return int(m.group(1)) if m else None
    except OSError:
        return None


def settled_mem_available_kib():
    reads = []
    for _ in range(5):
        reads.append(kib_field("/proc/meminfo", "MemAvailable"))
        time.sleep(0.1)
    return sorted(reads)[len(reads) // 2]


def cgroup_memory_bytes(runtime_dir, name):
    """memory usage of the sandbox's cgroup (v1 or v2), via its record's cgroup_name."""
    try:
        with open(f"{runtime_dir}/sandboxes/{name}/state.json") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None, None
    cg = record.get("cgroup_name")
    for path in (f"/sys/fs/cgroup/memory/corral/{cg}/memory.usage_in_bytes",
                 f"/sys/fs/cgroup/corral/{cg}/memory.current"):
        try:
            with open(path) as f:
                return int(f.read()), record.get("init_pid")
        except OSError:
            continue
    return None, record.get("init_pid")


def start_daemon(binary, tmp, n):
    return serve_daemon.start_daemon(binary, tmp, n + 10,
                                     server_extra=", max_connections_per_client: 64")


def run_clients(port, count, clients, work):
    """Runs work(conn, i) for i in range(count) over `clients` connections; returns the
    per-call latencies in ms and the first error."""
    lock = threading.Lock()
    state = {"next": 0, "error": None}
    latencies = []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                i = state["next"]
                if i >= count or state["error"]:
                    return
                state["next"] += 1
            t0 = time.perf_counter()
            err = work(conn, i)
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                if err and not state["error"]:
                    state["error"] = err
                latencies.append(ms)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    last = time.time()
    while any(t.is_alive() for t in threads):
        time.sleep(0.5)
        if time.time() - last > 10:
            print(f"  ... {state['next']}/{count}", file=sys.stderr, flush=True)
            last = time.time()
    for t in threads:
        t.join()
    return latencies, state["error"]


def create(conn, i):
    conn.request("POST", "/api/sandboxes",
                 json.dumps({"sandbox_id": f"i{i}", "thread_id": f"t{i}"}), HEADERS)
    r = conn.getresponse()
    body = r.read()
    return None if r.status == 200 else f"create i{i}: {r.status} {body[:200]!r}"


def delete(conn, i):
    conn.request("DELETE", f"/api/sandboxes/i{i}", headers=HEADERS)
    r = conn.getresponse()
    r.read()
    return None if r.status == 200 else f"delete i{i}: {r.status}"


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    tmp = tempfile.mkdtemp(prefix="corral-idle-bench-")
    daemon, port = start_daemon(binary, tmp, n)
    try:
        rss0 = kib_field(f"/proc/{daemon.pid}/status", "VmRSS")
        avail0 = settled_mem_available_kib()
        t0 = time.perf_counter()
        lat, err = run_clients(port, n, clients, create)
        up_s = time.perf_counter() - t0
        if err:
            print(f"error: {err}")
        created = len(lat) - (1 if err else 0)
        time.sleep(2)  # let the inits settle (their last page faults, the daemon's maps)
        avail1 = settled_mem_available_kib()
        rss1 = kib_field(f"/proc/{daemon.pid}/status", "VmRSS")
        cg, pss = [], []
        for name in os.listdir(f"{tmp}/run/sandboxes"):
            usage, init_pid = cgroup_memory_bytes(f"{tmp}/run", name)
            if usage is not None:
                cg.append(usage)
            if init_pid:
                p = kib_field(f"/proc/{init_pid}/smaps_rollup", "Pss")
                if p is not None:
                    pss.append(p)
        q = statistics.quantiles(lat, n=10) if len(lat) > 1 else [0] * 9
        print(f"idle sandboxes: {created} of {n}, {clients} concurrent clients")
        print(f"bring-up: {up_s:.1f} s ({created / up_s:.0f} creates/s); create latency median "
              f"{statistics.median(lat):.1f} ms, p90 {q[-1]:.1f} ms")
        if created:
            print(f"host memory per idle sandbox: MemAvailable drop {(avail0 - avail1) / created / 1024:.2f} MiB, "
                  f"cgroup memory {statistics.mean(cg) / 2**20 if cg else float('nan'):.2f} MiB, "
                  f"init PSS {statistics.mean(pss) / 1024 if pss else float('nan'):.2f} MiB")
            print(f"daemon RSS: {rss0 / 1024:.1f} MiB at start, {rss1 / 1024:.1f} MiB with {created} idle "
                  f"sandboxes ({(rss1 - rss0) / created:.1f} KiB each)")
        t1 = time.perf_counter()
        _, err = run_clients(port, n, clients, delete)
        print(f"tear-down: {time.perf_counter() - t1:.1f} s for {n} DELETEs" + (f" ({err})" if err else ""))
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        # A sandbox the DELETEs missed (an error above) still has its init: remove it.
        left = os.listdir(f"{tmp}/run/sandboxes") if os.path.isdir(f"{tmp}/run/sandboxes") else []
        for name in left:
            subprocess.run([binary, "rm", name], env=dict(os.environ, CORRAL_RUNTIME_DIR=f"{tmp}/run"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
