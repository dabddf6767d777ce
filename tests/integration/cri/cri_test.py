#!/usr/bin/env python3
"""corral-runc under containerd's CRI plugin, driven over its gRPC socket as the kubelet does.

The test starts a containerd of its own (own root, state, sockets, CNI config, all in a work
directory; pods get a network namespace with only `lo` in it) with two runtime handlers on
containerd's runc shim (io.containerd.runc.v2): "corral" (BinaryName = corral-runc) and
"runc" (BinaryName = runc). It imports a busybox image and a pause image that it writes
itself (an OCI archive made here from Debian's busybox-static), then speaks the Kubernetes
CRI (runtime.v1: cri.proto beside this file, compiled with protoc at run time) to it:

  - with the "corral" handler, a pod as the kubelet sends one (cgroup parent, DNS config,
    seccomp Unconfined, a PID namespace per container) with these containers: a server and
    a client that talk over the pod's localhost (the client also has environment variables,
    a working directory and two volumes, one read-only); a "restricted" one (non-root, no
    capabilities, no_new_privs, read-only root); one with memory and CPU limits, read back
    from the cgroup and shown to hold by an OOM kill; one that exits with a code and logs.
    ExecSync's exact stdout, stderr and exit code, its timeout, ContainerStats, the listings,
    graceful and forced stops; a second pod (one PID namespace for the pod) that must not
    see the first pod's localhost. Then the teardown, after which nothing may be left: no
    runtime state under the handlers' Root, no cgroups under the pods' cgroup parent, no
    mounts under the work directory, no processes;
  - with both handlers: 10 rounds (after one warm-up) of RunPodSandbox + CreateContainer +
    StartContainer until ContainerStatus says RUNNING, timed and printed (never asserted):
      CRI start (pod sandbox + container): corral median X ms p90 Y ms; runc median ...
  (--functional-handler runc runs the pod checks with runc instead: a check of the test.)

Exits 0 when every check passed, 1 when one failed (with the tail of containerd's log), 77
(skip) when not root or when containerd, ctr, protoc, gRPC for Python, busybox-static, the
CNI plugins or runc are missing -- unless CORRAL_TESTS_MUST_RUN=1, when a missing
prerequisite is a failure. Everything it starts is stopped and everything it makes is
removed in a finally (on SIGTERM too), so that the test can run again at once.

  cri_test.py --corral-runc build/cli/corral-runc [--runc /usr/sbin/runc] [--work DIR]
              [--keep] [--rounds N] [--functional-handler corral|runc]
"""

import argparse
import ctypes
import hashlib
import importlib.util
import io
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "cri.proto")

BUSYBOX_IMAGE = "localhost/corral-test/busybox:1"
PAUSE_IMAGE = "localhost/corral-test/pause:1"
K8S_NAMESPACE = "k8s.io"  # containerd's namespace for the CRI plugin's objects
CGROUP_PARENT = "/corral-cri-test"  # linux.cgroup_parent of every pod made here
POD_LABEL = "corral-cri-test"  # label on every pod made here (cleanup finds them by it)
BUSYBOX_APPLETS = ["sh", "sleep", "cat", "echo", "nc", "wget", "ls", "id", "grep", "head",
                   "hostname", "ip", "ps", "true", "false", "dd", "seq"]
PAUSE_CMD = ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
GRACEFUL_CMD = ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
MEMORY_LIMIT = 64 * 1024 * 1024
CPU_PERIOD = 100000
CPU_QUOTA = 50000
CPU_SHARES = 512
TIMING_ROUNDS = 10


def must_run():
    return os.environ.get("CORRAL_TESTS_MUST_RUN") == "1"


