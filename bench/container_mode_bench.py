#!/usr/bin/env python3
"""The added latency of `mode: container` (crun, runc) against `mode: process`.

  sudo bench/container_mode_bench.py build/cli/corral [N]

Two workloads, each run N times (default 20) per mode, the modes interleaved round by
round so that all see the same machine load:
  - `corral run --pool off [--mode container --oci-runtime RT] -- /bin/true`
  - `corral code run [--mode container --oci-runtime RT] -c "print('hello')"`
and prints the median and p90 wall time of one invocation (host clock, the whole CLI) per
mode and the difference of the medians against process mode. A runtime that is not
installed is left out. Figures, not assertions.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time


def timed(argv):
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (p.returncode, " ".join(argv),
                                             p.stdout.decode(), p.stderr.decode()))
    return ms


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    corral = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    modes = [("process", [])]
    for rt in ("crun", "runc"):
        if shutil.which(rt, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
            modes.append(("container/" + rt, ["--mode", "container", "--oci-runtime", rt]))
    workloads = [
        ("run /bin/true", lambda f: [corral, "run", "--pool", "off"] + f + ["--", "/bin/true"]),
        ("code run hello", lambda f: [corral, "code", "run"] + f + ["-c", "print('hello')"]),
    ]
    times = {(w, m): [] for w, _ in workloads for m, _ in modes}
    for w, make in workloads:  # one warm-up each (page cache, /etc snapshot, seccomp cache)
        for m, flags in modes:
            timed(make(flags))
    for _ in range(n):
        for w, make in workloads:
            for m, flags in modes:
                times[(w, m)].append(timed(make(flags)))
    print("N = %d per cell; wall ms of one corral invocation (host clock)" % n)
    print("%-16s %-16s %10s %10s %16s" % ("workload", "mode", "median", "p90", "median - process"))
    for w, _ in workloads:
        base = statistics.median(times[(w, "process")])
        for m, _ in modes:
            xs = sorted(times[(w, m)])
            med = statistics.median(xs)
            p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
            print("%-16s %-16s %10.1f %10.1f %16s" % (
                w, m, med, p90, "" if m == "process" else "%+.1f" % (med - base)))


if __name__ == "__main__":
    main()
