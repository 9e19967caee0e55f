"""Running the harness inside the cluster under test, like Sonobuoy or Hydrophone.

- `manifests()`: Namespace, ServiceAccount, a least-privilege ClusterRole + binding (exactly what
  the non-destructive suites, the preflight and the cleanup call: no Secrets, no `*`, no
  escalate/bind/impersonate, nothing on RBAC objects), a Role for the results ConfigMaps in the
  runner's own namespace, a ValidatingAdmissionPolicy that narrows every write the ClusterRole
  grants to what the runs create (namespaces and cluster-scoped Kueue objects labelled
  `lwsc.x-k8s.io/run`, namespaced objects only inside such namespaces), and a Job running
  `lwsc run --in-cluster` followed by `lwsc publish`;
- the results as ConfigMaps (`results_configmaps()` / `assemble()`): the run's archive in parts of
  at most `PART_BYTES`, then an index ConfigMap (exit code, conclusion, sha256), created last, so
  an index means a complete set; they outlive the pod, for as long as the namespace exists;
- `progress()`: how far the suites are, read from the pod's log (pytest's `[ NN%]` marks);
- `kubeconfig_from_pod()`: the client from in-cluster config (the pod's ServiceAccount token
  and CA), written as a kubeconfig the existing-cluster path adopts;
- `sonobuoy_plugin()`: the same run as a Sonobuoy plugin handing back the whole run directory and
  its archive as one tarball (junit results processed from it).

The RBAC and the admission policy are proven on the real apiserver by
tests/e2e/test_incluster_rbac.py.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "lwsc-system"
NAME = "lwsc-conformance"
RESULTS = "/results"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
RUN_LABEL = "lwsc.x-k8s.io/run"  # = k8s.objects.RUN_LABEL: what every object of a run carries
RESULTS_LABEL = "lwsc.x-k8s.io/results"  # value: the run id, on every results ConfigMap
INDEX_LABEL = "lwsc.x-k8s.io/results-index"  # "true" on the index ConfigMap of a run
PART_BYTES = 768 * 1024  # a ConfigMap holds at most 1 MiB
ALL_RW = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
WRITES = ("create", "update", "patch", "delete")
FORBIDDEN_VERBS = ("*", "escalate", "bind", "impersonate")

# (apiGroup, resources, verbs): what the suites (non-destructive), preflight and cleanup call.
# Every write here is narrowed by the admission policy (`admission_policy`) to what a run created.
RULES: list[tuple[str, list[str], list[str]]] = [
    ("", ["namespaces"], ["get", "list", "watch", "create", "delete"]),  # one per test, labelled with the run
    ("", ["pods"], ["get", "list", "watch", "create", "patch", "delete"]),  # create: server-side dry-run probes
    ("", ["pods/status"], ["get", "patch"]),  # tests report readiness or failure as a kubelet would
    ("", ["services"], ["get", "list", "watch", "delete"]),
    ("", ["persistentvolumeclaims"], READ),  # the volume-claim-template tests read the claims LWS made
    ("", ["resourcequotas"], [*READ, "create", "delete"]),  # a pod quota holds a rollout's new groups back
    ("", ["events"], READ),
    ("events.k8s.io", ["events"], READ),  # the restart-policy tests read container restarts from events
    ("", ["nodes"], READ),  # topology labels, capacity (preflight)
    ("", ["configmaps"], ["get"]),  # the controllers' manager config: feature gates (preflight), Kueue's integrations
    ("apps", ["statefulsets"], ["get", "list", "watch", "delete"]),  # self-healing deletes one
    ("batch", ["jobs"], ["get", "create"]),  # a Job as a Pod's controller (KUEUE-PLAINPOD-005)
    ("apps", ["controllerrevisions"], READ),
    ("apps", ["deployments"], READ),  # preflight: controller images (versions)
    ("apiextensions.k8s.io", ["customresourcedefinitions"], ["get", "list"]),
    ("admissionregistration.k8s.io", ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], READ),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets"], ALL_RW),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets/scale"], ["get", "update", "patch"]),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets/status"], ["get"]),
    ("disaggregatedset.x-k8s.io", ["disaggregatedsets"], ALL_RW),
    ("disaggregatedset.x-k8s.io", ["disaggregatedsets/status"], ["get"]),
    (
        "kueue.x-k8s.io",
        ["clusterqueues", "localqueues", "resourceflavors", "topologies", "workloads", "workloadpriorityclasses"],
        ALL_RW,
    ),
    ("kueue.x-k8s.io", ["workloads/status", "clusterqueues/status", "localqueues/status"], ["get"]),
]
# In the runner's own namespace only (a Role): the results ConfigMaps `lwsc publish` writes.
OWN_RULES: list[tuple[str, list[str], list[str]]] = [("", ["configmaps"], ["get", "list", "create"])]


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME}


def _rules(rules: list[tuple[str, list[str], list[str]]]) -> list[dict[str, Any]]:
    return [{"apiGroups": [g], "resources": list(r), "verbs": list(v)} for g, r, v in rules]


def cluster_role(name: str = NAME) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": _labels()},
        "rules": _rules(RULES),
    }


def service_account_user(namespace: str, name: str = NAME) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def written() -> list[tuple[str, list[str]]]:
    """(apiGroup, resources) of every rule that grants a write: what the admission policy covers."""
    return [(g, list(r)) for g, r, v in RULES if any(w in v for w in WRITES)]


def admission_policy(namespace: str, name: str = NAME) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1, Kubernetes
    >= 1.30) that hold the runner's ServiceAccount to what its runs create: a namespace or a
    cluster-scoped object only when it carries the run label (before and after the change), any
    other object only inside a namespace carrying it. RBAC cannot say "only what you created";
    the run label is what every object of a run carries and what cleanup deletes by."""
    mark = f"'{RUN_LABEL}'"

    def marked(obj: str) -> str:
        return f"{obj} != null && has({obj}.metadata.labels) && {mark} in {obj}.metadata.labels"

    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "resources": resources,
                    }
                    for group, resources in written()
                ]
            },
            "matchConditions": [
                {
                    "name": "the-runner",
                    "expression": f"request.userInfo.username == '{service_account_user(namespace)}'",
                }
            ],
            "variables": [
                {
                    "name": "clusterScoped",
                    "expression": "request.resource.resource == 'namespaces' || !has(request.namespace)"
                    " || request.namespace == ''",
                },
                {"name": "newMarked", "expression": marked("object")},
                {"name": "oldMarked", "expression": marked("oldObject")},
                {"name": "namespaceMarked", "expression": marked("namespaceObject")},
            ],
            "validations": [
                {
                    "expression": "!variables.clusterScoped || (request.operation == 'CREATE' ? variables.newMarked"
                    " : request.operation == 'DELETE' ? variables.oldMarked"
                    " : variables.oldMarked && variables.newMarked)",
                    "messageExpression": f"'{name} changes only namespaces and cluster-scoped objects labelled "
                    f"{RUN_LABEL} (created by its runs), not ' + request.resource.resource"
                    " + ' ' + (has(request.name) ? request.name : '')",
                    "reason": "Forbidden",
                },
                {
                    "expression": "variables.clusterScoped || variables.namespaceMarked",
                    "messageExpression": f"'{name} changes objects only in namespaces labelled {RUN_LABEL} "
                    "(created by its runs), not in ' + request.namespace",
                    "reason": "Forbidden",
                },
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def job(image: str, namespace: str, run_args: list[str]) -> dict[str, Any]:
    """The Job: runs the suites, then `lwsc publish` stores the results archive as ConfigMaps of
    its namespace and the pod ends with the run's exit code. Nothing waits in the pod: the results
    outlive it, `lwsc retrieve` reads them whenever it is called. The run's arguments are passed
    to the shell as positional parameters, never spliced into the script."""
    script = (
        f'lwsc run --in-cluster --reports {RESULTS} "$@"; rc=$?; '
        f'lwsc publish --reports {RESULTS} --exit-code "$rc" || rc=3; exit "$rc"'
    )
    container = {
        "name": "lwsc",
        "image": image,
        "command": ["sh", "-c", script, "lwsc", *run_args],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
        "volumeMounts": [{"name": "results", "mountPath": RESULTS}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": NAME, "namespace": namespace, "labels": _labels()},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": _labels()},
                "spec": {
                    "serviceAccountName": NAME,
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "results", "emptyDir": {}}],
                },
            },
        },
    }


