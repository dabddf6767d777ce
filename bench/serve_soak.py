#!/usr/bin/env python3
"""Soak test of `corral serve`: N clients against one daemon, each with sandboxes of its
own, looping every kind of call for a bounded time. At the end: zero unexpected errors,
the daemon's RSS, open files and threads back within a margin of the start (after a
warm-up round), and nothing left behind (sandboxes, cgroups, lock files, store records).

    sudo bench/serve_soak.py --binary build/cli/corral --clients 40 --seconds 600

Prints calls per second and p50/p99 per call type, then the resource figures; exits 1 if
any check fails. Root (the daemon makes real jails). Runs its own daemon on loopback with a
temp base dir and runtime dir (bench/serve_daemon.py); touches nothing else.
"""
import argparse
import base64
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_daemon import KEY, start_daemon  # noqa: E402


class Client:
    """One keep-alive connection to the daemon."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None, key=True, headers=None):
        h = {"Host": f"127.0.0.1:{self.port}"}
        if key:
            h["X-API-Key"] = KEY
        if body is not None:
            h["Content-Type"] = "application/json"
            body = json.dumps(body)
        h.update(headers or {})
        try:
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            raise


def daemon_figures(pid):
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    return {
        "rss_kib": int(status["VmRSS"].split()[0]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": len(os.listdir(f"/proc/{pid}/task")),
    }


class Soak:
    def __init__(self, port, deadline, tag=""):
        self.port = port
        self.tag = tag  # in sandbox ids, so that a warm-up's never meet the run's
        self.deadline = deadline
        self.lock = threading.Lock()
        self.times = {}    # call type -> [seconds]
        self.errors = []   # (call type, status, body head)

    def record(self, kind, started, status, body, ok_statuses=(200,)):
        elapsed = time.monotonic() - started
        with self.lock:
            self.times.setdefault(kind, []).append(elapsed)
            if status not in ok_statuses:
                self.errors.append((kind, status, body[:200]))
        return status in ok_statuses

    def timed(self, client, kind, method, path, body=None, key=True, check=None, headers=None):
        t = time.monotonic()
        try:
            status, data = client.call(method, path, body, key, headers)
        except (OSError, http.client.HTTPException) as e:
            return self.record(kind, t, 0, str(e).encode()), None
        ok = self.record(kind, t, status, data)
        if ok and check is not None and not check(data):
            with self.lock:
                self.errors.append((kind, status, b"unexpected answer: " + data[:200]))
            ok = False
        return ok, data

    def one_round(self, client, worker, n):
        sid = f"soak{self.tag}{worker}-{n}"
        ok, data = self.timed(client, "create", "POST", "/api/sandboxes",
                              {"sandbox_id": sid, "thread_id": f"soak-t{worker}"})
        if not ok:
            return
        base = urllib.parse.urlparse(json.loads(data)["sandbox_url"]).path
        aio = lambda name, path, body=None, method="POST", check=None: self.timed(  # noqa: E731
            client, name, method, base + path, body, key=False, check=check)
        for i in range(5):
            if time.monotonic() > self.deadline:
                break
            aio("shell/exec", "/v1/shell/exec", {"command": f"echo r{i}"},
                check=lambda d, i=i: json.loads(d)["data"]["output"] == f"r{i}\n")
            aio("bash/exec", "/v1/bash/exec", {"command": "ls /mnt/user-data >/dev/null; echo ok"},
                check=lambda d: json.loads(d)["data"]["exit_code"] == 0)
            text = f"line {i}\nneedle {worker}\n"
            aio("file/write", "/v1/file/write",
                {"file": "/mnt/user-data/workspace/s.txt", "content": text})
            aio("file/read", "/v1/file/read", {"file": "/mnt/user-data/workspace/s.txt"},
                check=lambda d, text=text: json.loads(d)["data"]["content"] == text)
            aio("file/list", "/v1/file/list", {"path": "/mnt/user-data/workspace"})
            aio("file/grep", "/v1/file/grep", {"path": "/mnt/user-data/workspace",
                                              "pattern": "needle"})
            aio("file/download", "/v1/file/download?path=/mnt/user-data/workspace/s.txt",
                method="GET", check=lambda d, text=text: d == text.encode())
            self.timed(client, "exec (stream)", "POST",
                       f"/api/corral/v1/sandboxes/df-{sid}/exec",
                       {"command": "echo streamed", "stream": True},
                       check=lambda d: b"event: exit" in d and b"streamed" in d)
        self.timed(client, "delete", "DELETE", f"/api/sandboxes/{sid}")

    def worker(self, index):
        client = Client(self.port)
        n = 0
        while time.monotonic() < self.deadline:
            self.one_round(client, index, n)
            n += 1


def leftovers(tmp):
    found = []
    run = f"{tmp}/run"
    for sub in ("sandboxes", "serve/sandboxes", "tool-locks"):
        path = os.path.join(run, sub)
        if os.path.isdir(path):
            found += [f"{sub}/{e}" for e in os.listdir(path)]
    for root in os.listdir("/sys/fs/cgroup"):
        corral = os.path.join("/sys/fs/cgroup", root, "corral")
        if os.path.isdir(corral):
            found += [f"cgroup {root}/{e}" for e in os.listdir(corral) if e.startswith("sbx-df-soak")]
    return found


def run_clients(soak, clients):
    threads = [threading.Thread(target=soak.worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/cli/corral")
    ap.add_argument("--clients", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10,
                    help="seconds of the same load before the baseline is taken")
    ap.add_argument("--margin", type=float, default=0.25,
                    help="how much RSS, fds and threads may exceed the start (fraction)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        # ctest reads 77 as skipped; CI, which must run every privileged test, gets a failure.
        print("soak: needs root (the daemon makes real jails)")
        return 1 if os.environ.get("CORRAL_TESTS_MUST_RUN") == "1" else 77
    tmp = tempfile.mkdtemp(prefix="corral-soak-")
    daemon, port = start_daemon(args.binary, tmp, max(args.clients * 2, 16))
    failed = []
    try:
        # A warm-up with every client, so that what the daemon keeps for its life (worker
        # threads, the orphan sink, the allocator's high-water mark for this many clients)
        # is in the baseline: what grows after it grows with the work, which is a leak.
        warmup = Soak(port, time.monotonic() + args.warmup, tag="w")
        run_clients(warmup, args.clients)
        time.sleep(1)
        before = daemon_figures(daemon.pid)
        soak = Soak(port, time.monotonic() + args.seconds)
        started = time.monotonic()
        run_clients(soak, args.clients)
        wall = time.monotonic() - started
        # A delete's last releases, the reaper's tidy and its memory trim (every 10 s):
        # wait until the figures are back or 15 s have passed.
        settle_until = time.monotonic() + 15
        while True:
            time.sleep(1)
            after = daemon_figures(daemon.pid)
            back = all(after[n] <= before[n] * (1 + args.margin) + 2
                       for n in ("rss_kib", "fds", "threads"))
            if back or time.monotonic() > settle_until:
                break

        total = sum(len(v) for v in soak.times.values())
        print(f"{args.clients} clients, {wall:.0f} s: {total} calls, {total / wall:.1f} calls/s, "
              f"{len(soak.errors)} errors")
        print(f"{'call':<16}{'count':>8}{'p50 ms':>10}{'p99 ms':>10}")
        for kind in sorted(soak.times):
            v = sorted(soak.times[kind])
            p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
            print(f"{kind:<16}{len(v):>8}{statistics.median(v) * 1000:>10.1f}{p99 * 1000:>10.1f}")
        for kind, status, body in soak.errors[:20]:
            print(f"error: {kind}: HTTP {status}: {body!r}")
        for kind, status, body in warmup.errors[:20]:
            print(f"error in the warm-up: {kind}: HTTP {status}: {body!r}")
        if soak.errors or warmup.errors:
            failed.append(f"{len(soak.errors) + len(warmup.errors)} unexpected errors")
        for name in ("rss_kib", "fds", "threads"):
            print(f"daemon {name}: {before[name]} before, {after[name]} after")
            if after[name] > before[name] * (1 + args.margin) + 2:
                failed.append(f"daemon {name} grew from {before[name]} to {after[name]}")
        left = leftovers(tmp)
        if left:
            failed.append("left behind: " + ", ".join(left[:20]))
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failed:
        print("FAILED:", f)
    print("soak: " + ("FAILED" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
