#!/usr/bin/env python3
"""The added latency of `corral code run`'s static scan, for a 50-line snippet.

  sudo bench/code_scan_bench.py build/cli/corral [N]

Runs the same clean 50-line snippet N times (default 30) each with python.scan.mode: deny
and python.scan.mode: off, alternating so that both see the same machine load, and prints:
  - the median of the scan time measured inside the jail (the runner's scan_ms: importing
    the scanner, ast.parse and the walk), deny runs only;
  - the median end-to-end time of one `corral code run --json` (host clock) per mode, and
    the difference of the medians (what a caller waits for the scan).
Figures, not assertions.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SNIPPET = "\n".join([
    "import json",
    "import math",
    "import re",
    "from collections import Counter, defaultdict",
    "",
    "WORDS = re.compile(r'[a-z]+')",
    "",
    "def tokens(text):",
    "    return WORDS.findall(text.lower())",
    "",
    "def stats(values):",
    "    n = len(values)",
    "    mean = sum(values) / n",
    "    var = sum((v - mean) ** 2 for v in values) / n",
    "    return {'n': n, 'mean': mean, 'sd': math.sqrt(var)}",
    "",
    "class Index:",
    "    def __init__(self):",
    "        self.postings = defaultdict(set)",
    "        self.docs = []",
    "",
    "    def add(self, text):",
    "        doc = len(self.docs)",
    "        self.docs.append(text)",
    "        for t in tokens(text):",
    "            self.postings[t].add(doc)",
    "        return doc",
    "",
    "    def search(self, query):",
    "        sets = [self.postings.get(t, set()) for t in tokens(query)]",
    "        if not sets:",
    "            return []",
    "        return sorted(set.intersection(*sets))",
    "",
    "corpus = [",
    "    'the quick brown fox jumps over the lazy dog',",
    "    'a lazy afternoon with a quick nap',",
    "    'foxes and dogs are not the same animal',",
    "]",
    "index = Index()",
    "for line in corpus:",
    "    index.add(line)",
    "counts = Counter(t for line in corpus for t in tokens(line))",
    "lengths = [len(tokens(line)) for line in corpus]",
    "result = {",
    "    'hits': index.search('quick lazy'),",
    "    'top': counts.most_common(3),",
    "    'lengths': stats(lengths),",
    "}",
    "print(json.dumps(result, sort_keys=True))",
]) + "\n"


def run_once(corral, config):
    started = time.perf_counter()
    proc = subprocess.run([corral, "code", "run", "--json", "--config", config, "-"],
                          input=SNIPPET.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    result = json.loads(proc.stdout)
    if result["status"] != "ok" or result["findings"]:
        sys.exit("unexpected result: %s\n%s" % (proc.stdout.decode(), proc.stderr.decode()))
    return elapsed_ms, result


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    corral = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    assert len(SNIPPET.splitlines()) == 50, len(SNIPPET.splitlines())
    with tempfile.TemporaryDirectory() as tmp:
        configs = {}
        for mode in ("deny", "off"):
            configs[mode] = os.path.join(tmp, mode + ".yaml")
            with open(configs[mode], "w") as f:
                f.write("python:\n  scan: {mode: %s}\n" % mode)
        run_once(corral, configs["deny"])  # warm the page cache
        total = {"deny": [], "off": []}
        scan_ms = []
        for _ in range(n):
            for mode in ("deny", "off"):
                elapsed, result = run_once(corral, configs[mode])
                total[mode].append(elapsed)
                if mode == "deny":
                    scan_ms.append(result["scan_ms"])
    med = {mode: statistics.median(v) for mode, v in total.items()}
    print("corral code run, 50-line snippet, %d runs per mode" % n)
    print("  scan inside the jail (scan_ms), median: %.1f ms (p10 %.1f, p90 %.1f)" % (
        statistics.median(scan_ms), *statistics.quantiles(scan_ms, n=10)[0::8]))
    print("  end to end, scan deny: median %.1f ms" % med["deny"])
    print("  end to end, scan off:  median %.1f ms" % med["off"])
    print("  added by the scan (difference of medians): %.1f ms (ratio %.2f)" % (
        med["deny"] - med["off"], med["deny"] / med["off"]))


if __name__ == "__main__":
    main()
