#!/bin/sh
# CI smoke run of `corral bench --quick`: the report must be produced and well formed.
# The numbers are not checked. Needs root (real jails); exit 77 = skipped.
# Usage: tests/bench_smoke.sh /path/to/corral
set -eu
corral=${1:?usage: bench_smoke.sh CORRAL}
if [ "$(id -u)" != 0 ]; then
  if [ "${CORRAL_TESTS_MUST_RUN:-0}" = 1 ]; then echo "bench smoke needs root" >&2; exit 1; fi
  echo "skipped: bench smoke needs root"; exit 77
fi
out=$(mktemp -d /tmp/corral-bench-smoke.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$corral" bench --quick --rounds 3 --sandboxes 3 --out "$out" > "$out/table.txt"
fail() { echo "bench smoke: $*" >&2; cat "$out/table.txt" >&2; exit 1; }
[ -s "$out/bench.json" ] || fail "no bench.json"
[ -s "$out/bench.svg" ] || fail "no bench.svg"
grep -q "^targets:$" "$out/table.txt" || fail "table has no targets section"
grep -q "issue [0-9]" "$out/table.txt" && fail "table names internal issues"
python3 - "$out/bench.json" "$out/bench.svg" <<'PY' || fail "malformed report"
import json, sys, xml.etree.ElementTree as ET
j = json.load(open(sys.argv[1]))
for key in ("machine", "latency", "throughput", "sandboxes", "serve", "targets", "command"):
    assert key in j, key
assert j["machine"]["cores"] >= 1 and j["machine"]["kernel"]
names = [e["name"] for e in j["latency"][0]["entries"]]
for must in ("bare fork+exec", "corral run (full default)", "corral run, pool server",
             "corral exec (persistent)", "corral exec, pool server",
             "bwrap", "nsjail", "crun", "runc", "docker",
             "corral run, rootless", "corral run, rootless, pooled",
             "bwrap, unprivileged"):
    assert must in names, must   # present, as measured or as skipped with a reason
for w in j["latency"]:
    for e in w["entries"]:
        assert e["status"] in ("ok", "skipped", "failed"), e
        if e["status"] == "ok":
            s = e["summary_ms"]
            assert 0 < s["median"] <= s["p90"] <= s["p99"], e["name"]
            assert len(e["samples_ms"]) == s["count"] > 0
        else:
            assert e["reason"], e["name"]
bare = j["latency"][0]["entries"][0]
assert bare["name"] == "bare fork+exec" and bare["status"] == "ok", bare
assert len(j["targets"]) == 19
assert len(j["sandboxes"]["pause_ms"]) > 0 and len(j["sandboxes"]["resume_ms"]) > 0, j["sandboxes"]
assert len(j["sandboxes"]["diff_ms"]) > 0 and j["sandboxes"]["diff_upper_bytes"] > 0, j["sandboxes"]
assert len(j["sandboxes"]["fork_ms"]) > 0 and j["sandboxes"]["fork_extra_bytes"] >= 0, j["sandboxes"]
serve = j["serve"]
assert serve["status"] == "ok" and serve["created"] == serve["requested"] > 0, serve
for row in ("create_to_first_exec_ms", "exec_fresh_session_ms", "exec_same_session_ms"):
    assert len(serve[row]) > 0 and all(v > 0 for v in serve[row]), row
assert serve["daemon_rss_idle_bytes"] > 0, serve
root = ET.parse(sys.argv[2]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
assert len(root.findall("{http://www.w3.org/2000/svg}rect")) > 1
PY
# Nothing of the run may be left behind.
if ls -d /sys/fs/cgroup/*/isolation-bench-* /tmp/corral-bench-root.* /tmp/corral-bench-oci.* \
    /tmp/corral-bench-tool.* /tmp/corral-bench-serve-* /tmp/corral-bench-rootless.* 2>/dev/null | grep -q .; then fail "left cgroups or temp dirs"; fi
if "$corral" ps 2>/dev/null | grep -q corral-bench-; then fail "left sandboxes"; fi
echo "bench smoke: ok"
