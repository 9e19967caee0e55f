"""Running the harness inside the cluster under test, like Sonobuoy or Hydrophone.

- `manifests()`: Namespace, ServiceAccount, a least-privilege ClusterRole + binding (exactly what
  the non-destructive suites, the preflight and the cleanup call: no Secrets, no `*`, no
  escalate/bind/impersonate, nothing on RBAC objects) and a Job running `lwsc run --in-cluster`;
- `kubeconfig_from_pod()`: the client from in-cluster config (the pod's ServiceAccount token
  and CA), written as a kubeconfig the existing-cluster path adopts;
- `sonobuoy_plugin()`: the same run as a Sonobuoy plugin (junit result format).

The RBAC is proven on the real apiserver by tests/e2e/test_incluster_rbac.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "lwsc-system"
NAME = "lwsc-conformance"
RESULTS = "/results"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
ALL_RW = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
FORBIDDEN_VERBS = ("*", "escalate", "bind", "impersonate")

# (apiGroup, resources, verbs): what the suites (non-destructive), preflight and cleanup call.
RULES: list[tuple[str, list[str], list[str]]] = [
    ("", ["namespaces"], ["get", "list", "watch", "create", "delete"]),  # one per test, named per run
    ("", ["pods"], ["get", "list", "watch", "create", "patch", "delete"]),  # create: server-side dry-run probes
    ("", ["pods/status"], ["get", "patch"]),  # tests report readiness as a kubelet would (kwok nodes)
    ("", ["services"], ["get", "list", "watch", "delete"]),
    ("", ["events"], READ),
    ("events.k8s.io", ["events"], READ),  # the restart-policy tests read container restarts from events
    ("", ["nodes"], READ),  # topology labels, capacity (preflight)
    ("", ["configmaps"], ["get"]),  # preflight: the controllers' manager config (feature gates)
    ("apps", ["statefulsets"], ["get", "list", "watch", "delete"]),  # self-healing deletes one
    ("apps", ["controllerrevisions"], READ),
    ("apps", ["deployments"], READ),  # preflight: controller images (versions)
    ("apiextensions.k8s.io", ["customresourcedefinitions"], ["get", "list"]),
    ("admissionregistration.k8s.io", ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], READ),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets"], ALL_RW),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets/scale"], ["get", "update", "patch"]),
    ("leaderworkerset.x-k8s.io", ["leaderworkersets/status"], ["get"]),
    (
        "kueue.x-k8s.io",
        ["clusterqueues", "localqueues", "resourceflavors", "topologies", "workloads", "workloadpriorityclasses"],
        ALL_RW,
    ),
    ("kueue.x-k8s.io", ["workloads/status", "clusterqueues/status", "localqueues/status"], ["get"]),
]


def cluster_role() -> dict[str, Any]:
    rules = [{"apiGroups": [g], "resources": r, "verbs": v} for g, r, v in RULES]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "rules": rules,
    }


def job(image: str, namespace: str, run_args: list[str]) -> dict[str, Any]:
    """The Job: runs the suites, writes the archive under /results, then waits (up to an hour) for
    `lwsc retrieve` to copy it out, like Sonobuoy's aggregator."""
    script = (
        f"lwsc run --in-cluster --reports {RESULTS} {' '.join(run_args)}; echo $? > {RESULTS}/exit-code; "
        f"touch {RESULTS}/done; sleep 3600"
    )
    container = {
        "name": "lwsc",
        "image": image,
        "command": ["sh", "-c", script],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": "results", "mountPath": RESULTS}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": NAME, "namespace": namespace, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": NAME}},
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
    labels = {"app.kubernetes.io/name": NAME}
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": NAME, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        cluster_role(),
        binding,
        job(image, namespace, run_args or []),
    ]


def sonobuoy_plugin(image: str, run_args: list[str] | None = None) -> dict[str, Any]:
    """A Sonobuoy plugin definition: Job driver, junit results (the run's junit_01.xml)."""
    script = (
        f"lwsc run --in-cluster --reports /tmp/lwsc {' '.join(run_args or [])}; "
        "cp /tmp/lwsc/latest/junit_01.xml ${SONOBUOY_RESULTS_DIR}/junit_01.xml; "
        "printf %s ${SONOBUOY_RESULTS_DIR}/junit_01.xml > ${SONOBUOY_RESULTS_DIR}/done"
    )
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
            "command": ["sh", "-c", script],
            "env": [{"name": "HOME", "value": "/tmp"}],
            "volumeMounts": [{"name": "results", "mountPath": "/tmp/sonobuoy/results"}],
        },
    }


def dump(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


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