def manifests(image: str, namespace: str = NAMESPACE, run_args: list[str] | None = None) -> list[dict[str, Any]]:
    meta = {"name": NAME, "namespace": namespace, "labels": _labels()}
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": NAME, "labels": _labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": subject,
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": dict(meta),
        "rules": _rules(OWN_RULES),
    }
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": NAME, "namespace": namespace, "labels": _labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
        "subjects": [dict(s) for s in subject],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": _labels()}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "labels": _labels()}},
        cluster_role(),
        binding,
        role,
        role_binding,
        *admission_policy(namespace),
        job(image, namespace, run_args or []),
    ]


SONOBUOY_SCRIPT = (
    'out=/tmp/lwsc; dir="${SONOBUOY_RESULTS_DIR:-/tmp/sonobuoy/results}"; mkdir -p "$out"; '
    'lwsc run --in-cluster --reports "$out" "$@"; echo "$?" > "$out/exit-code"; '
    'tar -C "$out" -czf "$dir/lwsc-results.tar.gz" .; '
    'printf %s "$dir/lwsc-results.tar.gz" > "$dir/done"'
)


def sonobuoy_plugin(image: str, run_args: list[str] | None = None) -> dict[str, Any]:
    """A Sonobuoy plugin definition (Job driver, junit results): it hands back the whole reports
    directory — the run directory (junit_01.xml, summary, PRODUCT.yaml, HTML, logs), the run's
    checksummed archive and the exit code — as one tarball named in Sonobuoy's `done` file;
    Sonobuoy extracts it and reads the junit file from it. A run that ends before writing any
    report (a usage error) still hands back its exit code, so Sonobuoy never waits on a missing
    file. Proven under Sonobuoy v0.57.5 on kind by scripts/sonobuoy-kind."""
    return {
        "sonobuoy-config": {
            "driver": "Job",
            "plugin-name": "lws-conformance",
            "result-format": "junit",
            "description": "LeaderWorkerSet / Kueue conformance (lws-conformance)",
        },
        "spec": {
            "name": "plugin",
            "image": image,
            "command": ["sh", "-c", SONOBUOY_SCRIPT, "lwsc", *(run_args or [])],
            "env": [{"name": "HOME", "value": "/tmp"}],
            "volumeMounts": [{"name": "results", "mountPath": "/tmp/sonobuoy/results"}],
        },
    }


