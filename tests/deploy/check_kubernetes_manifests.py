#!/usr/bin/env python3
"""Checks corral's Kubernetes manifests (deploy/kubernetes/) without a cluster.

    check_kubernetes_manifests.py DIR              check DIR (deploy/kubernetes)
    check_kubernetes_manifests.py DIR --self-test  show that the checks catch broken copies

What it checks:
  - Each object against a JSON schema written here from the Kubernetes API reference
    (RuntimeClass node.k8s.io/v1, DaemonSet apps/v1, the core/v1 and rbac/v1 objects) and
    from kubernetes-sigs/agent-sandbox's CRDs (extensions.agents.x-k8s.io/v1beta1
    SandboxTemplate, SandboxWarmPool, SandboxClaim), for the fields these manifests use.
    Objects are closed (additionalProperties: false), as the API server's strict field
    validation (kubectl's default) rejects unknown fields: a misspelt field fails here. A
    field the API has but the schemas here do not list fails too: add it to the schema.
  - What a schema cannot say: a DaemonSet's selector selects its own template, every
    volumeMount names a volume, names are unique, requests do not exceed limits, a probe's
    port is a declared port, the installer's script passes `sh -n` and, run against a fake
    host with stubbed nsenter and kubectl, installs, is idempotent and refuses what it must.
  - Across files: the RuntimeClass's handler is the runtime in containerd-corral.toml and
    the installer's; the label the installer sets is the RuntimeClass's node selector; the
    corral-runc path containerd runs is where the installer writes; the template's
    runtimeClassName is the RuntimeClass; the claim names the warm pool, the pool the
    template.

Prints one line per file checked; on any failure prints FILE: OBJECT: FIELD: problem lines
and exits 1. Needs python3-yaml and python3-jsonschema (Debian), and Python 3.11 (tomllib).
"""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from decimal import Decimal

try:
    import jsonschema
    import yaml
except ImportError as exc:  # another python3 first on PATH: Debian's has the packages
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"check_kubernetes_manifests: {exc}: apt-get install python3-yaml python3-jsonschema")

RUNTIMECLASS = "runtimeclass.yaml"
INSTALLER = "installer.yaml"
CONTAINERD_TOML = "containerd-corral.toml"
TEMPLATE = "agent-sandbox/sandbox-template.yaml"
WARMPOOL = "agent-sandbox/sandbox-warmpool.yaml"
CLAIM = "agent-sandbox/sandbox-claim.yaml"
YAML_FILES = [RUNTIMECLASS, INSTALLER, TEMPLATE, WARMPOOL, CLAIM]
AGENT_SANDBOX_API = "extensions.agents.x-k8s.io/v1beta1"
INSTALLER_SCRIPT_KEY = "install.sh"

# ---------------------------------------------------------------------------------------
# Schemas. Patterns are the API server's validation (k8s.io/apimachinery validation and
# resource.Quantity).

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
QUANTITY = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
            r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
IANA_SVC_NAME = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
RESOURCE_NAME = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
CONFIGMAP_KEY = r"^[-._a-zA-Z0-9]+$"


def obj(props, required=()):
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


def s(pattern=None, enum=None, max_length=None, min_length=None):
    out = {"type": "string"}
    if pattern:
        out["pattern"] = pattern
    if enum is not None:
        out["enum"] = list(enum)
    if max_length:
        out["maxLength"] = max_length
    if min_length:
        out["minLength"] = min_length
    return out


def arr(items, min_items=None):
    out = {"type": "array", "items": items}
    if min_items:
        out["minItems"] = min_items
    return out


