#!/usr/bin/env python3
"""Black-box client of corral serve's AIO API over real HTTP (python's http.client), with
DeerFlow's request bodies (docs/deerflow-contract.md §5.1, §5.3): the way the agent_sandbox
SDK joins "v1/..." onto sandbox_url, no API key. Usage: aio_http_client.py SANDBOX_URL.
Prints one line per failed check and "ALL OK" at the end when none failed; exit 0 only then.
"""
import base64
import http.client
import json
import sys
import time
import urllib.parse
import uuid

BASE = sys.argv[1].rstrip("/")
URL = urllib.parse.urlsplit(BASE)
failures = []


def call(method, path, body=None, raw=None, query=None):
    conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=120)
    target = URL.path + "/" + path
    if query:
        target += "?" + urllib.parse.urlencode(query)
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    headers = {"content-type": "application/json", "X-Fern-Language": "Python"}
    conn.request(method, target, body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    ctype = resp.getheader("content-type", "")
    conn.close()
    parsed = json.loads(payload) if ctype.startswith("application/json") else None
    return resp.status, parsed, payload, ctype


def check(what, cond, detail=""):
    if not cond:
        failures.append(what)
        print("FAIL:", what, detail)


# 1. readiness and the context object.
st, ctx, _, _ = call("GET", "v1/sandbox")
check("v1/sandbox 200", st == 200, st)
check("SandboxResponse fields", ctx and ctx.get("home_dir") and ctx.get("version") and
      set(ctx["detail"]["system"]) >= {"os", "os_version", "arch", "user", "home_dir", "timezone", "occupied_ports"}, ctx)

# 2. shell/exec without id, DeerFlow f1f4af9's body.
st, r, _, _ = call("POST", "v1/shell/exec", {"command": "cd /mnt/user-data/workspace; test -s f && echo OK || echo MISSING",
                                            "no_change_timeout": 600})
check("exec output", st == 200 and r["data"]["output"].strip() == "MISSING", r)

# 3. sessions: create, exec with id (cd/export persist), delete, 404 after.
sid = str(uuid.uuid4())
st, r, _, _ = call("POST", "v1/shell/sessions/create", {"id": sid})
check("session create", st == 200 and r["data"]["session_id"] == sid, r)
call("POST", "v1/shell/exec", {"command": "cd /tmp && export X=42", "id": sid, "no_change_timeout": 600})
st, r, _, _ = call("POST", "v1/shell/exec", {"command": "echo $PWD $X", "id": sid, "no_change_timeout": 600})
check("session persistence", r["data"]["output"] == "/tmp 42\n", r)
# a background server started by one call answers a later one
call("POST", "v1/shell/exec", {"command": "cd /tmp && python3 -m http.server 18766 --bind 127.0.0.1 > /tmp/h.log 2>&1 &",
                               "id": sid, "no_change_timeout": 600})
probe = ("for i in $(seq 50); do python3 -c \"import urllib.request as u; "
         "print(u.urlopen('http://127.0.0.1:18766/').status)\" 2>/dev/null && break; sleep 0.1; done")
st, r, _, _ = call("POST", "v1/shell/exec", {"command": probe, "no_change_timeout": 600})
check("background server alive", r["data"]["output"] == "200\n", r)
# newer DeerFlow: async + wait/view
st, r, _, _ = call("POST", "v1/shell/exec", {"command": "sleep 0.5; echo later; exit 4", "id": sid,
                                            "no_change_timeout": 605, "hard_timeout": 600, "async_mode": True})
check("async running", r["data"]["status"] == "running", r)
for _ in range(20):
    st, w, _, _ = call("POST", "v1/shell/wait", {"id": sid, "max_wait_seconds": 1})
    if w["data"]["status"] != "running":
        break
st, v, _, _ = call("POST", "v1/shell/view", {"id": sid})
check("view after exit 4", v["data"]["status"] == "completed" and v["data"]["exit_code"] == 4 and
      v["data"]["console"][-1]["output"] == "later\n", v)
st, r, _, _ = call("POST", "v1/shell/exec", {"command": "sleep 30", "id": sid, "hard_timeout": 1})
check("hard_timeout", r["data"]["status"] == "hard_timeout", r)
st, r, _, _ = call("DELETE", "v1/shell/sessions/" + sid)
check("session delete", st == 200, r)
st, r, _, _ = call("POST", "v1/shell/exec", {"command": "true", "id": sid})
check("unknown session 404", st == 404 and r == {"success": False, "message": "Session not found", "data": None}, (st, r))

# 5. bash/exec with env (no session), then env isolation.
st, r, _, _ = call("POST", "v1/bash/exec", {"command": "echo $TOKEN; echo e >&2", "env": {"TOKEN": "t0k"}, "hard_timeout": 600.0})
check("bash exec", st == 200 and r["data"]["stdout"] == "t0k\n" and r["data"]["stderr"] == "e\n", r)
st, r, _, _ = call("POST", "v1/bash/exec", {"command": "echo ${TOKEN:-none}", "env": {"A": "1"}, "hard_timeout": 600.0})
check("bash env isolation", r["data"]["stdout"] == "none\n", r)

# 6-12. files.
ws = "/mnt/user-data/workspace"
st, r, _, _ = call("POST", "v1/file/write", {"file": ws + "/deep/dir/a.py", "content": "one\ntwo\nthree\n"})
check("write creates parents", r["success"] is True, r)
st, r, _, _ = call("POST", "v1/file/read", {"file": ws + "/deep/dir/a.py", "start_line": 1, "end_line": 2})
check("read range", r["data"]["content"] == "two\n", r)
blob = bytes(range(256))
call("POST", "v1/file/write", {"file": "/mnt/user-data/outputs/b.bin", "content": base64.b64encode(blob).decode(),
                               "encoding": "base64"})
st, _, payload, ctype = call("GET", "v1/file/download", query={"path": "/mnt/user-data/outputs/b.bin"})
check("download bytes", st == 200 and payload == blob and ctype.startswith("application/octet-stream"), (st, ctype))
st, _, _, _ = call("GET", "v1/file/download", query={"path": "/mnt/user-data/outputs/none"})
check("download 404", st == 404, st)
st, r, _, _ = call("POST", "v1/file/find", {"path": ws, "glob": "**/*.py"})
check("find **", r["data"]["files"] == [ws + "/deep/dir/a.py"], r)
st, r, _, _ = call("POST", "v1/file/list", {"path": ws, "recursive": True, "show_hidden": False})
check("list", {f["path"] for f in r["data"]["files"]} >= {ws + "/deep", ws + "/deep/dir/a.py"}, r)
st, r, _, _ = call("POST", "v1/file/grep", {"path": ws, "pattern": "t[wh]", "case_insensitive": False, "fixed_strings": False,
                                           "max_results": 150, "max_file_size": "1M", "recursive": True})
check("grep", [(m["line_number"], m["line_content"]) for m in r["data"]["matches"]] == [(2, "two"), (3, "three")] and
      r["data"]["truncated"] is False, r)
st, r, _, _ = call("POST", "v1/file/read", {"file": ws + "/missing"})
check("missing read envelope", st == 200 and r["success"] is False and r["data"]["error_type"] == "not_found", r)

# validation
st, r, _, _ = call("POST", "v1/shell/exec", raw="{not json")
check("malformed json 422", st == 422 and r["detail"], (st, r))

# A figure (printed, never checked): shell/exec of `true` over HTTP, in a session and fresh.
lat_id = str(uuid.uuid4())
call("POST", "v1/shell/sessions/create", {"id": lat_id})
for label, body in (("session", {"command": "true", "id": lat_id}), ("fresh", {"command": "true"})):
    times = []
    for _ in range(30):
        time.sleep(0.05)  # an agent thinks between calls; the spare shell gets ready
        t0 = time.perf_counter()
        call("POST", "v1/shell/exec", body)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    print("[figure] shell/exec true over HTTP (calls 50 ms apart), %s: median %.2f ms" % (label, times[len(times) // 2]))

if failures:
    print(len(failures), "FAILED")
    sys.exit(1)
print("ALL OK")