class _PlainDumper(yaml.SafeDumper):
    """YAML a reviewer reads top to bottom: no `&id001` anchors or `*id001` aliases, even where two
    documents share a Python object."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_PlainDumper, sort_keys=False, width=120)


def kubeconfig_from_pod(out: Path, sa_dir: Path = SA_DIR, env: dict[str, str] | None = None) -> Path:
    """A kubeconfig for the pod's own ServiceAccount (in-cluster config): the API server from
    KUBERNETES_SERVICE_HOST/PORT, its CA and the projected token file (re-read by the client).
    ValueError names what is missing when this is not running in a pod."""
    env = dict(os.environ) if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
    token, ca = sa_dir / "token", sa_dir / "ca.crt"
    if not host or not token.is_file() or not ca.is_file():
        raise ValueError(
            f"not running in a pod (need KUBERNETES_SERVICE_HOST and {token}, {ca}); drop --in-cluster "
            "and pass --kubeconfig PATH"
        )
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "in-cluster", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "sa", "user": {"tokenFile": str(token)}}],
        "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "sa"}}],
        "current-context": "in-cluster",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.touch(mode=0o600)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def pod_namespace(sa_dir: Path = SA_DIR) -> str | None:
    """The namespace the pod runs in (its ServiceAccount's), or None outside a pod."""
    path = sa_dir / "namespace"
    return path.read_text().strip() if path.is_file() else None


def rule_violations(role: dict[str, Any]) -> list[str]:
    """What makes a ClusterRole more than least privilege here (checked on what `gen` prints)."""
    out = []
    for rule in role.get("rules", []):
        res, verbs = rule.get("resources", []), rule.get("verbs", [])
        out += [f"verb {v!r} on {res}" for v in verbs if v in FORBIDDEN_VERBS]
        out += [f"wildcard resource on {rule.get('apiGroups')}" for r in res if "*" in r]
        out += [f"secrets access {verbs}" for r in res if r.split("/")[0] == "secrets"]
        out += ["RBAC objects" for g in rule.get("apiGroups", []) if g in ("*", "rbac.authorization.k8s.io")]
        out += [f"{res} with {v}" for v in verbs if v in ("create", "delete", "update", "patch") and "nodes" in res]
    return out


def unscoped_writes(role: dict[str, Any], policy: dict[str, Any]) -> list[str]:
    """Writes the ClusterRole grants that the admission policy does not narrow: each one could
    touch an object the runs did not create."""
    covered = {
        (g, r)
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        if set(rule["operations"]) >= {"CREATE", "UPDATE", "DELETE"}
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    return [
        f"{g or 'core'}/{r} {sorted(set(rule['verbs']) & set(WRITES))}"
        for rule in role.get("rules", [])
        if set(rule.get("verbs", [])) & set(WRITES)
        for g in rule.get("apiGroups", [])
        for r in rule.get("resources", [])
        if (g, r) not in covered
    ]


# -- results as ConfigMaps -----------------------------------------------------------------------
def _configmap(name: str, namespace: str, labels: dict[str, str], **data: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "labels": {**_labels(), **labels}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **data}


def results_name(run_id: str) -> str:
    """The index ConfigMap's name of a run (its parts: `<name>-0`, `<name>-1`, ...)."""
    return "lwsc-results-" + (re.sub(r"[^a-z0-9-]", "-", run_id.lower()).strip("-") or "run")


def results_configmaps(
    run_id: str, archive: bytes | None, index: dict[str, str], namespace: str
) -> list[dict[str, Any]]:
    """The ConfigMaps holding one run's results: the archive in parts (binaryData, at most
    PART_BYTES each), then the index (`index` plus parts, size, sha256). Created in this order,
    so a present index means every part is there."""
    name = results_name(run_id)
    labels = {RESULTS_LABEL: name.removeprefix("lwsc-results-")}
    chunks = [archive[i : i + PART_BYTES] for i in range(0, len(archive), PART_BYTES)] if archive else []
    parts = [
        _configmap(f"{name}-{i}", namespace, labels, binaryData={"part": base64.b64encode(c).decode()})
        for i, c in enumerate(chunks)
    ]
    summary = {**index, "run-id": run_id, "parts": str(len(chunks))}
    if archive is not None:
        summary |= {"size": str(len(archive)), "sha256": hashlib.sha256(archive).hexdigest()}
    return [*parts, _configmap(name, namespace, {**labels, INDEX_LABEL: "true"}, data=summary)]


class BrokenResults(Exception):
    """The results ConfigMaps of a run do not add up to the archive their index describes."""


def assemble(index: dict[str, str], parts: dict[str, bytes]) -> bytes:
    """The archive from its parts (`{configmap name: bytes}`), checked against the index's size
    and sha256. BrokenResults names what does not match."""
    count = int(index.get("parts", "0"))
    prefix = results_name(index.get("run-id", ""))
    missing = [f"{prefix}-{i}" for i in range(count) if f"{prefix}-{i}" not in parts]
    if missing:
        raise BrokenResults(f"results parts missing: {', '.join(missing)}")
    data = b"".join(parts[f"{prefix}-{i}"] for i in range(count))
    if str(len(data)) != index.get("size") or hashlib.sha256(data).hexdigest() != index.get("sha256"):
        raise BrokenResults(f"the results parts of run {index.get('run-id')} do not match their index (size/sha256)")
    return data


PROGRESS = re.compile(r"\[\s*(\d{1,3})%\]")
ITEMS = re.compile(r"\b(\d+) workers? \[(\d+) items?\]|collected (\d+) items?")


def progress(log: str) -> str | None:
    """How far the suites are, from pytest's output in the pod's log: "42% of 208 tests", or
    None before pytest printed a progress mark."""
    marks = PROGRESS.findall(log)
    if not marks:
        return None
    items = ITEMS.search(log)
    total = next((g for g in items.groups()[1:] if g), None) if items else None
    return f"{marks[-1]}% of {total} tests" if total else f"{marks[-1]}%"