def integer(minimum=None, maximum=None):
    out = {"type": "integer"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return out


BOOL = {"type": "boolean"}
STR = {"type": "string"}
STRS = arr(STR)
INT_OR_STRING = {"type": ["integer", "string"]}
LABELS = {"type": "object", "propertyNames": {"pattern": LABEL_KEY, "maxLength": 316},
          "additionalProperties": s(LABEL_VALUE, max_length=63)}
ANNOTATIONS = {"type": "object", "additionalProperties": STR}
QUANTITY_SCHEMA = {"type": ["integer", "number", "string"], "pattern": QUANTITY}
RESOURCE_LIST = {"type": "object", "propertyNames": {"pattern": RESOURCE_NAME},
                 "additionalProperties": QUANTITY_SCHEMA}


def object_meta(namespaced, name_pattern=DNS_SUBDOMAIN, name_max=253):
    props = {"name": s(name_pattern, max_length=name_max), "labels": LABELS,
             "annotations": ANNOTATIONS}
    if namespaced:
        props["namespace"] = s(DNS_LABEL, max_length=63)
    return obj(props, ["name"])


def top(api_version, kind, spec_props=None, namespaced=True, meta=None, spec_required=()):
    """An object with apiVersion, kind, metadata and (given spec_props) a required spec."""
    props = {"apiVersion": {"const": api_version}, "kind": {"const": kind},
             "metadata": meta or object_meta(namespaced)}
    required = ["apiVersion", "kind", "metadata"]
    if spec_props is not None:
        props["spec"] = obj(spec_props, spec_required)
        required.append("spec")
    return obj(props, required)


SECCOMP_PROFILE = obj({"type": s(enum=["RuntimeDefault", "Unconfined", "Localhost"]),
                       "localhostProfile": STR}, ["type"])
CONTAINER_SECURITY_CONTEXT = obj({
    "privileged": BOOL, "allowPrivilegeEscalation": BOOL, "readOnlyRootFilesystem": BOOL,
    "runAsUser": integer(0), "runAsGroup": integer(0), "runAsNonRoot": BOOL,
    "capabilities": obj({"add": STRS, "drop": STRS}),
    "seccompProfile": SECCOMP_PROFILE, "procMount": s(enum=["Default", "Unmasked"]),
})
POD_SECURITY_CONTEXT = obj({
    "runAsUser": integer(0), "runAsGroup": integer(0), "runAsNonRoot": BOOL,
    "fsGroup": integer(0), "supplementalGroups": arr(integer(0)),
    "seccompProfile": SECCOMP_PROFILE,
})
PROBE = obj({
    "httpGet": obj({"path": s(r"^/"), "port": INT_OR_STRING, "host": STR,
                    "scheme": s(enum=["HTTP", "HTTPS"]),
                    "httpHeaders": arr(obj({"name": STR, "value": STR}, ["name", "value"]))},
                   ["port"]),
    "exec": obj({"command": arr(STR, 1)}, ["command"]),
    "tcpSocket": obj({"port": INT_OR_STRING, "host": STR}, ["port"]),
    "grpc": obj({"port": integer(1, 65535), "service": STR}, ["port"]),
    "initialDelaySeconds": integer(0), "periodSeconds": integer(1),
    "timeoutSeconds": integer(1), "successThreshold": integer(1),
    "failureThreshold": integer(1), "terminationGracePeriodSeconds": integer(1),
})
KEY_REF = obj({"name": STR, "key": STR, "optional": BOOL}, ["key"])
ENV_VAR = obj({
    "name": s(min_length=1), "value": STR,
    "valueFrom": obj({
        "fieldRef": obj({"fieldPath": STR, "apiVersion": STR}, ["fieldPath"]),
        "configMapKeyRef": KEY_REF, "secretKeyRef": KEY_REF,
        "resourceFieldRef": obj({"containerName": STR, "resource": STR,
                                 "divisor": QUANTITY_SCHEMA}, ["resource"]),
    }),
}, ["name"])
CONTAINER_PORT = obj({
    "name": s(IANA_SVC_NAME, max_length=15), "containerPort": integer(1, 65535),
    "hostPort": integer(1, 65535), "hostIP": STR, "protocol": s(enum=["TCP", "UDP", "SCTP"]),
}, ["containerPort"])
VOLUME_MOUNT = obj({
    "name": s(DNS_LABEL, max_length=63), "mountPath": s(r"^/"), "readOnly": BOOL,
    "subPath": STR, "subPathExpr": STR,
    "mountPropagation": s(enum=["None", "HostToContainer", "Bidirectional"]),
}, ["name", "mountPath"])
CONTAINER = obj({
    "name": s(DNS_LABEL, max_length=63), "image": s(min_length=1),
    "imagePullPolicy": s(enum=["Always", "Never", "IfNotPresent"]),
    "command": STRS, "args": STRS, "workingDir": STR, "env": arr(ENV_VAR),
    "ports": arr(CONTAINER_PORT),
    "resources": obj({"requests": RESOURCE_LIST, "limits": RESOURCE_LIST}),
    "volumeMounts": arr(VOLUME_MOUNT), "securityContext": CONTAINER_SECURITY_CONTEXT,
    "readinessProbe": PROBE, "livenessProbe": PROBE, "startupProbe": PROBE,
    "stdin": BOOL, "tty": BOOL, "terminationMessagePath": STR,
    "terminationMessagePolicy": s(enum=["File", "FallbackToLogsOnError"]),
    "restartPolicy": s(enum=["Always"]),
}, ["name", "image"])
KEY_TO_PATH = obj({"key": STR, "path": STR, "mode": integer(0, 511)}, ["key", "path"])
HOST_PATH_TYPES = ["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                   "CharDevice", "BlockDevice"]
# A volume is its name and exactly one source.
VOLUME = {
    "type": "object",
    "properties": {
        "name": s(DNS_LABEL, max_length=63),
        "hostPath": obj({"path": s(r"^/"), "type": s(enum=HOST_PATH_TYPES)}, ["path"]),
        "emptyDir": obj({"medium": s(enum=["", "Memory"]), "sizeLimit": QUANTITY_SCHEMA}),
        "configMap": obj({"name": STR, "items": arr(KEY_TO_PATH),
                          "defaultMode": integer(0, 511), "optional": BOOL}),
        "secret": obj({"secretName": STR, "items": arr(KEY_TO_PATH),
                       "defaultMode": integer(0, 511), "optional": BOOL}),
        "persistentVolumeClaim": obj({"claimName": STR, "readOnly": BOOL}, ["claimName"]),
    },
    "required": ["name"], "additionalProperties": False,
    "minProperties": 2, "maxProperties": 2,
}
TOLERATION = obj({
    "key": STR, "operator": s(enum=["Exists", "Equal"]), "value": STR,
    "effect": s(enum=["", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
    "tolerationSeconds": {"type": "integer"},
})
POD_SPEC = obj({
    "containers": arr(CONTAINER, 1), "initContainers": arr(CONTAINER),
    "volumes": arr(VOLUME), "serviceAccountName": s(DNS_SUBDOMAIN, max_length=253),
    "automountServiceAccountToken": BOOL, "hostPID": BOOL, "hostNetwork": BOOL,
    "hostIPC": BOOL, "shareProcessNamespace": BOOL,
    "nodeSelector": LABELS, "tolerations": arr(TOLERATION), "priorityClassName": STR,
    "runtimeClassName": s(DNS_SUBDOMAIN, max_length=253),
    "restartPolicy": s(enum=["Always", "OnFailure", "Never"]),
    "terminationGracePeriodSeconds": integer(0), "securityContext": POD_SECURITY_CONTEXT,
    "dnsPolicy": s(enum=["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]),
    "enableServiceLinks": BOOL,
}, ["containers"])
LABEL_SELECTOR = obj({
    "matchLabels": LABELS,
    "matchExpressions": arr(obj({"key": s(LABEL_KEY),
                                 "operator": s(enum=["In", "NotIn", "Exists",
                                                     "DoesNotExist"]),
                                 "values": STRS}, ["key", "operator"])),
})
POD_TEMPLATE = obj({"metadata": obj({"labels": LABELS, "annotations": ANNOTATIONS}),
                    "spec": POD_SPEC}, ["spec"])

SCHEMAS = {
    # RuntimeClass has no spec: handler, overhead and scheduling sit at the top.
    ("node.k8s.io/v1", "RuntimeClass"): obj({
        "apiVersion": {"const": "node.k8s.io/v1"}, "kind": {"const": "RuntimeClass"},
        "metadata": object_meta(False), "handler": s(DNS_LABEL, max_length=63),
        "overhead": obj({"podFixed": RESOURCE_LIST}),
        "scheduling": obj({"nodeSelector": LABELS, "tolerations": arr(TOLERATION)}),
    }, ["apiVersion", "kind", "metadata", "handler"]),
    ("v1", "Namespace"): top("v1", "Namespace", namespaced=False,
                             meta=object_meta(False, DNS_LABEL, 63)),
    ("v1", "ServiceAccount"): obj({
        "apiVersion": {"const": "v1"}, "kind": {"const": "ServiceAccount"},
        "metadata": object_meta(True), "automountServiceAccountToken": BOOL,
    }, ["apiVersion", "kind", "metadata"]),
    ("v1", "ConfigMap"): obj({
        "apiVersion": {"const": "v1"}, "kind": {"const": "ConfigMap"},
        "metadata": object_meta(True), "immutable": BOOL,
        "data": {"type": "object", "propertyNames": {"pattern": CONFIGMAP_KEY},
                 "additionalProperties": STR},
    }, ["apiVersion", "kind", "metadata"]),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): obj({
        "apiVersion": {"const": "rbac.authorization.k8s.io/v1"},
        "kind": {"const": "ClusterRole"}, "metadata": object_meta(False),
        "rules": arr(obj({"apiGroups": STRS, "resources": STRS, "verbs": arr(STR, 1),
                          "resourceNames": STRS, "nonResourceURLs": STRS}, ["verbs"])),
    }, ["apiVersion", "kind", "metadata"]),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): obj({
        "apiVersion": {"const": "rbac.authorization.k8s.io/v1"},
        "kind": {"const": "ClusterRoleBinding"}, "metadata": object_meta(False),
        "roleRef": obj({"apiGroup": STR, "kind": s(enum=["Role", "ClusterRole"]),
                        "name": s(min_length=1)}, ["apiGroup", "kind", "name"]),
        "subjects": arr(obj({"kind": s(enum=["ServiceAccount", "User", "Group"]),
                             "name": s(min_length=1), "namespace": STR, "apiGroup": STR},
                            ["kind", "name"])),
    }, ["apiVersion", "kind", "metadata", "roleRef"]),
    ("apps/v1", "DaemonSet"): top("apps/v1", "DaemonSet", {
        "selector": LABEL_SELECTOR, "template": POD_TEMPLATE,
        "updateStrategy": obj({"type": s(enum=["RollingUpdate", "OnDelete"]),
                               "rollingUpdate": obj({"maxUnavailable": INT_OR_STRING,
                                                     "maxSurge": INT_OR_STRING})}),
        "minReadySeconds": integer(0), "revisionHistoryLimit": integer(0),
    }, spec_required=["selector", "template"]),
    # kubernetes-sigs/agent-sandbox k8s/crds/extensions.agents.x-k8s.io_*.yaml, v1beta1
    # (the storage version; v1alpha1 is served but deprecated).
    (AGENT_SANDBOX_API, "SandboxTemplate"): top(AGENT_SANDBOX_API, "SandboxTemplate", {
        "podTemplate": obj({"metadata": obj({"labels": LABELS, "annotations": ANNOTATIONS}),
                            "spec": POD_SPEC}, ["spec"]),
        "volumeClaimTemplates": arr(obj({
            "metadata": obj({"name": STR, "labels": LABELS, "annotations": ANNOTATIONS}),
            "spec": {"type": "object"}}, ["spec"])),
        "service": BOOL,
        "networkPolicy": obj({"ingress": arr({"type": "object"}),
                              "egress": arr({"type": "object"})}),
        "networkPolicyManagement": s(enum=["Managed", "Unmanaged"]),
        "envVarsInjectionPolicy": s(enum=["Allowed", "Overrides", "Disallowed"]),
        "volumeClaimTemplatesPolicy": s(enum=["Disallowed", "Allowed", "Overrides"]),
    }, spec_required=["podTemplate"]),
    (AGENT_SANDBOX_API, "SandboxWarmPool"): top(AGENT_SANDBOX_API, "SandboxWarmPool", {
        "replicas": integer(0, 2 ** 31 - 1),
        "sandboxTemplateRef": obj({"name": s(DNS_SUBDOMAIN, max_length=253)}, ["name"]),
        "updateStrategy": obj({"type": s(enum=["Recreate", "OnReplenish"])}),
    }, spec_required=["sandboxTemplateRef"]),
    (AGENT_SANDBOX_API, "SandboxClaim"): top(AGENT_SANDBOX_API, "SandboxClaim", {
        "warmPoolRef": obj({"name": s(DNS_SUBDOMAIN, max_length=253)}, ["name"]),
        "lifecycle": obj({"shutdownTime": STR, "ttlSecondsAfterFinished": integer(0),
                          "shutdownPolicy": s(enum=["Delete", "DeleteForeground",
                                                    "Retain"])}),
        "additionalPodMetadata": obj({"labels": LABELS, "annotations": ANNOTATIONS}),
        "env": arr(obj({"name": STR, "value": STR, "containerName": STR},
                       ["name", "value"])),
        "volumeClaimTemplates": arr({"type": "object"}),
    }, spec_required=["warmPoolRef"]),
}
# The kinds each file must hold, in order.
EXPECTED_KINDS = {
    RUNTIMECLASS: ["RuntimeClass"],
    INSTALLER: ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                "ConfigMap", "DaemonSet"],
    TEMPLATE: ["SandboxTemplate"],
    WARMPOOL: ["SandboxWarmPool"],
    CLAIM: ["SandboxClaim"],
}

# ---------------------------------------------------------------------------------------
# Loading


class UniqueKeyLoader(yaml.SafeLoader):
    """Like kubectl's decoder, refuses a mapping with the same key twice."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                _construct_mapping)


def load_bundle(directory):
    """{file: [objects]} for the YAML files and {CONTAINERD_TOML: text}; errors."""
    bundle, errors = {}, []
    for name in YAML_FILES:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as f:
                bundle[name] = [d for d in yaml.load_all(f, Loader=UniqueKeyLoader)
                                if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            errors.append(f"{name}: {exc}")
    try:
        with open(os.path.join(directory, CONTAINERD_TOML), encoding="utf-8") as f:
            bundle[CONTAINERD_TOML] = f.read()
    except OSError as exc:
        errors.append(f"{CONTAINERD_TOML}: {exc}")
    return bundle, errors


# ---------------------------------------------------------------------------------------
# Checks

SUFFIXES = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
            "Ei": 2 ** 60, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
            "": 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
            "E": 10 ** 18}


def quantity(value):
    """A Kubernetes quantity as a Decimal; None if it is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    text = str(value)
    if not re.match(QUANTITY, text):
        return None
    m = re.match(r"^([+-]?[0-9.]+)([eE][+-]?[0-9.]+|[KMGTPE]i|[numkMGTPE])?$", text)
    number, suffix = Decimal(m.group(1)), m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * (Decimal(10) ** Decimal(suffix[1:]))
    return number * Decimal(SUFFIXES[suffix])


def field_path(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top)"


def describe(doc):
    if not isinstance(doc, dict):
        return "(not a mapping)"
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name", "?")
    if meta.get("namespace"):
        name = f"{meta['namespace']}/{name}"
    return f"{doc.get('kind', '?')} {name}"


class Checker:
    def __init__(self, bundle):
        self.bundle = bundle
        self.errors = []
        self.checked = []  # one line per file

    def err(self, file, where, field, message):
        self.errors.append(f"{file}: {where}: {field}: {message}")

    # -- per object -----------------------------------------------------------------------

    def schema(self, file, doc):
        where = describe(doc)
        if not isinstance(doc, dict):
            self.err(file, where, "(top)", "an object must be a mapping")
            return False
        key = (doc.get("apiVersion"), doc.get("kind"))
        schema = SCHEMAS.get(key)
        if schema is None:
            known = ", ".join(f"{v} {k}" for v, k in SCHEMAS)
            self.err(file, where, "apiVersion/kind",
                     f"{key[0]} {key[1]} is none of the kinds checked here ({known})")
            return False
        ok = True
        validator = jsonschema.Draft7Validator(schema)
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            self.err(file, where, field_path(e.absolute_path), e.message)
            ok = False
        return ok

    def pod_spec(self, file, where, spec, base):
        """Relations inside a pod spec that a schema cannot state. Returns a dict of facts."""
        volumes = {}
        for i, v in enumerate(spec.get("volumes", [])):
            if v["name"] in volumes:
                self.err(file, where, f"{base}.volumes[{i}].name",
                         f"volume name {v['name']!r} is used twice")
            volumes[v["name"]] = v
        names = set()
        used_volumes = set()
        for group in ("initContainers", "containers"):
            for i, c in enumerate(spec.get(group, [])):
                cbase = f"{base}.{group}[{i}]"
                if c["name"] in names:
                    self.err(file, where, f"{cbase}.name",
                             f"container name {c['name']!r} is used twice in the pod")
                names.add(c["name"])
                paths = set()
                for j, m in enumerate(c.get("volumeMounts", [])):
                    if m["name"] not in volumes:
                        self.err(file, where, f"{cbase}.volumeMounts[{j}].name",
                                 f"no volume named {m['name']!r} in {base}.volumes")
                    used_volumes.add(m["name"])
                    if m["mountPath"] in paths:
                        self.err(file, where, f"{cbase}.volumeMounts[{j}].mountPath",
                                 f"{m['mountPath']} is mounted twice")
                    paths.add(m["mountPath"])
                ports = {}
                for j, p in enumerate(c.get("ports", [])):
                    if "name" in p:
                        if p["name"] in ports:
                            self.err(file, where, f"{cbase}.ports[{j}].name",
                                     f"port name {p['name']!r} is used twice")
                        ports[p["name"]] = p["containerPort"]
                numbers = {p["containerPort"] for p in c.get("ports", [])}
                for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                    get = c.get(probe, {}).get("httpGet")
                    if get is None:
                        continue
                    port = get["port"]
                    if isinstance(port, str) and port not in ports:
                        self.err(file, where, f"{cbase}.{probe}.httpGet.port",
                                 f"no port named {port!r} in {cbase}.ports")
                    if isinstance(port, int) and port not in numbers:
                        self.err(file, where, f"{cbase}.{probe}.httpGet.port",
                                 f"port {port} is not one of {cbase}.ports")
                res = c.get("resources", {})
                for rname, limit in res.get("limits", {}).items():
                    request = res.get("requests", {}).get(rname)
                    lq, rq = quantity(limit), quantity(request)
                    if request is not None and lq is not None and rq is not None and rq > lq:
                        self.err(file, where, f"{cbase}.resources.requests.{rname}",
                                 f"request {request} is above the limit {limit}")
        for name in volumes:
            if name not in used_volumes:
                self.err(file, where, f"{base}.volumes",
                         f"volume {name!r} is mounted by no container")
        return {"volumes": volumes}

    @staticmethod
    def selector_matches(selector, labels):
        for k, v in selector.get("matchLabels", {}).items():
            if labels.get(k) != v:
                return False
        for e in selector.get("matchExpressions", []):
            has, value, values = e["key"] in labels, labels.get(e["key"]), e.get("values", [])
            if e["operator"] == "In" and value not in values:
                return False
            if e["operator"] == "NotIn" and has and value in values:
                return False
            if e["operator"] == "Exists" and not has:
                return False
            if e["operator"] == "DoesNotExist" and has:
                return False
        return True

    def objects(self, file):
        docs = self.bundle.get(file)
        if docs is None:
            return None
        kinds = [d.get("kind") if isinstance(d, dict) else None for d in docs]
        if kinds != EXPECTED_KINDS[file]:
            self.err(file, "file", "kind", f"holds {kinds}, expected {EXPECTED_KINDS[file]}")
        valid = [self.schema(file, d) for d in docs]
        if not all(valid):
            return None
        return {d["kind"]: d for d in docs}

    # -- per file -------------------------------------------------------------------------

    def runtimeclass(self):
        objs = self.objects(RUNTIMECLASS)
        if objs is None or "RuntimeClass" not in objs:
            return None
        rc = objs["RuntimeClass"]
        where = describe(rc)
        selector = rc.get("scheduling", {}).get("nodeSelector", {})
        if not selector:
            self.err(RUNTIMECLASS, where, "scheduling.nodeSelector",
                     "empty: pods of this class could land on nodes without corral")
        if not rc.get("overhead", {}).get("podFixed"):
            self.err(RUNTIMECLASS, where, "overhead.podFixed", "missing")
        self.checked.append(f"{RUNTIMECLASS}: {where}, handler {rc['handler']}")
        return rc

    def containerd_toml(self):
        text = self.bundle.get(CONTAINERD_TOML)
        if text is None:
            return None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.err(CONTAINERD_TOML, "TOML", "(parse)", str(exc))
            return None
        where = 'plugins."io.containerd.grpc.v1.cri"'
        runtimes = (doc.get("plugins", {}).get("io.containerd.grpc.v1.cri", {})
                    .get("containerd", {}).get("runtimes"))
        if not isinstance(runtimes, dict) or len(runtimes) != 1:
            self.err(CONTAINERD_TOML, where, "containerd.runtimes",
                     f"expected exactly one runtime table, found {runtimes!r}")
            return None
        (name, runtime), = runtimes.items()
        base = f"containerd.runtimes.{name}"
        if not re.match(DNS_LABEL, name):
            self.err(CONTAINERD_TOML, where, base, f"{name!r} is not a DNS label")
        if runtime.get("runtime_type") != "io.containerd.runc.v2":
            self.err(CONTAINERD_TOML, where, f"{base}.runtime_type",
                     f"{runtime.get('runtime_type')!r}, expected 'io.containerd.runc.v2'")
        extra = set(runtime) - {"runtime_type", "options"}
        if extra:
            self.err(CONTAINERD_TOML, where, base, f"unexpected keys {sorted(extra)}")
        options = runtime.get("options", {})
        binary = options.get("BinaryName")
        if not isinstance(binary, str) or not binary.startswith("/") or \
                os.path.basename(binary) != "corral-runc":
            self.err(CONTAINERD_TOML, where, f"{base}.options.BinaryName",
                     f"{binary!r}, expected an absolute path to corral-runc")
        if options.get("SystemdCgroup", False) is not False:
            self.err(CONTAINERD_TOML, where, f"{base}.options.SystemdCgroup",
                     f"{options.get('SystemdCgroup')!r}: the snippet leaves it false")
        extra = set(options) - {"BinaryName", "SystemdCgroup"}
        if extra:
            self.err(CONTAINERD_TOML, where, f"{base}.options", f"unexpected keys {sorted(extra)}")
        self.checked.append(f"{CONTAINERD_TOML}: runtime {name}, BinaryName {binary}")
        return {"handler": name, "binary": binary}

    def installer(self):
        objs = self.objects(INSTALLER)
        if objs is None or len(objs) != len(EXPECTED_KINDS[INSTALLER]):
            return None
        f = INSTALLER
        ns = objs["Namespace"]["metadata"]["name"]
        sa, cm, ds = objs["ServiceAccount"], objs["ConfigMap"], objs["DaemonSet"]
        role, binding = objs["ClusterRole"], objs["ClusterRoleBinding"]
        for o in (sa, cm, ds):
            if o["metadata"].get("namespace") != ns:
                self.err(f, describe(o), "metadata.namespace",
                         f"{o['metadata'].get('namespace')!r}, expected the file's "
                         f"Namespace {ns!r}")
        if cm["metadata"]["name"] != "corral-installer-script":
            self.err(f, describe(cm), "metadata.name", "expected 'corral-installer-script'")
        if ds["metadata"]["name"] != "corral-installer":
            self.err(f, describe(ds), "metadata.name", "expected 'corral-installer'")
        # RBAC: the binding grants the role to the service account; the role can get and
        # patch nodes.
        where = describe(binding)
        ref = binding["roleRef"]
        if (ref["apiGroup"], ref["kind"], ref["name"]) != \
                ("rbac.authorization.k8s.io", "ClusterRole", role["metadata"]["name"]):
            self.err(f, where, "roleRef", f"{ref} does not name {describe(role)}")
        if not any(s_.get("kind") == "ServiceAccount" and
                   s_.get("name") == sa["metadata"]["name"] and s_.get("namespace") == ns
                   for s_ in binding.get("subjects", [])):
            self.err(f, where, "subjects", f"does not bind {describe(sa)}")
        granted = set()
        for rule in role.get("rules", []):
            if "" in rule.get("apiGroups", []) and \
                    {"nodes", "*"} & set(rule.get("resources", [])):
                granted |= set(rule["verbs"])
        if not ({"get", "patch"} <= granted or "*" in granted):
            self.err(f, describe(role), "rules",
                     f"grants {sorted(granted)} on nodes; the installer needs get and patch")
        # The DaemonSet.
        where = describe(ds)
        spec = ds["spec"]
        tmpl = spec["template"]
        if not self.selector_matches(spec["selector"],
                                     tmpl.get("metadata", {}).get("labels", {})):
            self.err(f, where, "spec.selector",
                     "does not select spec.template.metadata.labels (the API rejects this)")
        pod = tmpl["spec"]
        facts = self.pod_spec(f, where, pod, "spec.template.spec")
        if pod.get("serviceAccountName") != sa["metadata"]["name"]:
            self.err(f, where, "spec.template.spec.serviceAccountName",
                     f"{pod.get('serviceAccountName')!r}, expected {sa['metadata']['name']!r}")
        if pod.get("hostPID") is not True:
            self.err(f, where, "spec.template.spec.hostPID",
                     "must be true: the script enters PID 1's namespaces with nsenter -t 1")
        inits = pod.get("initContainers", [])
        if len(inits) != 1:
            self.err(f, where, "spec.template.spec.initContainers", "expected one installer")
            return None
        init, ibase = inits[0], "spec.template.spec.initContainers[0]"
        if init.get("securityContext", {}).get("privileged") is not True:
            self.err(f, where, f"{ibase}.securityContext.privileged",
                     "must be true: nsenter into the host and writing host paths need it")
        env = {e["name"]: e for e in init.get("env", [])}
        node_name = env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {})
        if node_name.get("fieldPath") != "spec.nodeName":
            self.err(f, where, f"{ibase}.env",
                     "NODE_NAME must come from fieldRef spec.nodeName (the downward API)")
        values = {k: e.get("value") for k, e in env.items()}
        for name in ("HOST_ROOT", "CORRAL_HANDLER", "CORRAL_NODE_LABEL"):
            if not values.get(name):
                self.err(f, where, f"{ibase}.env", f"{name} is not set")
        # The script: a ConfigMap volume mounted in the init container; the command runs
        # a key of that ConfigMap from there.
        mounts = {m["name"]: m for m in init.get("volumeMounts", [])}
        script_dirs = [mounts[n]["mountPath"] for n, v in facts["volumes"].items()
                       if n in mounts and v.get("configMap", {}).get("name") ==
                       cm["metadata"]["name"]]
        script = cm.get("data", {}).get(INSTALLER_SCRIPT_KEY)
        if script is None:
            self.err(f, describe(cm), "data", f"no key {INSTALLER_SCRIPT_KEY!r}")
        runs = [a for a in init.get("command", []) + init.get("args", [])
                if any(a == f"{d}/{INSTALLER_SCRIPT_KEY}" for d in script_dirs)]
        if not runs:
            self.err(f, where, f"{ibase}.command",
                     f"does not run {INSTALLER_SCRIPT_KEY} from a mount of ConfigMap "
                     f"{cm['metadata']['name']!r} (mounted at {script_dirs})")
        # Host paths the script writes, as the init container sees them.
        host_root = values.get("HOST_ROOT", "")
        host_paths = {}
        for n, v in facts["volumes"].items():
            if "hostPath" in v:
                if n not in mounts:
                    self.err(f, where, f"{ibase}.volumeMounts",
                             f"hostPath volume {n!r} is not mounted in the installer")
                elif mounts[n]["mountPath"] != host_root + v["hostPath"]["path"]:
                    self.err(f, where, f"{ibase}.volumeMounts",
                             f"{n!r} is mounted at {mounts[n]['mountPath']}, expected "
                             f"HOST_ROOT + {v['hostPath']['path']}")
                elif mounts[n].get("readOnly"):
                    self.err(f, where, f"{ibase}.volumeMounts", f"{n!r} must be writable")
                host_paths[v["hostPath"]["path"]] = v["hostPath"].get("type", "")
        for path in ("/usr/local/bin", "/etc/containerd"):
            if path not in host_paths:
                self.err(f, where, "spec.template.spec.volumes",
                         f"no hostPath volume for {path}")
        if host_paths.get("/usr/local/bin") not in (None, "DirectoryOrCreate"):
            self.err(f, where, "spec.template.spec.volumes",
                     "hostPath /usr/local/bin: type must be DirectoryOrCreate")
        if script is not None:
            self.script_syntax(f, describe(cm), script)
        self.checked.append(f"{INSTALLER}: {', '.join(describe(o) for o in objs.values())}")
        return {"ds": ds, "env": values, "host_paths": host_paths, "script": script,
                "node_selector": pod.get("nodeSelector", {})}

    def script_syntax(self, file, where, script):
        with tempfile.NamedTemporaryFile("w", suffix=".sh") as t:
            t.write(script)
            t.flush()
            r = subprocess.run(["sh", "-n", t.name], capture_output=True, text=True)
        if r.returncode != 0:
            self.err(file, where, f"data.{INSTALLER_SCRIPT_KEY}",
                     f"sh -n fails: {r.stderr.strip().replace(t.name, INSTALLER_SCRIPT_KEY)}")

    def agent_sandbox(self):
        template = self.objects(TEMPLATE)
        pool = self.objects(WARMPOOL)
        claim = self.objects(CLAIM)
        if template is None or pool is None or claim is None:
            return None
        t, p, c = template["SandboxTemplate"], pool["SandboxWarmPool"], claim["SandboxClaim"]
        where = describe(t)
        pod = t["spec"]["podTemplate"]["spec"]
        base = "spec.podTemplate.spec"
        facts = self.pod_spec(TEMPLATE, where, pod, base)
        if not pod.get("runtimeClassName"):
            self.err(TEMPLATE, where, f"{base}.runtimeClassName", "not set")
        main, mbase = pod["containers"][0], f"{base}.containers[0]"
        command = main.get("command", []) + main.get("args", [])
        # corral comes from an emptyDir that an init container fills.
        program = command[0] if command else ""
        mounts = {m["mountPath"]: m for m in main.get("volumeMounts", [])}
        source = next((m for path, m in mounts.items() if program.startswith(path + "/")),
                      None)
        if source is None or "emptyDir" not in facts["volumes"].get(source["name"], {}):
            self.err(TEMPLATE, where, f"{mbase}.command",
                     f"{program!r} is not in an emptyDir volume mounted in the container")
        else:
            fillers = [i for i, ic in enumerate(pod.get("initContainers", []))
                       for m in ic.get("volumeMounts", [])
                       if m["name"] == source["name"] and not m.get("readOnly")
                       and m["mountPath"] in " ".join(ic.get("command", []) +
                                                      ic.get("args", []))]
            if not fillers:
                self.err(TEMPLATE, where, f"{base}.initContainers",
                         f"no init container copies into volume {source['name']!r}")
        if command[1:2] != ["serve"] or "--in-place" not in command:
            self.err(TEMPLATE, where, f"{mbase}.command",
                     "expected `corral serve --in-place --listen ADDR:PORT`")
        listen = command[command.index("--listen") + 1] if "--listen" in command[:-1] else ""
        m = re.match(r"^(.*):([0-9]+)$", listen)
        ports = {pt.get("name"): pt["containerPort"] for pt in main.get("ports", [])}
        if not m or int(m.group(2)) not in ports.values():
            self.err(TEMPLATE, where, f"{mbase}.command",
                     f"--listen {listen!r} is not on one of the container's ports "
                     f"{sorted(ports.values())}")
        probe = main.get("readinessProbe", {}).get("httpGet")
        if not probe or probe.get("path") != "/v1/health":
            self.err(TEMPLATE, where, f"{mbase}.readinessProbe.httpGet.path",
                     "expected an HTTP readiness probe on /v1/health")
        elif m and ports.get(probe["port"], probe["port"]) != int(m.group(2)):
            self.err(TEMPLATE, where, f"{mbase}.readinessProbe.httpGet.port",
                     f"{probe['port']!r} is not the --listen port {m.group(2)}")
        for kind in ("requests", "limits"):
            for r in ("cpu", "memory"):
                if r not in main.get("resources", {}).get(kind, {}):
                    self.err(TEMPLATE, where, f"{mbase}.resources.{kind}.{r}", "not set")
        # References: claim -> pool -> template, all in one namespace.
        if p["spec"]["sandboxTemplateRef"]["name"] != t["metadata"]["name"]:
            self.err(WARMPOOL, describe(p), "spec.sandboxTemplateRef.name",
                     f"{p['spec']['sandboxTemplateRef']['name']!r} is not the template "
                     f"{t['metadata']['name']!r} ({TEMPLATE})")
        if c["spec"]["warmPoolRef"]["name"] != p["metadata"]["name"]:
            self.err(CLAIM, describe(c), "spec.warmPoolRef.name",
                     f"{c['spec']['warmPoolRef']['name']!r} is not the warm pool "
                     f"{p['metadata']['name']!r} ({WARMPOOL})")
        namespaces = {o["metadata"].get("namespace") for o in (t, p, c)}
        if len(namespaces) > 1:
            self.err(TEMPLATE, where, "metadata.namespace",
                     f"template, warm pool and claim are in different namespaces {namespaces}")
        self.checked.append(f"{TEMPLATE}: {where}, runtimeClassName "
                            f"{pod.get('runtimeClassName')}")
        self.checked.append(f"{WARMPOOL}: {describe(p)}, {p['spec'].get('replicas', 1)} "
                            f"replicas of {p['spec']['sandboxTemplateRef']['name']}")
        self.checked.append(f"{CLAIM}: {describe(c)}, from {c['spec']['warmPoolRef']['name']}")
        return {"template": t}

    # -- across files ---------------------------------------------------------------------

    def run(self, dry_run=True):
        rc = self.runtimeclass()
        toml = self.containerd_toml()
        inst = self.installer()
        sandbox = self.agent_sandbox()
        if rc and toml and rc["handler"] != toml["handler"]:
            self.err(RUNTIMECLASS, describe(rc), "handler",
                     f"{rc['handler']!r} is not the runtime {toml['handler']!r} in "
                     f"{CONTAINERD_TOML}")
        if rc and inst:
            ds = describe(inst["ds"])
            if inst["env"].get("CORRAL_HANDLER") != rc["handler"]:
                self.err(INSTALLER, ds, "CORRAL_HANDLER",
                         f"{inst['env'].get('CORRAL_HANDLER')!r} is not the RuntimeClass "
                         f"handler {rc['handler']!r} ({RUNTIMECLASS})")
            label = inst["env"].get("CORRAL_NODE_LABEL") or ""
            key, _, value = label.partition("=")
            selector = rc.get("scheduling", {}).get("nodeSelector", {})
            if selector != {key: value}:
                self.err(INSTALLER, ds, "CORRAL_NODE_LABEL",
                         f"the installer labels nodes {label!r} but the RuntimeClass selects "
                         f"{selector} ({RUNTIMECLASS} scheduling.nodeSelector)")
            if key in inst["node_selector"]:
                self.err(INSTALLER, ds, "spec.template.spec.nodeSelector",
                         f"selects {key}, the label the installer itself sets: it would "
                         "never run on a new node")
        if toml and inst:
            binary_dir = os.path.dirname(toml["binary"])
            if binary_dir not in inst["host_paths"]:
                self.err(CONTAINERD_TOML, "BinaryName", toml["binary"],
                         f"{binary_dir} is not a hostPath the installer writes "
                         f"({sorted(inst['host_paths'])})")
            m = re.search(r"^BIN_DIR=(\S+)$", inst["script"] or "", re.M)
            if not m or m.group(1) != binary_dir:
                self.err(INSTALLER, "ConfigMap corral-installer-script",
                         f"data.{INSTALLER_SCRIPT_KEY}: BIN_DIR",
                         f"{m.group(1) if m else None!r}, expected {binary_dir} "
                         f"(BinaryName in {CONTAINERD_TOML})")
        if rc and sandbox:
            name = sandbox["template"]["spec"]["podTemplate"]["spec"].get("runtimeClassName")
            if name != rc["metadata"]["name"]:
                self.err(TEMPLATE, describe(sandbox["template"]),
                         "spec.podTemplate.spec.runtimeClassName",
                         f"{name!r} is not the RuntimeClass {rc['metadata']['name']!r} "
                         f"({RUNTIMECLASS})")
        if dry_run and inst and inst["script"] and not self.errors:
            failures, count = installer_dry_run(inst["script"], inst["env"])
            for failure in failures:
                self.err(INSTALLER, "ConfigMap corral-installer-script",
                         f"data.{INSTALLER_SCRIPT_KEY}", f"dry run: {failure}")
            if not failures:
                self.checked.append(f"{INSTALLER}: {INSTALLER_SCRIPT_KEY}: {count} dry-run "
                                    "scenarios on a fake host passed")
        return self.errors


# ---------------------------------------------------------------------------------------
# The installer script against a fake host: the host's directories under a temporary
# HOST_ROOT, nsenter and kubectl replaced by stubs that log what they were asked to do.
# The stubbed `containerd config dump` parses the resulting config with tomllib.

NSENTER_STUB = r"""#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
echo "$*" >>"$STUB_LOG"
case "$1" in
  systemctl)
    [ "$2" = cat ] && exit "${STUB_NO_CONTAINERD:-0}"
    exit 0 ;;
  containerd)
    [ -n "${STUB_DUMP_FAILS:-}" ] && exit 1
    exec "$STUB_PYTHON" -c 'import sys, tomllib, glob
root, cfg = sys.argv[1], sys.argv[2]
for path in [root + cfg] + sorted(glob.glob(root + "/etc/containerd/conf.d/*.toml")):
    tomllib.load(open(path, "rb"))' "$HOST_ROOT" "$3" ;;
  /*)
    program=$1
    shift
    exec "$HOST_ROOT$program" "$@" ;;
esac
exit 99
"""
KUBECTL_STUB = '#!/bin/sh\necho "kubectl $*" >>"$STUB_LOG"\n'
FAKE_PROGRAM = '#!/bin/sh\necho "fake {name} $*"\n'


def installer_dry_run(script, env_values):
    """Runs the script in scenarios; returns ([failures], number of scenarios)."""
    failures = []
    handler = env_values.get("CORRAL_HANDLER", "corral")
    label = env_values.get("CORRAL_NODE_LABEL", "")
    work = tempfile.mkdtemp(prefix="corral-installer-dry-run.")
    try:
        stubs = os.path.join(work, "stubs")
        os.makedirs(stubs)
        for name, text in (("nsenter", NSENTER_STUB), ("kubectl", KUBECTL_STUB)):
            with open(os.path.join(stubs, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(stubs, name), 0o755)
        src = os.path.join(work, "src")
        for rel in ("bin/corral", "bin/corral-runc", "libexec/corral/corral-cli",
                    "libexec/corral/corral-init", "libexec/corral/corral-netproxy"):
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "w") as f:
                f.write(FAKE_PROGRAM.format(name=os.path.basename(rel)))
            os.chmod(os.path.join(src, rel), 0o755)
        script_path = os.path.join(work, "install.sh")
        with open(script_path, "w") as f:
            f.write(script)

        def new_host(config=None, dropin_dir=False):
            host = tempfile.mkdtemp(dir=work, prefix="host.")
            for d in ("usr/local/bin", "usr/local/libexec/corral", "etc/containerd"):
                os.makedirs(os.path.join(host, d))
            if dropin_dir:
                os.makedirs(os.path.join(host, "etc/containerd/conf.d"))
            if config is not None:
                with open(os.path.join(host, "etc/containerd/config.toml"), "w") as f:
                    f.write(config)
            return host

        def run(host, **extra):
            log = os.path.join(host, "stub.log")
            open(log, "w").close()
            env = {"PATH": stubs + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
                   "HOST_ROOT": host, "CORRAL_SRC": src, "NODE_NAME": "node-1",
                   "CORRAL_HANDLER": handler, "CORRAL_NODE_LABEL": label,
                   "STUB_LOG": log, "STUB_PYTHON": sys.executable}
            env.update(extra)
            r = subprocess.run(["sh", script_path], env=env, capture_output=True,
                               text=True, timeout=60)
            with open(log) as f:
                calls = f.read()
            return r, calls

        def read(host, rel):
            with open(os.path.join(host, rel)) as f:
                return f.read()

        def runtime_of(host, rel="etc/containerd/config.toml",
                       plugin="io.containerd.grpc.v1.cri"):
            doc = tomllib.loads(read(host, rel))
            return doc["plugins"][plugin]["containerd"]["runtimes"][handler]

        def expect(name, cond, r, detail=""):
            if not cond:
                out = (r.stdout + r.stderr).strip().replace("\n", " | ")[-400:]
                failures.append(f"{name}: {detail} (exit {r.returncode}; output: {out})")

        want_binary = "/usr/local/bin/corral-runc"
        restart = "systemctl restart containerd"
        label_call = f"kubectl label node node-1 {label} --overwrite"

        # 1. A node without config.toml: one is written, containerd restarted, node labelled.
        host = new_host()
        r, calls = run(host)
        ok = r.returncode == 0
        expect("no config.toml", ok, r, "the script failed")
        if ok:
            rt = runtime_of(host)
            expect("no config.toml", rt["options"]["BinaryName"] == want_binary and
                   rt["runtime_type"] == "io.containerd.runc.v2", r, f"wrote {rt}")
            expect("no config.toml", restart in calls, r, "containerd was not restarted")
            expect("no config.toml", label_call in calls, r, "the node was not labelled")
            for rel in ("usr/local/bin/corral-runc", "usr/local/bin/corral",
                        "usr/local/libexec/corral/corral-init"):
                path = os.path.join(host, rel)
                expect("no config.toml", os.access(path, os.X_OK), r, f"{rel} not installed")
            # 2. Again: nothing changes, no restart.
            before = read(host, "etc/containerd/config.toml")
            r, calls = run(host)
            expect("second run", r.returncode == 0, r, "the script failed")
            expect("second run", restart not in calls, r, "containerd restarted again")
            expect("second run", read(host, "etc/containerd/config.toml") == before, r,
                   "config.toml changed")
            expect("second run", label_call in calls, r, "the node was not labelled")
            # 3. The cgroup driver changes: the managed block is replaced, not added again.
            r, calls = run(host, CORRAL_SYSTEMD_CGROUP="true")
            text = read(host, "etc/containerd/config.toml")
            expect("SystemdCgroup change", r.returncode == 0 and restart in calls and
                   text.count("# BEGIN corral-installer") == 1 and
                   runtime_of(host)["options"]["SystemdCgroup"] is True, r,
                   "the managed block was not replaced once")

        # 4. An existing version 2 config (no newline at its end): the handler is appended,
        # the rest kept, a backup left.
        existing = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]'
                    '\n  runtime_type = "io.containerd.runc.v2"\n[plugins."io.containerd.grpc.v1'
                    '.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true')
        host = new_host(existing)
        r, calls = run(host)
        ok = r.returncode == 0
        expect("existing config", ok, r, "the script failed")
        if ok:
            doc = tomllib.loads(read(host, "etc/containerd/config.toml"))
            runtimes = doc["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
            expect("existing config", runtimes.get("runc", {}).get("options") ==
                   {"SystemdCgroup": True} and handler in runtimes, r, f"result {runtimes}")
            expect("existing config", read(host, "etc/containerd/config.toml.corral-backup")
                   == existing, r, "no backup of the original")
            expect("existing config", restart in calls, r, "containerd was not restarted")

        # 5. A config that imports conf.d: a drop-in, the main config untouched.
        imports = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
        host = new_host(imports, dropin_dir=True)
        r, calls = run(host)
        ok = r.returncode == 0
        expect("imports conf.d", ok, r, "the script failed")
        if ok:
            expect("imports conf.d",
                   read(host, "etc/containerd/config.toml") == imports and
                   runtime_of(host, f"etc/containerd/conf.d/{handler}.toml")["options"]
                   ["BinaryName"] == want_binary and restart in calls, r,
                   "no drop-in, or config.toml changed")

        # 6. The handler already defined by hand: left alone, no restart, node labelled.
        by_hand = (f'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.'
                   f'{handler}]\n  runtime_type = "io.containerd.runc.v2"\n')
        host = new_host(by_hand)
        r, calls = run(host)
        expect("defined by hand", r.returncode == 0 and restart not in calls and
               read(host, "etc/containerd/config.toml") == by_hand and label_call in calls,
               r, "the hand-written handler was touched, or containerd restarted")

        # 7. containerd 2.x (version = 3): the CRI runtime plugin's new name.
        host = new_host("version = 3\n")
        r, calls = run(host)
        ok = r.returncode == 0
        expect("version 3", ok, r, "the script failed")
        if ok:
            rt = runtime_of(host, plugin="io.containerd.cri.v1.runtime")
            expect("version 3", rt["options"]["BinaryName"] == want_binary, r, f"wrote {rt}")

        # 8. A version 1 config (no version line): refused, nothing written or restarted.
        v1 = '[plugins.cri]\n  sandbox_image = "pause"\n'
        host = new_host(v1)
        r, calls = run(host)
        expect("version 1 config", r.returncode != 0 and "version" in r.stderr and
               read(host, "etc/containerd/config.toml") == v1 and restart not in calls and
               "kubectl" not in calls, r, "a version 1 config was not refused")

        # 9. containerd rejects the new config: the old one is restored, no restart, no label.
        host = new_host(existing + "\n")
        r, calls = run(host, STUB_DUMP_FAILS="1")
        expect("config rejected", r.returncode != 0 and
               read(host, "etc/containerd/config.toml") == existing + "\n" and
               restart not in calls and "kubectl" not in calls, r,
               "a rejected config was not rolled back")

        # 10. No containerd on the node: refused before anything is written.
        host = new_host()
        r, calls = run(host, STUB_NO_CONTAINERD="1")
        expect("no containerd", r.returncode != 0 and
               not os.listdir(os.path.join(host, "usr/local/bin")) and
               not os.path.exists(os.path.join(host, "etc/containerd/config.toml")), r,
               "went on without containerd")
        return failures, 10
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Self-test: broken copies must fail, each with the file and field named.


def _script_edit(bundle, old, new):
    cm = next(d for d in bundle[INSTALLER] if d.get("kind") == "ConfigMap")
    text = cm["data"][INSTALLER_SCRIPT_KEY]
    if old not in text:
        raise AssertionError(f"self-test: {old!r} is not in the script")
    cm["data"][INSTALLER_SCRIPT_KEY] = text.replace(old, new, 1)


def _ds(bundle):
    return next(d for d in bundle[INSTALLER] if d.get("kind") == "DaemonSet")


def _init_env(bundle, name, value):
    for e in _ds(bundle)["spec"]["template"]["spec"]["initContainers"][0]["env"]:
        if e["name"] == name:
            e["value"] = value
            return
    raise AssertionError(f"self-test: no env {name}")


def _template_pod(bundle):
    return bundle[TEMPLATE][0]["spec"]["podTemplate"]["spec"]


def _rename(d, old, new):
    d[new] = d.pop(old)


MUTATIONS = [
    ("a misspelt field in the template's container (readinesProbe)",
     lambda b: _rename(_template_pod(b)["containers"][0], "readinessProbe", "readinesProbe"),
     [TEMPLATE, "'readinesProbe' was unexpected"]),
    ("a misspelt RuntimeClass field (overhead.podfixed)",
     lambda b: _rename(b[RUNTIMECLASS][0]["overhead"], "podFixed", "podfixed"),
     [RUNTIMECLASS, "overhead", "'podfixed' was unexpected"]),
    ("a misspelt warm pool field (templateRef)",
     lambda b: _rename(b[WARMPOOL][0]["spec"], "sandboxTemplateRef", "templateRef"),
     [WARMPOOL, "spec"]),
    ("a wrong handler in the RuntimeClass",
     lambda b: b[RUNTIMECLASS][0].__setitem__("handler", "corral-runc"),
     [RUNTIMECLASS, "handler", CONTAINERD_TOML]),
    ("a handler that is not a DNS label",
     lambda b: b[RUNTIMECLASS][0].__setitem__("handler", "Corral_1"),
     [RUNTIMECLASS, "handler", "does not match"]),
    ("a wrong runtime name in containerd-corral.toml",
     lambda b: b.__setitem__(CONTAINERD_TOML, b[CONTAINERD_TOML].replace(
         "runtimes.corral", "runtimes.korral")),
     [RUNTIMECLASS, "handler", "korral"]),
    ("a bad quantity in the RuntimeClass overhead (2MB)",
     lambda b: b[RUNTIMECLASS][0]["overhead"]["podFixed"].__setitem__("memory", "2MB"),
     [RUNTIMECLASS, "overhead.podFixed.memory", "'2MB'"]),
    ("a bad quantity in the template's limits (1 Gi)",
     lambda b: _template_pod(b)["containers"][0]["resources"]["limits"].__setitem__(
         "memory", "1 Gi"),
     [TEMPLATE, "resources.limits.memory"]),
    ("a request above its limit",
     lambda b: _template_pod(b)["containers"][0]["resources"]["requests"].__setitem__(
         "memory", "2Gi"),
     [TEMPLATE, "resources.requests.memory", "above the limit"]),
    ("an unquoted label value (a YAML boolean)",
     lambda b: b[RUNTIMECLASS][0]["scheduling"]["nodeSelector"].__setitem__(
         "corral.dev/runtime", True),
     [RUNTIMECLASS, "scheduling.nodeSelector.corral.dev/runtime", "not of type 'string'"]),
    ("a DaemonSet selector that does not select its template",
     lambda b: _ds(b)["spec"]["selector"]["matchLabels"].__setitem__(
         "app.kubernetes.io/name", "corral-installr"),
     [INSTALLER, "spec.selector", "does not select"]),
    ("a volumeMount naming no volume",
     lambda b: _ds(b)["spec"]["template"]["spec"]["initContainers"][0]["volumeMounts"][1]
     .__setitem__("name", "host-bin-typo"),
     [INSTALLER, "volumeMounts[1].name", "host-bin-typo"]),
    ("an installer that is not privileged",
     lambda b: _ds(b)["spec"]["template"]["spec"]["initContainers"][0]["securityContext"]
     .__setitem__("privileged", False),
     [INSTALLER, "securityContext.privileged"]),
    ("an installer without hostPID",
     lambda b: _ds(b)["spec"]["template"]["spec"].__setitem__("hostPID", False),
     [INSTALLER, "hostPID"]),
    ("an installer labelling nodes differently from the RuntimeClass's selector",
     lambda b: _init_env(b, "CORRAL_NODE_LABEL", "corral.dev/installed=true"),
     [INSTALLER, "CORRAL_NODE_LABEL", RUNTIMECLASS]),
    ("an installer selecting the label it sets",
     lambda b: _ds(b)["spec"]["template"]["spec"]["nodeSelector"].__setitem__(
         "corral.dev/runtime", "true"),
     [INSTALLER, "nodeSelector", "never run"]),
    ("an installer with another handler",
     lambda b: _init_env(b, "CORRAL_HANDLER", "corral2"),
     [INSTALLER, "CORRAL_HANDLER"]),
    ("a ClusterRole that cannot patch nodes",
     lambda b: next(d for d in b[INSTALLER] if d.get("kind") == "ClusterRole")["rules"][0]
     .__setitem__("verbs", ["get"]),
     [INSTALLER, "ClusterRole", "get and patch"]),
    ("an installer script that sh -n rejects",
     lambda b: _script_edit(b, "set -eu\n", "set -eu\nif then\n"),
     [INSTALLER, "install.sh", "sh -n"]),
    ("BinaryName outside the directory the installer writes",
     lambda b: b.__setitem__(CONTAINERD_TOML, b[CONTAINERD_TOML].replace(
         '"/usr/local/bin/corral-runc"', '"/opt/corral/bin/corral-runc"')),
     [CONTAINERD_TOML, "/opt/corral/bin"]),
    ("the template's runtimeClassName not the RuntimeClass",
     lambda b: _template_pod(b).__setitem__("runtimeClassName", "gvisor"),
     [TEMPLATE, "runtimeClassName", "'gvisor'"]),
    ("the warm pool naming another template",
     lambda b: b[WARMPOOL][0]["spec"]["sandboxTemplateRef"].__setitem__("name", "other"),
     [WARMPOOL, "sandboxTemplateRef.name", "'other'"]),
    ("the claim naming another warm pool",
     lambda b: b[CLAIM][0]["spec"]["warmPoolRef"].__setitem__("name", "other-pool"),
     [CLAIM, "warmPoolRef.name", "'other-pool'"]),
    ("the deprecated v1alpha1 API on the claim",
     lambda b: b[CLAIM][0].__setitem__("apiVersion", "extensions.agents.x-k8s.io/v1alpha1"),
     [CLAIM, "apiVersion"]),
    ("a readiness probe on a port the container does not declare",
     lambda b: _template_pod(b)["containers"][0]["readinessProbe"]["httpGet"].__setitem__(
         "port", "metrics"),
     [TEMPLATE, "readinessProbe.httpGet.port", "'metrics'"]),
    ("a template without an init container filling /opt/corral",
     lambda b: _template_pod(b).__setitem__("initContainers", []),
     [TEMPLATE, "initContainers"]),
]

# Broken scripts that still pass sh -n: the dry run must catch them.
SCRIPT_MUTATIONS = [
    ("a script that never restarts containerd",
     ("  on_host systemctl restart containerd\n", "  :\n"), "containerd was not restarted"),
    ("a script that appends the handler on every run",
     ('    if [ "$have" = "$want" ]; then', '    if false; then'), "containerd restarted again"),
    ("a script that labels before checking containerd's config",
     ("if $changed; then\n  if ! on_host containerd",
      'kubectl label node "$NODE_NAME" "$NODE_LABEL" --overwrite\nif $changed; then\n'
      '  if ! on_host containerd'), "rolled back"),
]


def self_test(directory):
    bundle, errors = load_bundle(directory)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    clean = Checker(copy.deepcopy(bundle)).run(dry_run=False)
    if clean:
        print("self-test: the manifests themselves fail; run without --self-test first",
              file=sys.stderr)
        print("\n".join(clean), file=sys.stderr)
        return 1
    failed = 0
    for name, mutate, expected in MUTATIONS:
        broken = copy.deepcopy(bundle)
        mutate(broken)
        errs = Checker(broken).run(dry_run=False)
        hit = [e for e in errs if all(x in e for x in expected)]
        if hit:
            print(f"caught: {name}: {hit[0]}")
        else:
            failed += 1
            print(f"MISSED: {name}: expected an error with {expected}; got {errs}",
                  file=sys.stderr)
    cm = next(d for d in bundle[INSTALLER] if d.get("kind") == "ConfigMap")
    env = Checker(copy.deepcopy(bundle)).installer()["env"]
    for name, (old, new), expected in SCRIPT_MUTATIONS:
        script = cm["data"][INSTALLER_SCRIPT_KEY]
        if old not in script:
            failed += 1
            print(f"MISSED: {name}: self-test edit {old!r} not in the script", file=sys.stderr)
            continue
        failures, _ = installer_dry_run(script.replace(old, new, 1), env)
        hit = [f for f in failures if expected in f]
        if hit:
            print(f"caught: {name}: {INSTALLER}: data.{INSTALLER_SCRIPT_KEY}: dry run: "
                  f"{hit[0][:160]}")
        else:
            failed += 1
            print(f"MISSED: {name}: expected a dry-run failure with {expected!r}; got "
                  f"{failures}", file=sys.stderr)
    # A key given twice (kubectl refuses it; a plain YAML load keeps the last one).
    try:
        yaml.load("handler: corral\nhandler: runc\n", Loader=UniqueKeyLoader)
        failed += 1
        print("MISSED: a duplicate key: the loader accepted it", file=sys.stderr)
    except yaml.YAMLError as exc:
        print(f"caught: a duplicate key: {str(exc).splitlines()[-2].strip()}")
    total = len(MUTATIONS) + len(SCRIPT_MUTATIONS) + 1
    print(f"self-test: {total - failed} of {total} broken copies caught")
    return 1 if failed else 0


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    directory = args[0]
    if "--self-test" in argv:
        return self_test(directory)
    bundle, errors = load_bundle(directory)
    checker = Checker(bundle)
    errors += checker.run()
    for line in checker.checked:
        print(f"checked: {line}")
    if errors:
        for e in errors:
            print(f"FAIL: {e}", file=sys.stderr)
        print(f"check_kubernetes_manifests: {len(errors)} problem(s) in {directory}",
              file=sys.stderr)
        return 1
    print(f"check_kubernetes_manifests: {directory}: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