def skip_or_fail(reason):
    if must_run():
        print(f"FAIL prerequisites: {reason} (CORRAL_TESTS_MUST_RUN=1)", flush=True)
        sys.exit(1)
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def import_grpc():
    """grpc and protobuf, or a skip. Debian's python3-grpcio/python3-protobuf are for
    /usr/bin/python3; CMake may have found another python3 (pyenv, a venv): run again
    under Debian's then."""
    try:
        import grpc  # noqa: F401  (imported again where it is used)
        import google.protobuf  # noqa: F401
        return
    except ImportError as error:
        missing = str(error)
    system_python = "/usr/bin/python3"
    if (os.path.exists(system_python) and not os.environ.get("CORRAL_CRI_TEST_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath(system_python)):
        os.environ["CORRAL_CRI_TEST_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(system_python, [system_python, os.path.abspath(__file__)] + sys.argv[1:])
    skip_or_fail(f"gRPC for Python is missing ({missing}): "
                 "apt-get install python3-grpcio python3-protobuf")


def is_static_elf(path):
    """True when `path` is an ELF file without a program interpreter (PT_INTERP)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
            return False
        phoff = int.from_bytes(head[0x20:0x28], "little")
        phentsize = int.from_bytes(head[0x36:0x38], "little")
        phnum = int.from_bytes(head[0x38:0x3a], "little")
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        if int.from_bytes(table[i * phentsize:i * phentsize + 4], "little") == 3:  # PT_INTERP
            return False
    return True


def check_prerequisites(args):
    if os.geteuid() != 0:
        skip_or_fail("not root (containerd and its runtimes need root)")
    for tool in ("containerd", "ctr", "protoc", "containerd-shim-runc-v2"):
        if shutil.which(tool) is None:
            skip_or_fail(f"{tool} not found: apt-get install containerd protobuf-compiler")
    if not os.path.isfile("/bin/busybox") or not is_static_elf("/bin/busybox"):
        skip_or_fail("/bin/busybox is missing or not static: apt-get install busybox-static")
    for plugin in ("loopback", "static"):
        if not os.access(f"/usr/lib/cni/{plugin}", os.X_OK):
            skip_or_fail(f"/usr/lib/cni/{plugin} is missing: "
                         "apt-get install containernetworking-plugins")
    if not os.access(args.runc, os.X_OK):
        skip_or_fail(f"{args.runc} (--runc) is missing: apt-get install runc")
    if not os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes") and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        skip_or_fail("no memory cgroup controller found under /sys/fs/cgroup")
    import_grpc()


# ----------------------------------------------------------------------------------------
# Results


class Checks:
    def __init__(self):
        self.results = []  # (name, ok, detail)

    def record(self, name, ok, detail=""):
        self.results.append((name, ok, detail))
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
        return ok

    def equal(self, name, got, want):
        ok = got == want
        return self.record(name, ok, f"{got!r}" if ok else f"got {got!r}, want {want!r}")

    def failed(self):
        return [r for r in self.results if not r[1]]


class CheckAbort(Exception):
    """A check failed that the following checks depend on."""


# ----------------------------------------------------------------------------------------
# The image: a busybox-static rootfs as one layer, and an OCI archive that `ctr import` takes


def layer_tar():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name, kind, mode, data=b"", target=""):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, 0, 0, 0
            info.uname = info.gname = "root"
            if kind == tarfile.SYMTYPE:
                info.linkname = target
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        for d in ("bin", "dev", "etc", "proc", "sys", "root", "run", "var", "usr", "usr/bin"):
            add(d, tarfile.DIRTYPE, 0o755)
        add("tmp", tarfile.DIRTYPE, 0o1777)
        with open("/bin/busybox", "rb") as f:
            add("bin/busybox", tarfile.REGTYPE, 0o755, f.read())
        for applet in BUSYBOX_APPLETS:
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, target="busybox")
        add("etc/passwd", tarfile.REGTYPE, 0o644,
            b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
        add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\nnogroup:x:65534:\n")
    return out.getvalue()


def oci_arch():
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
            "s390x": "s390x", "riscv64": "riscv64"}.get(platform.machine(), platform.machine())


def write_image_archive(path):
    """One OCI archive (oci-layout, index.json, blobs) with both images on the same layer."""
    blobs = {}

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    layer = layer_tar()
    layer_digest, layer_size = blob(layer)
    arch = oci_arch()
    manifests = []
    for name, cmd in ((BUSYBOX_IMAGE, ["sh"]), (PAUSE_IMAGE, PAUSE_CMD)):
        config = {
            "created": "1970-01-01T00:00:00Z",
            "architecture": arch,
            "os": "linux",
            "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                       "Cmd": cmd, "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            "history": [{"created": "1970-01-01T00:00:00Z",
                         "created_by": "tests/integration/cri/cri_test.py (busybox-static)"}],
        }
        config_digest, config_size = blob(json.dumps(config, sort_keys=True).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": config_digest, "size": config_size},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest, "size": layer_size}],
        }
        manifest_digest, manifest_size = blob(json.dumps(manifest, sort_keys=True).encode())
        manifests.append({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": manifest_size,
            "platform": {"architecture": arch, "os": "linux"},
            "annotations": {"io.containerd.image.name": name,
                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]},
        })
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": manifests}
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
        add("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add("index.json", json.dumps(index, sort_keys=True).encode())
        for digest, data in blobs.items():
            add("blobs/sha256/" + digest.split(":", 1)[1], data)


# ----------------------------------------------------------------------------------------
# Host inspection: processes, mounts, cgroups


def read_proc(pid, name):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def start_time(pid):
    stat = read_proc(pid, "stat")
    if stat is None:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    if fields[0] == b"Z":
        return None
    return int(fields[19])


def alive(pid, started):
    return started is not None and start_time(pid) == started


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def cmdline(pid):
    raw = read_proc(pid, "cmdline")
    return raw.split(b"\0")[:-1] if raw else []


def shim_pids(address):
    """containerd-shim processes that serve the containerd at `address` (ours only)."""
    found = []
    for pid in all_pids():
        argv = [a.decode(errors="replace") for a in cmdline(pid)]
        if argv and os.path.basename(argv[0]).startswith("containerd-shim") and \
                "-address" in argv and argv[argv.index("-address") + 1:][:1] == [address]:
            found.append(pid)
    return found


def pids_in_cgroup_parent():
    """Processes whose memory (v1) or unified (v2) cgroup is under CGROUP_PARENT."""
    found = []
    for pid in all_pids():
        raw = read_proc(pid, "cgroup")
        if not raw:
            continue
        for line in raw.decode(errors="replace").splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3 and (parts[2] == CGROUP_PARENT or
                                    parts[2].startswith(CGROUP_PARENT + "/")):
                found.append(pid)
                break
    return found


def unescape_mount(path):
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
        .replace("\\134", "\\")


def mounts_under(directory):
    prefix = directory.rstrip("/") + "/"
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = unescape_mount(line.split()[4])
            if point == directory or point.startswith(prefix):
                found.append(point)
    return found


def cgroup_hierarchies():
    """Mount points of every cgroup hierarchy (v1 controllers, name=systemd, unified)."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            fstype = fields[fields.index("-") + 1]
            if fstype in ("cgroup", "cgroup2"):
                found.append(unescape_mount(fields[4]))
    return found


def cgroup_leftovers():
    """Directories under CGROUP_PARENT in any hierarchy: {hierarchy: [children]}."""
    left = {}
    for hierarchy in cgroup_hierarchies():
        parent = hierarchy + CGROUP_PARENT
        if os.path.isdir(parent):
            children = sorted(e for e in os.listdir(parent)
                              if os.path.isdir(os.path.join(parent, e)))
            if children:
                left[hierarchy] = children
    return left


def remove_cgroup_parent():
    """rmdir CGROUP_PARENT's (empty) children, then itself, in every hierarchy."""
    problems = []
    for hierarchy in cgroup_hierarchies():
        parent = hierarchy + CGROUP_PARENT
        if not os.path.isdir(parent):
            continue
        for entry in sorted(os.listdir(parent)):
            child = os.path.join(parent, entry)
            if os.path.isdir(child):
                try:
                    os.rmdir(child)
                except OSError as error:
                    problems.append(f"{child}: {error}")
        try:
            os.rmdir(parent)
        except OSError as error:
            problems.append(f"{parent}: {error}")
    return problems


def files_under(directory):
    found = []
    for dirpath, _dirs, files in os.walk(directory):
        found.extend(os.path.join(dirpath, f) for f in files)
    return sorted(found)


def wait_for(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


# ----------------------------------------------------------------------------------------
# The CRI client: cri.proto compiled with protoc --python_out, RPCs as unary_unary calls


def load_cri_module(out_dir):
    subprocess.run(["protoc", f"-I{HERE}", f"--python_out={out_dir}", PROTO], check=True)
    spec = importlib.util.spec_from_file_location("cri_pb2", os.path.join(out_dir, "cri_pb2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Cri:
    RESPONSES = {
        "Version": "VersionResponse", "RunPodSandbox": "RunPodSandboxResponse",
        "StopPodSandbox": "StopPodSandboxResponse", "RemovePodSandbox": "RemovePodSandboxResponse",
        "PodSandboxStatus": "PodSandboxStatusResponse", "ListPodSandbox": "ListPodSandboxResponse",
        "CreateContainer": "CreateContainerResponse", "StartContainer": "StartContainerResponse",
        "StopContainer": "StopContainerResponse", "RemoveContainer": "RemoveContainerResponse",
        "ListContainers": "ListContainersResponse", "ContainerStatus": "ContainerStatusResponse",
        "ExecSync": "ExecSyncResponse", "ContainerStats": "ContainerStatsResponse",
        "ListImages": "ListImagesResponse", "ImageStatus": "ImageStatusResponse",
    }
    IMAGE_RPCS = ("ListImages", "ImageStatus")

    def __init__(self, grpc, pb, socket_path):
        self.grpc, self.pb = grpc, pb
        self.channel = grpc.insecure_channel("unix://" + socket_path)
        self.calls = {}
        for method, response in self.RESPONSES.items():
            service = "ImageService" if method in self.IMAGE_RPCS else "RuntimeService"
            request = getattr(pb, method + "Request")
            self.calls[method] = self.channel.unary_unary(
                f"/runtime.v1.{service}/{method}",
                request_serializer=request.SerializeToString,
                response_deserializer=getattr(pb, response).FromString)

    def __getattr__(self, method):
        if method not in self.RESPONSES:
            raise AttributeError(method)
        request_type = getattr(self.pb, method + "Request")

        def call(deadline=60, **fields):
            # `deadline` (seconds) is gRPC's; `timeout` is a field of some requests.
            return self.calls[method](request_type(**fields), timeout=deadline)
        return call

    def close(self):
        self.channel.close()


# ----------------------------------------------------------------------------------------
# containerd of our own


class Containerd:
    def __init__(self, work, corral_runc, runc):
        self.work = work
        self.socket = os.path.join(work, "containerd.sock")
        self.root = os.path.join(work, "root")
        self.state = os.path.join(work, "state")
        self.log_path = os.path.join(work, "containerd.log")
        self.config_path = os.path.join(work, "config.toml")
        self.cni_conf_dir = os.path.join(work, "cni", "net.d")
        self.handler_roots = {"corral": os.path.join(work, "corral-runc-root"),
                              "runc": os.path.join(work, "runc-root")}
        self.binaries = {"corral": corral_runc, "runc": runc}
        self.process = None
        self.shims_seen = {}  # pid -> start time
        self.saved_log_tail = None  # read before the work directory goes

    def write_config(self):
        os.makedirs(self.cni_conf_dir)
        # The pods' network: the loopback plugin brings `lo` up in the pod's network
        # namespace; nothing else is made on the host. The "static" IPAM plugin after it
        # only reports 127.0.0.1 as the pod's address: containerd 1.6's CRI plugin refuses a
        # pod whose CNI result has no address on eth0 ("failed to find network info for
        # sandbox"), which is all a loopback-only list gives it. static creates nothing.
        conflist = {
            "cniVersion": "1.0.0",
            "name": "corral-cri-test",
            "plugins": [
                {"type": "loopback"},
                {"type": "static", "ipam": {"type": "static",
                                            "addresses": [{"address": "127.0.0.1/8"}]}},
            ],
        }
        with open(os.path.join(self.cni_conf_dir, "10-corral-cri-test.conflist"), "w") as f:
            json.dump(conflist, f, indent=2)
        runtimes = ""
        for handler in ("corral", "runc"):
            os.makedirs(self.handler_roots[handler])
            runtimes += f"""
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{handler}]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{handler}.options]
        BinaryName = {json.dumps(self.binaries[handler])}
        Root = {json.dumps(self.handler_roots[handler])}
        SystemdCgroup = false
"""
        config = f"""version = 2
root = {json.dumps(self.root)}
state = {json.dumps(self.state)}
# Plugins that would touch paths outside the work directory or are not needed here.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]

[grpc]
  address = {json.dumps(self.socket)}

[ttrpc]
  address = {json.dumps(self.socket + ".ttrpc")}

[debug]
  level = "info"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {json.dumps(PAUSE_IMAGE)}
  disable_apparmor = true
  enable_selinux = false
  # The CRI plugin gives the sandbox oom_score_adj -998; lowering a score needs
  # CAP_SYS_RESOURCE, which a container host may not have. Restricted, it is clamped to
  # containerd's own score.
  restrict_oom_score_adj = true
  # Pod network namespaces are bind-mounted under the state directory, not /run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
{runtimes}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = {json.dumps(self.cni_conf_dir)}
    max_conf_num = 1
"""
        with open(self.config_path, "w") as f:
            f.write(config)

    def start(self):
        log = open(self.log_path, "ab")

        def die_with_the_test():
            # containerd gets SIGTERM if this test is killed outright (SIGKILL), so that it
            # does not outlive the run; the finally below does the rest otherwise.
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        self.process = subprocess.Popen(["containerd", "--config", self.config_path],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        start_new_session=True, preexec_fn=die_with_the_test)
        log.close()
        if not wait_for(lambda: os.path.exists(self.socket) or self.process.poll() is not None,
                        30):
            raise CheckAbort("containerd's socket did not appear in 30 s")
        if self.process.poll() is not None:
            raise CheckAbort(f"containerd exited with {self.process.returncode}")

    def ctr(self, *args):
        return subprocess.run(["ctr", "-a", self.socket, "-n", K8S_NAMESPACE, *args],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)

    def note_shims(self):
        for pid in shim_pids(self.socket):
            if pid not in self.shims_seen:
                self.shims_seen[pid] = start_time(pid)

    def live_shims(self):
        self.note_shims()
        return [pid for pid, started in self.shims_seen.items() if alive(pid, started)]

    def stop(self):
        """SIGTERM, wait; SIGKILL after 30 s. Returns containerd's exit status."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.note_shims()
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            print(f"containerd (pid {self.process.pid}) ignored SIGTERM for 30 s: SIGKILL",
                  flush=True)
            self.process.kill()
            return self.process.wait(10)

    def log_tail(self, lines=80):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no containerd log)"


# ----------------------------------------------------------------------------------------
# Pods and containers


class Session:
    def __init__(self, cri, pb, containerd, checks, work):
        self.cri, self.pb, self.ctd, self.checks, self.work = cri, pb, containerd, checks, work
        self.tracked = {}  # pid -> (start time, what) of processes that must be gone at the end

    def track(self, pid, what):
        if pid:
            self.tracked[pid] = (start_time(pid), what)

    def pod_config(self, name, hostname, purpose, dns=None, pid_mode=None):
        pb = self.pb
        uid = str(uuid.uuid4())
        log_dir = os.path.join(self.work, "pods", f"{name}_{uid}")
        os.makedirs(log_dir)
        # What the kubelet sends for a pod with default settings: the pod's own network and
        # IPC namespaces, a PID namespace per container, seccomp Unconfined (the kubelet's
        # default without --seccomp-default), a cgroupfs cgroup parent.
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="corral-cri-test",
                                           attempt=0),
            hostname=hostname,
            log_directory=log_dir,
            dns_config=dns,
            labels={POD_LABEL: purpose},
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=CGROUP_PARENT,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pb.POD, pid=pb.CONTAINER if pid_mode is None else pid_mode,
                        ipc=pb.POD),
                    seccomp=pb.SecurityProfile(
                        profile_type=pb.SecurityProfile.ProfileType.Unconfined))))

    def run_pod(self, config, handler):
        return self.cri.RunPodSandbox(config=config, runtime_handler=handler).pod_sandbox_id

    def container_config(self, name, command, resources=None, seccomp="Unconfined",
                         security=None, pid_mode=None, **extra):
        pb = self.pb
        security = security or {}
        return pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image=BUSYBOX_IMAGE),
            command=command,
            log_path=f"{name}.log",
            **extra,
            linux=pb.LinuxContainerConfig(
                resources=resources,
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pb.POD, pid=pb.CONTAINER if pid_mode is None else pid_mode,
                        ipc=pb.POD),
                    seccomp=pb.SecurityProfile(
                        profile_type=getattr(pb.SecurityProfile.ProfileType, seccomp)),
                    **security)))

    def start_container(self, pod_id, pod_config, config):
        cid = self.cri.CreateContainer(pod_sandbox_id=pod_id, config=config,
                                       sandbox_config=pod_config).container_id
        self.cri.StartContainer(container_id=cid)
        return cid

    def container_info(self, cid):
        response = self.cri.ContainerStatus(container_id=cid, verbose=True)
        return response.status, json.loads(response.info.get("info", "{}"))

    def pod_info(self, pod_id):
        response = self.cri.PodSandboxStatus(pod_sandbox_id=pod_id, verbose=True)
        return response.status, json.loads(response.info.get("info", "{}"))

    def wait_state(self, cid, state, timeout=20):
        wait_for(lambda: self.cri.ContainerStatus(container_id=cid).status.state == state,
                 timeout)
        return self.cri.ContainerStatus(container_id=cid).status

    def exec_sync(self, cid, cmd, timeout=20):
        return self.cri.ExecSync(container_id=cid, cmd=cmd, timeout=timeout,
                                 deadline=timeout + 30)

    def remove_all_pods(self):
        """Stops and removes every pod made here that containerd still has (cleanup)."""
        problems = []
        try:
            items = self.cri.ListPodSandbox(deadline=30).items
        except Exception as error:  # noqa: BLE001 - containerd may be gone
            return [f"ListPodSandbox: {error}"]
        for item in items:
            if POD_LABEL not in item.labels:
                continue
            try:
                for c in self.cri.ListContainers(filter=self.pb.ContainerFilter(
                        pod_sandbox_id=item.id)).containers:
                    self.cri.StopContainer(container_id=c.id, timeout=0)
                    self.cri.RemoveContainer(container_id=c.id)
                self.cri.StopPodSandbox(pod_sandbox_id=item.id)
                self.cri.RemovePodSandbox(pod_sandbox_id=item.id)
            except Exception as error:  # noqa: BLE001
                problems.append(f"pod {item.id}: {error}")
        return problems


def ns_inode(pid, ns):
    try:
        return os.readlink(f"/proc/{pid}/ns/{ns}")
    except OSError:
        return None


def cgroup_of(pid, controller):
    raw = read_proc(pid, "cgroup")
    for line in (raw or b"").decode().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as error:
        return f"<{error.strerror}>"


def functional(session, handler):
    """The pod checks with runtime handler `handler`. Raises CheckAbort when a check that
    the rest depends on fails."""
    cri, pb, checks, ctd = session.cri, session.pb, session.checks, session.ctd
    v1 = os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")

    version = cri.Version(version="v1")
    checks.equal("Version.runtime_name", version.runtime_name, "containerd")
    checks.equal("Version.runtime_api_version", version.runtime_api_version, "v1")
    print(f"     containerd {version.runtime_version}", flush=True)

    for image in (BUSYBOX_IMAGE, PAUSE_IMAGE):
        status = wait_for(lambda i=image: cri.ImageStatus(image=pb.ImageSpec(image=i)).image.id,
                          15, 0.2)
        tags = list(cri.ImageStatus(image=pb.ImageSpec(image=image)).image.repo_tags)
        if not checks.record(f"ImageStatus {image}", bool(status) and image in tags,
                             f"repo_tags {tags}"):
            raise CheckAbort("the CRI plugin does not see the imported images")

    # --- the pod
    hostname = "corral-cri-pod"
    dns = pb.DNSConfig(servers=["10.96.0.10"], searches=["corral-cri-test.svc.cluster.local"],
                       options=["ndots:5"])
    pod_config = session.pod_config("corral-cri-pod", hostname, "functional", dns=dns)
    try:
        pod = session.run_pod(pod_config, handler)
    except session.cri.grpc.RpcError as error:
        checks.record(f"RunPodSandbox ({handler})", False, f"{error.code()}: {error.details()}")
        raise CheckAbort("no pod")
    checks.record(f"RunPodSandbox ({handler})", True, pod[:12])
    status, info = session.pod_info(pod)
    checks.equal("PodSandboxStatus.state", pb.PodSandboxState.Name(status.state), "SANDBOX_READY")
    checks.equal("PodSandboxStatus.metadata.name", status.metadata.name, "corral-cri-pod")
    checks.equal("PodSandboxStatus.network.ip", status.network.ip, "127.0.0.1")
    checks.equal("sandbox runtimeHandler", info.get("runtimeHandler"), handler)
    checks.equal("sandbox runtime binary", info.get("runtimeOptions", {}).get("binary_name"),
                 ctd.binaries[handler])
    sandbox_pid = info.get("pid", 0)
    session.track(sandbox_pid, "pause process")
    checks.record("sandbox process runs", alive(sandbox_pid, start_time(sandbox_pid)),
                  f"pid {sandbox_pid}")
    checks.record("sandbox has its own network namespace",
                  ns_inode(sandbox_pid, "net") not in (None, ns_inode(os.getpid(), "net")),
                  ns_inode(sandbox_pid, "net") or "")
    pods = cri.ListPodSandbox(filter=pb.PodSandboxFilter(
        label_selector={POD_LABEL: "functional"})).items
    checks.equal("ListPodSandbox (label selector)",
                 [(p.id, pb.PodSandboxState.Name(p.state), p.runtime_handler) for p in pods],
                 [(pod, "SANDBOX_READY", handler)])
    netns_path = next((n.get("path", "") for n in info.get("runtimeSpec", {}).get("linux", {})
                       .get("namespaces", []) if n.get("type") == "network"), "")
    checks.record("pod network namespace is under the work directory",
                  netns_path.startswith(session.work + "/"), netns_path)

    # --- A serves on the pod's localhost; B fetches from it
    server = session.start_container(pod, pod_config, session.container_config(
        "server", ["nc", "-ll", "-p", "8080", "-e", "echo", "hello-from-a"]))
    # B also has what the kubelet gives most containers: environment variables, a working
    # directory, volumes (host directories bound in, one read-only), cluster DNS.
    data_dir = os.path.join(session.work, "volumes", "data")
    config_dir = os.path.join(session.work, "volumes", "config")
    os.makedirs(data_dir)
    os.makedirs(config_dir)
    with open(os.path.join(config_dir, "settings.txt"), "w") as f:
        f.write("v1\n")
    client = session.start_container(pod, pod_config, session.container_config(
        "client", GRACEFUL_CMD, seccomp="RuntimeDefault", working_dir="/tmp",
        envs=[pb.KeyValue(key="FOO", value=b"bar")],
        mounts=[pb.Mount(container_path="/data", host_path=data_dir),
                pb.Mount(container_path="/config", host_path=config_dir, readonly=True)]))
    for name, cid in (("server", server), ("client", client)):
        status, cinfo = session.container_info(cid)
        checks.equal(f"ContainerStatus {name}.state", pb.ContainerState.Name(status.state),
                     "CONTAINER_RUNNING")
        session.track(cinfo.get("pid", 0), f"container {name}")
    _, server_info = session.container_info(server)
    _, client_info = session.container_info(client)
    server_pid, client_pid = server_info.get("pid", 0), client_info.get("pid", 0)
    state_dir = os.path.join(ctd.handler_roots[handler], K8S_NAMESPACE)
    records = sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []
    checks.equal(f"{handler} state under Root/{K8S_NAMESPACE}", records,
                 sorted([pod, server, client]))
    for name, pid in (("server", server_pid), ("client", client_pid)):
        checks.equal(f"{name} shares the pod's network namespace", ns_inode(pid, "net"),
                     ns_inode(sandbox_pid, "net"))
        checks.equal(f"{name} shares the pod's UTS namespace", ns_inode(pid, "uts"),
                     ns_inode(sandbox_pid, "uts"))
        checks.equal(f"{name} shares the pod's IPC namespace", ns_inode(pid, "ipc"),
                     ns_inode(sandbox_pid, "ipc"))
        checks.record(f"{name} has its own PID namespace (CONTAINER)",
                      ns_inode(pid, "pid") not in (None, ns_inode(sandbox_pid, "pid")),
                      ns_inode(pid, "pid") or "")
        checks.equal(f"{name} cgroup (memory)", cgroup_of(pid, "memory" if v1 else ""),
                     f"{CGROUP_PARENT}/{server if name == 'server' else client}")
    fetch = session.exec_sync(client, ["sh", "-c", "for i in $(seq 1 50); do "
                                       "nc 127.0.0.1 8080 && exit 0; sleep 0.2; done; exit 1"])
    checks.equal("B reads A over the pod's localhost (ExecSync nc 127.0.0.1 8080)",
                 (fetch.stdout, fetch.exit_code), (b"hello-from-a\n", 0))

    # --- ExecSync: exact streams and exit code
    result = session.exec_sync(client, ["sh", "-c", "echo out; echo err >&2; exit 7"])
    checks.equal("ExecSync stdout", result.stdout, b"out\n")
    checks.equal("ExecSync stderr", result.stderr, b"err\n")
    checks.equal("ExecSync exit_code", result.exit_code, 7)
    result = session.exec_sync(client, ["hostname"])
    checks.equal("ExecSync hostname (pod hostname)", (result.stdout, result.exit_code),
                 (hostname.encode() + b"\n", 0))
    result = session.exec_sync(client, ["cat", "/etc/hostname"])
    checks.equal("ExecSync cat /etc/hostname", (result.stdout, result.exit_code),
                 (hostname.encode() + b"\n", 0))
    result = session.exec_sync(client, ["cat", "/proc/1/cmdline"])
    checks.equal("ExecSync sees the container's PID 1 (/proc/1/cmdline)", result.stdout,
                 b"\0".join(a.encode() for a in GRACEFUL_CMD) + b"\0")
    result = session.exec_sync(client, ["sh", "-c", "echo $FOO; pwd"])
    checks.equal("ExecSync sees the container's env and working_dir", result.stdout,
                 b"bar\n/tmp\n")
    result = session.exec_sync(client, ["cat", "/config/settings.txt"])
    checks.equal("read-only volume: read", (result.stdout, result.exit_code), (b"v1\n", 0))
    result = session.exec_sync(client, ["sh", "-c", "echo x > /config/x; echo rc=$?"])
    checks.record("read-only volume: not writable",
                  result.stdout == b"rc=1\n" and b"Read-only file system" in result.stderr,
                  f"stdout {result.stdout!r}, stderr {result.stderr.strip()!r}")
    result = session.exec_sync(client, ["sh", "-c", "echo from-pod > /data/out.txt"])
    checks.equal("read-write volume: written in the pod, read on the host",
                 (result.exit_code, read_text(os.path.join(data_dir, "out.txt"))), (0, "from-pod"))
    spec_mounts = {m.get("destination"): m.get("source") for m in
                   client_info.get("runtimeSpec", {}).get("mounts", [])}
    for name in ("/etc/resolv.conf", "/etc/hosts"):
        result = session.exec_sync(client, ["cat", name])
        host_copy = spec_mounts.get(name, "")
        with open(host_copy, "rb") if host_copy else io.BytesIO(b"<no such mount>") as f:
            want = f.read()
        checks.equal(f"{name} in the container is containerd's file for the pod",
                     result.stdout, want)
    result = session.exec_sync(client, ["grep", "-c", "-x", "nameserver 10.96.0.10",
                                        "/etc/resolv.conf"])
    checks.equal("cluster DNS server in /etc/resolv.conf", result.stdout, b"1\n")
    # An exec that outlives its timeout (a kubelet probe that hangs): containerd answers with
    # an error and kills the process, through the pid the runtime gave the shim.
    began = time.monotonic()
    try:
        result = session.exec_sync(client, ["sleep", "31"], timeout=1)
        checks.record("ExecSync past its timeout fails", False,
                      f"answered exit_code {result.exit_code} after "
                      f"{time.monotonic() - began:.1f} s")
    except session.cri.grpc.RpcError as error:
        checks.record("ExecSync past its timeout fails", "timeout" in error.details(),
                      f"{error.code()}: {error.details()[-80:]} after "
                      f"{time.monotonic() - began:.1f} s")
    left = wait_for(lambda: not [p for p in all_pids() if cmdline(p) == [b"sleep", b"31"]], 5)
    checks.record("ExecSync past its timeout: its process is killed", bool(left),
                  "" if left else "`sleep 31` still runs in the container")

    # A program that is not there: containerd answers with an error naming it (as with
    # runc), or a runtime may report it as a non-zero exit code.
    try:
        result = session.exec_sync(client, ["/bin/does-not-exist"])
        checks.record("ExecSync of a missing program fails", result.exit_code != 0,
                      f"exit_code {result.exit_code}, stderr {result.stderr[-200:]!r}")
    except session.cri.grpc.RpcError as error:
        checks.record("ExecSync of a missing program fails", "does-not-exist" in error.details(),
                      f"{error.code()}: {error.details()[-160:]}")

    # containerd's default capability set for a container that asks for none in particular
    # (CAP_CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE
    # NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP: a80425fb), and seccomp in filter mode
    # (the container asked for RuntimeDefault). corral-runc drops CAP_MKNOD on purpose (it
    # writes no device cgroup rules: runtime/oci/runc_plan_process.cc): a00425fb.
    caps = "00000000a00425fb" if handler == "corral" else "00000000a80425fb"
    result = session.exec_sync(client, ["grep", "-E", "^(CapEff|CapBnd|NoNewPrivs|Seccomp):",
                                        "/proc/self/status"])
    checks.equal("client: capabilities, no_new_privs, seccomp (/proc/self/status)",
                 result.stdout, f"CapEff:\t{caps}\nCapBnd:\t{caps}\n".encode() +
                 b"NoNewPrivs:\t0\nSeccomp:\t2\n")

    # A container that asks for seccomp Unconfined (the kubelet's default) gets no
    # linux.seccomp in its OCI config from containerd; corral-runc then applies corral's
    # built-in profile (runtime/oci/runc_plan.h: "no linux.seccomp"), runc none.
    result = session.exec_sync(server, ["grep", "^Seccomp:", "/proc/self/status"])
    checks.equal("server (seccomp Unconfined): Seccomp mode", result.stdout,
                 b"Seccomp:\t2\n" if handler == "corral" else b"Seccomp:\t0\n")

    # --- R: what Pod Security's "restricted" level asks for: a non-root user, no
    # capabilities, no privilege escalation, RuntimeDefault seccomp, plus a read-only root
    restricted = session.start_container(pod, pod_config, session.container_config(
        "restricted", ["sleep", "3600"], seccomp="RuntimeDefault", security=dict(
            run_as_user=pb.Int64Value(value=65534), run_as_group=pb.Int64Value(value=65534),
            readonly_rootfs=True, no_new_privs=True,
            capabilities=pb.Capability(drop_capabilities=["ALL"]))))
    session.track(session.container_info(restricted)[1].get("pid", 0), "container restricted")
    result = session.exec_sync(restricted, ["sh", "-c", "id -u; id -g; grep -E "
                                            "'^(CapPrm|CapEff|CapBnd|NoNewPrivs|Seccomp):' "
                                            "/proc/self/status"])
    checks.equal("restricted: uid, gid, capabilities, no_new_privs, seccomp",
                 (result.stdout, result.exit_code),
                 (b"65534\n65534\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                  b"CapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n", 0))
    result = session.exec_sync(restricted, ["sh", "-c", "echo x > /written; echo rc=$?"])
    checks.record("restricted: the root filesystem is read-only",
                  result.stdout == b"rc=1\n" and b"Read-only file system" in result.stderr,
                  f"stdout {result.stdout!r}, stderr {result.stderr.strip()!r}")
    cri.StopContainer(container_id=restricted, timeout=0)
    cri.RemoveContainer(container_id=restricted)

    # --- C: memory and CPU limits
    resources = pb.LinuxContainerResources(memory_limit_in_bytes=MEMORY_LIMIT,
                                           cpu_period=CPU_PERIOD, cpu_quota=CPU_QUOTA,
                                           cpu_shares=CPU_SHARES)
    limited = session.start_container(pod, pod_config, session.container_config(
        "limited", ["sleep", "3600"], resources=resources))
    status, limited_info = session.container_info(limited)
    limited_pid = limited_info.get("pid", 0)
    session.track(limited_pid, "container limited")
    checks.equal("ContainerStatus limited.state", pb.ContainerState.Name(status.state),
                 "CONTAINER_RUNNING")
    cgroups_path = limited_info.get("runtimeSpec", {}).get("linux", {}).get("cgroupsPath", "")
    checks.equal("limited: runtimeSpec cgroupsPath", cgroups_path, f"{CGROUP_PARENT}/{limited}")
    if v1:
        checks.equal("limited: process's memory cgroup", cgroup_of(limited_pid, "memory"),
                     cgroups_path)
        checks.equal("limited: process's cpu cgroup", cgroup_of(limited_pid, "cpu"),
                     cgroups_path)
        host_mem = f"/sys/fs/cgroup/memory{cgroups_path}"
        host_cpu = f"/sys/fs/cgroup/cpu{cgroups_path}"
        checks.equal("limited: host memory.limit_in_bytes",
                     read_text(f"{host_mem}/memory.limit_in_bytes"), str(MEMORY_LIMIT))
        checks.equal("limited: host cpu.cfs_quota_us", read_text(f"{host_cpu}/cpu.cfs_quota_us"),
                     str(CPU_QUOTA))
        checks.equal("limited: host cpu.cfs_period_us",
                     read_text(f"{host_cpu}/cpu.cfs_period_us"), str(CPU_PERIOD))
        # Reported, not checked: corral-runc does not set cpu shares (a documented gap:
        # runtime/oci/runc_plan.h ResourcesToLimits), which is what the kubelet makes of a
        # container's CPU request.
        print(f"INFO limited: host cpu.shares {read_text(f'{host_cpu}/cpu.shares')} "
              f"(asked for {CPU_SHARES})", flush=True)
        inside = session.exec_sync(limited, ["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"])
        checks.equal("limited: ExecSync cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                     (inside.stdout, inside.exit_code), (f"{MEMORY_LIMIT}\n".encode(), 0))
        inside = session.exec_sync(limited, ["cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"])
        checks.equal("limited: ExecSync cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us",
                     (inside.stdout, inside.exit_code), (f"{CPU_QUOTA}\n".encode(), 0))
    else:
        host = f"/sys/fs/cgroup{cgroups_path}"
        checks.equal("limited: process's cgroup", cgroup_of(limited_pid, ""), cgroups_path)
        checks.equal("limited: host memory.max", read_text(f"{host}/memory.max"),
                     str(MEMORY_LIMIT))
        checks.equal("limited: host cpu.max", read_text(f"{host}/cpu.max"),
                     f"{CPU_QUOTA} {CPU_PERIOD}")
        inside = session.exec_sync(limited, ["cat", "/sys/fs/cgroup/memory.max"])
        checks.equal("limited: ExecSync cat /sys/fs/cgroup/memory.max",
                     (inside.stdout, inside.exit_code), (f"{MEMORY_LIMIT}\n".encode(), 0))
    # The limit holds: a process that allocates (and touches) 96 MiB is OOM-killed.
    oom = session.exec_sync(limited, ["dd", "if=/dev/zero", "of=/dev/null", "bs=96M", "count=1"],
                            timeout=30)
    checks.equal("limited: dd bs=96M is OOM-killed (exit_code 128+SIGKILL)", oom.exit_code, 137)
    small = session.exec_sync(limited, ["dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=1"],
                              timeout=30)
    checks.equal("limited: dd bs=16M succeeds", small.exit_code, 0)
    if v1:
        oom_control = read_text(f"/sys/fs/cgroup/memory{cgroups_path}/memory.oom_control")
        kills = next((int(line.split()[1]) for line in oom_control.splitlines()
                      if line.startswith("oom_kill ")), -1)
        checks.record("limited: memory.oom_control oom_kill >= 1", kills >= 1,
                      f"oom_kill {kills}")
    status = cri.ContainerStatus(container_id=limited).status
    checks.equal("limited: still RUNNING after the OOM kill of its exec",
                 pb.ContainerState.Name(status.state), "CONTAINER_RUNNING")
    checks.equal("limited: ContainerStatus resources.linux.memory_limit_in_bytes",
                 status.resources.linux.memory_limit_in_bytes, MEMORY_LIMIT)

    # --- ContainerStats
    for name, cid in (("limited", limited), ("server", server)):
        stats = cri.ContainerStats(container_id=cid).stats
        checks.equal(f"ContainerStats {name}.attributes.id", stats.attributes.id, cid)
        cpu = stats.cpu.usage_core_nano_seconds.value
        mem = stats.memory.working_set_bytes.value
        usage = stats.memory.usage_bytes.value
        checks.record(f"ContainerStats {name}: cpu and memory figures",
                      cpu > 0 and mem > 0 and usage > 0 and
                      (name != "limited" or usage <= MEMORY_LIMIT),
                      f"usage_core_nano_seconds {cpu}, working_set_bytes {mem}, "
                      f"usage_bytes {usage}")

    # --- D: exits with a code; its output reaches the CRI log
    oneshot = session.start_container(pod, pod_config, session.container_config(
        "oneshot", ["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"]))
    status = session.wait_state(oneshot, pb.CONTAINER_EXITED)
    checks.equal("oneshot: ContainerStatus (state, exit_code, reason)",
                 (pb.ContainerState.Name(status.state), status.exit_code, status.reason),
                 ("CONTAINER_EXITED", 3, "Error"))
    log_file = os.path.join(pod_config.log_directory, "oneshot.log")
    lines = []
    for line in read_text(log_file).splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            lines.append((parts[1], parts[2], parts[3]))
    checks.equal("oneshot: CRI log lines (stream, tag, text)", sorted(lines),
                 [("stderr", "F", "to-stderr"), ("stdout", "F", "to-stdout")])

    containers = cri.ListContainers(filter=pb.ContainerFilter(pod_sandbox_id=pod)).containers
    checks.equal("ListContainers (pod filter)",
                 sorted((c.metadata.name, pb.ContainerState.Name(c.state)) for c in containers),
                 [("client", "CONTAINER_RUNNING"), ("limited", "CONTAINER_RUNNING"),
                  ("oneshot", "CONTAINER_EXITED"), ("server", "CONTAINER_RUNNING")])

    # --- another pod does not share the first pod's localhost. This one shares one PID
    # namespace among its containers (shareProcessNamespace: true, PID namespace POD): the
    # container joins the pause process's.
    other_config = session.pod_config("corral-cri-other", "corral-cri-other", "functional-other",
                                      pid_mode=pb.POD)
    other = session.run_pod(other_config, handler)
    outsider = session.start_container(other, other_config, session.container_config(
        "outsider", ["sleep", "3600"], pid_mode=pb.POD))
    result = session.exec_sync(outsider, ["nc", "127.0.0.1", "8080"])
    checks.record("another pod cannot reach the first pod's localhost:8080",
                  result.exit_code != 0 and b"hello-from-a" not in result.stdout,
                  f"exit_code {result.exit_code}, stderr {result.stderr.strip()[-120:]!r}")
    _, other_info = session.pod_info(other)
    session.track(other_info.get("pid", 0), "pause process (other pod)")
    session.track(session.container_info(outsider)[1].get("pid", 0), "container outsider")
    result = session.exec_sync(outsider, ["hostname"])
    checks.equal("other pod's hostname", result.stdout, b"corral-cri-other\n")
    outsider_pid = session.container_info(outsider)[1].get("pid", 0)
    checks.equal("shared PID namespace: the container is in the pause process's",
                 ns_inode(outsider_pid, "pid"), ns_inode(other_info.get("pid", 0), "pid"))
    result = session.exec_sync(outsider, ["cat", "/proc/1/cmdline"])
    checks.equal("shared PID namespace: PID 1 is the pause process", result.stdout,
                 b"\0".join(a.encode() for a in PAUSE_CMD) + b"\0")

    # --- stops: graceful (SIGTERM handled), forced (SIGTERM ignored by PID 1 -> SIGKILL)
    began = time.monotonic()
    cri.StopContainer(container_id=client, timeout=10)
    took = time.monotonic() - began
    status = cri.ContainerStatus(container_id=client).status
    checks.record("StopContainer client (traps TERM, timeout 10 s): exits 0 before the timeout",
                  (pb.ContainerState.Name(status.state), status.exit_code, status.reason)
                  == ("CONTAINER_EXITED", 0, "Completed") and took < 8,
                  f"{pb.ContainerState.Name(status.state)}, exit_code {status.exit_code}, "
                  f"reason {status.reason!r}, {took:.2f} s")
    began = time.monotonic()
    cri.StopContainer(container_id=server, timeout=1)
    took = time.monotonic() - began
    status = cri.ContainerStatus(container_id=server).status
    checks.record("StopContainer server (PID 1 ignores TERM, timeout 1 s): killed",
                  (pb.ContainerState.Name(status.state), status.exit_code, status.reason)
                  == ("CONTAINER_EXITED", 137, "Error"),
                  f"{pb.ContainerState.Name(status.state)}, exit_code {status.exit_code}, "
                  f"reason {status.reason!r}, {took:.2f} s")
    cri.StopContainer(container_id=limited, timeout=0)
    status = cri.ContainerStatus(container_id=limited).status
    checks.equal("StopContainer limited (timeout 0): (state, exit_code)",
                 (pb.ContainerState.Name(status.state), status.exit_code),
                 ("CONTAINER_EXITED", 137))
    for name, cid in (("server", server), ("client", client), ("limited", limited),
                      ("oneshot", oneshot)):
        cri.RemoveContainer(container_id=cid)
        try:
            cri.ContainerStatus(container_id=cid)
            checks.record(f"RemoveContainer {name}", False, "ContainerStatus still answers")
        except session.cri.grpc.RpcError as error:
            checks.equal(f"RemoveContainer {name} (ContainerStatus afterwards)",
                         error.code(), session.cri.grpc.StatusCode.NOT_FOUND)
    records = sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []
    checks.equal(f"{handler} state after RemoveContainer: only the pods' sandboxes", records,
                 sorted([pod, other, outsider]))
    for pod_id in (pod, other):
        cri.StopPodSandbox(pod_sandbox_id=pod_id)
        status = cri.PodSandboxStatus(pod_sandbox_id=pod_id).status
        checks.equal(f"StopPodSandbox {pod_id[:12]}: state", pb.PodSandboxState.Name(status.state),
                     "SANDBOX_NOTREADY")
        cri.RemovePodSandbox(pod_sandbox_id=pod_id)
        try:
            cri.PodSandboxStatus(pod_sandbox_id=pod_id)
            checks.record(f"RemovePodSandbox {pod_id[:12]}", False,
                          "PodSandboxStatus still answers")
        except session.cri.grpc.RpcError as error:
            checks.equal(f"RemovePodSandbox {pod_id[:12]} (PodSandboxStatus afterwards)",
                         error.code(), session.cri.grpc.StatusCode.NOT_FOUND)
    checks.equal("ListPodSandbox after removal (our label)",
                 [p.id for p in cri.ListPodSandbox().items if POD_LABEL in p.labels], [])
    checks.equal("ListContainers after removal", [c.id for c in cri.ListContainers().containers],
                 [])
    leftovers(session, f"after the {handler} pods' removal")


def leftovers(session, when):
    """Nothing of the pods may be left: runtime state, cgroups, mounts, processes."""
    checks, ctd = session.checks, session.ctd
    for handler, root in ctd.handler_roots.items():
        checks.equal(f"{when}: no files under the {handler} handler's Root", files_under(root), [])
    gone = wait_for(lambda: not cgroup_leftovers(), 5)
    checks.record(f"{when}: no cgroups under {CGROUP_PARENT}", bool(gone),
                  "" if gone else json.dumps(cgroup_leftovers()))
    left = wait_for(lambda: not pids_in_cgroup_parent(), 5)
    checks.record(f"{when}: no processes in {CGROUP_PARENT}", bool(left),
                  "" if left else str(pids_in_cgroup_parent()))
    running = [f"{what} (pid {pid})" for pid, (started, what) in session.tracked.items()
               if alive(pid, started)]
    checks.equal(f"{when}: the pods' processes are gone", running, [])
    binary = ctd.binaries["corral"]
    runtimes = [pid for pid in all_pids() if cmdline(pid)[:1] == [binary.encode()]]
    checks.equal(f"{when}: no corral-runc processes", runtimes, [])
    # containerd keeps no mounts for a removed pod (snapshots, the sandbox's /dev/shm and
    # the network namespace's bind mount all go), running or not: none may be left.
    checks.equal(f"{when}: no mounts under the work directory", mounts_under(session.work), [])


# ----------------------------------------------------------------------------------------
# Timing


def pod_memory_bytes(ids):
    """The memory charged to these containers' cgroups under CGROUP_PARENT (v1 or v2)."""
    total = 0
    for cid in ids:
        for path in (f"/sys/fs/cgroup/memory{CGROUP_PARENT}/{cid}/memory.usage_in_bytes",
                     f"/sys/fs/cgroup{CGROUP_PARENT}/{cid}/memory.current"):
            if os.path.exists(path):
                with open(path) as f:
                    total += int(f.read())
                break
    return total


def timing(session, handlers, rounds):
    cri, pb, checks = session.cri, session.pb, session.checks
    samples = {h: [] for h in handlers}
    memory = {h: [] for h in handlers}
    failures = {h: 0 for h in handlers}

    def one_round(handler, index):
        config = session.pod_config(f"timing-{handler}-{index}", f"timing-{index}", "timing")
        began = time.monotonic()
        pod = session.run_pod(config, handler)
        container = cri.CreateContainer(pod_sandbox_id=pod, sandbox_config=config,
                                        config=session.container_config(
                                            "sleeper", ["sleep", "3600"])).container_id
        cri.StartContainer(container_id=container)
        status = wait_for(lambda: cri.ContainerStatus(container_id=container).status.state
                          == pb.CONTAINER_RUNNING, 20, 0.002)
        elapsed = time.monotonic() - began
        memory[handler].append(pod_memory_bytes([pod, container]))
        cri.StopPodSandbox(pod_sandbox_id=pod)
        cri.RemovePodSandbox(pod_sandbox_id=pod)
        if not status:
            raise RuntimeError(f"{handler}: container {container[:12]} never RUNNING")
        return elapsed

    # One warm-up round each (not counted), then the rounds alternating between handlers so
    # that drift on the host weighs on both alike.
    for index in range(-1, rounds):
        for handler in handlers:
            try:
                elapsed = one_round(handler, index)
            except Exception as error:  # noqa: BLE001 - counted, reported below
                failures[handler] += 1
                print(f"     timing round {index} ({handler}) failed: {error}", flush=True)
                continue
            if index >= 0:
                samples[handler].append(elapsed * 1000)
    for handler in handlers:
        checks.equal(f"timing: {rounds} + 1 rounds with {handler} succeeded", failures[handler], 0)

    def p90(values):
        ordered = sorted(values)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
    parts, medians, p90s = [], {}, {}
    for handler in handlers:
        if samples[handler]:
            medians[handler] = statistics.median(samples[handler])
            p90s[handler] = p90(samples[handler])
            parts.append(f"{handler} median {medians[handler]:.1f} ms p90 {p90s[handler]:.1f} ms")
        else:
            parts.append(f"{handler} no successful round")
    line = "CRI start (pod sandbox + container): " + "; ".join(parts)
    if "corral" in medians and "runc" in medians:
        line += (f"; ratio corral/runc median {medians['corral'] / medians['runc']:.2f} "
                 f"p90 {p90s['corral'] / p90s['runc']:.2f}")
    print(line, flush=True)
    for handler in handlers:
        print(f"     {handler} rounds (ms): " + " ".join(f"{v:.1f}" for v in samples[handler]),
              flush=True)
    # What the running pod (pause + a sleeping container) is charged, both cgroups summed:
    # the same measure for either runtime (neither leaves a process of its own behind).
    mem = [f"{h} median {statistics.median(memory[h]) / 1024:.0f} KiB"
           for h in handlers if memory[h]]
    print("CRI pod memory (pause + sleep, cgroup charge): " + "; ".join(mem), flush=True)


# ----------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corral-runc", required=True, help="the corral-runc binary")
    parser.add_argument("--runc", default="/usr/sbin/runc", help="runc, for the timing")
    parser.add_argument("--work", help="work directory (default: a new one under /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--rounds", type=int, default=TIMING_ROUNDS, help="timing rounds")
    parser.add_argument("--functional-handler", default="corral", choices=["corral", "runc"],
                        help="the handler the pod checks use (runc: to check the test itself)")
    args = parser.parse_args()

    check_prerequisites(args)
    import grpc
    corral_runc = os.path.abspath(args.corral_runc)
    if not os.access(corral_runc, os.X_OK):
        print(f"FAIL corral-runc: {corral_runc} is not an executable file", flush=True)
        return 1
    if pids_in_cgroup_parent():
        # Another run of this test is going on (or one was killed before its cleanup).
        print(f"FAIL setup: processes in {CGROUP_PARENT} already: {pids_in_cgroup_parent()}",
              flush=True)
        return 1
    remove_cgroup_parent()  # empty cgroups a killed run may have left

    created_work = args.work is None
    if created_work:
        work = tempfile.mkdtemp(prefix="corral-cri-", dir="/tmp")
    else:
        work = os.path.abspath(args.work)
        os.makedirs(work, exist_ok=True)
        if os.listdir(work):
            print(f"FAIL setup: --work {work} is not empty", flush=True)
            return 1
    if created_work:
        os.chmod(work, 0o711)  # mkdtemp's 0700, opened for traversal as a runtime dir is
    print(f"work directory {work}", flush=True)

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)  # ctest's timeout, kill: clean up first
    signal.signal(signal.SIGHUP, interrupted)

    checks = Checks()
    ctd = Containerd(work, corral_runc, os.path.abspath(args.runc))
    session = None
    cri = None
    try:
        pb = load_cri_module(tempfile.mkdtemp(prefix="proto-", dir=work))
        archive = os.path.join(work, "images.tar")
        write_image_archive(archive)
        ctd.write_config()
        ctd.start()
        cri = Cri(grpc, pb, ctd.socket)
        ready = wait_for(lambda: _answers(cri), 30, 0.2)
        if not checks.record("containerd's CRI answers Version", bool(ready)):
            raise CheckAbort("CRI not ready")
        imported = ctd.ctr("images", "import", archive)
        if not checks.record("ctr images import (OCI archive)", imported.returncode == 0,
                             (imported.stdout + imported.stderr).strip().replace("\n", " | ")):
            raise CheckAbort("import failed")
        session = Session(cri, pb, ctd, checks, work)
        try:
            functional(session, args.functional_handler)
        except CheckAbort:
            raise
        except grpc.RpcError as error:
            checks.record(f"CRI call in the {args.functional_handler} pod checks", False,
                          f"{error.code()}: {error.details()}")
        except Exception as error:  # noqa: BLE001 - reported as a failed check
            checks.record(f"{args.functional_handler} pod checks", False,
                          f"{type(error).__name__}: {error}")
        # The timing needs clean pods: remove whatever a failure above left first.
        for problem in session.remove_all_pods():
            checks.record("cleanup before the timing", False, problem)
        timing(session, ["corral", "runc"], args.rounds)
    except CheckAbort as abort:
        checks.record("setup", False, str(abort))
    except Exception as error:  # noqa: BLE001
        checks.record("test run", False, f"{type(error).__name__}: {error}")
    except KeyboardInterrupt as interrupt:
        checks.record("test run", False, f"interrupted ({interrupt or 'SIGINT'})")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the cleanup runs to its end
        cleanup(session, cri, ctd, checks, work, created_work and not args.keep,
                args.keep)

    failed = checks.failed()
    print(f"{len(checks.results) - len(failed)} checks passed, {len(failed)} failed", flush=True)
    if failed:
        for name, _ok, detail in failed:
            print(f"  FAILED {name}: {detail}", flush=True)
        print("---- containerd log (tail) ----", flush=True)
        print(ctd.saved_log_tail or ctd.log_tail(), flush=True)
        return 1
    return 0


def _answers(cri):
    try:
        return cri.Version(version="v1", deadline=2).runtime_name
    except Exception:  # noqa: BLE001 - not up yet
        return None


def cleanup(session, cri, ctd, checks, work, remove_work, keep):
    """Stops and removes everything this run made; records what it had to clean up."""
    if session is not None:
        for problem in session.remove_all_pods():
            checks.record("cleanup: remove pods", False, problem)
    if cri is not None:
        cri.close()
    ctd.note_shims()
    code = ctd.stop()
    if code is not None:
        print(f"     containerd stopped (exit status {code})", flush=True)
    # A shim exits once its last container is deleted; give them a moment.
    shims = wait_for(lambda: not ctd.live_shims(), 10)
    if not shims:
        left = ctd.live_shims()
        checks.record("cleanup: the shims exited", False, f"still running: {left}; killing them")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if session is not None:
        leftovers(session, "at the end")
    # Whatever is still there now is removed, whether or not a check above complained.
    for pid in pids_in_cgroup_parent():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not pids_in_cgroup_parent(), 5)
    for problem in remove_cgroup_parent():
        checks.record("cleanup: remove the cgroup parent", False, problem)
    for point in sorted(mounts_under(work), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)
    ctd.saved_log_tail = ctd.log_tail()
    if keep:
        print(f"work directory kept: {work}", flush=True)
    elif mounts_under(work):
        checks.record("cleanup: unmount", False,
                      f"mounts left under {work}, not removing it: {mounts_under(work)}")
    else:
        if remove_work:
            shutil.rmtree(work, ignore_errors=True)
        else:
            for entry in os.listdir(work):
                path = os.path.join(work, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
