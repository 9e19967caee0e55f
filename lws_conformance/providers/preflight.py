"""Look at a cluster before any test runs: versions, feature gates, capacity (`lwsc preflight`).

Read-only. Versions come from what the cluster shows: the controller Deployments' images (a
release install runs `registry.k8s.io/lws/lws:vX.Y.Z`), else a Helm-style
`app.kubernetes.io/version` label on the CRD, else the handle when the harness built the cluster
(the local provider runs controllers as processes, so there is no Deployment to read). A version
that is nowhere visible is reported as such and the profile's value is used, flagged as assumed:
version gating (not-applicable verdicts) must never silently rest on a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..k8s import manager_config
from ..k8s.client import to_dict
from ..profile import Topology

COMPONENTS = {
    # component: (default namespace, a CRD it installs, webhook configuration prefix)
    "lws": ("lws-system", "leaderworkersets.leaderworkerset.x-k8s.io", "lws-"),
    "kueue": ("kueue-system", "workloads.kueue.x-k8s.io", "kueue-"),
}
_TAG = re.compile(r"^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)$")
_GATE = re.compile(r'^kubernetes_feature_enabled\{name="([^"]+)",stage="([A-Z]*)"\} (\d)', re.M)


@dataclass(frozen=True)
class Detected:
    version: str | None  # vX.Y.Z, or None when not visible
    source: str  # where it was read, or why it was not
    installed: bool = True


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    versions: dict[str, Detected] = field(default_factory=dict)

    def add(self, name: str, status: str, detail: str) -> None:
        self.checks.append(Check(name, status, detail))

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def text(self) -> str:
        width = max((len(c.name) for c in self.checks), default=10)
        return "\n".join(f"{c.status.upper():<4}  {c.name:<{width}}  {c.detail}" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.failed,
            "versions": {k: {"version": d.version, "source": d.source} for k, d in self.versions.items()},
            "checks": [c.__dict__ for c in self.checks],
        }


def _image_name_tag(image: str) -> tuple[str, str]:
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    name, _, tag = last.partition(":")
    return name, tag


def runs_component(image: str, component: str) -> bool:
    return _image_name_tag(image)[0].startswith(component)


def image_version(image: str, component: str) -> str | None:
    """`registry.k8s.io/lws/lws:v0.9.0` -> v0.9.0, for images of `component` only."""
    name, tag = _image_name_tag(image)
    m = _TAG.match(tag)
    return f"v{m.group(1)}" if name.startswith(component) and m else None


def _containers(dep: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [])


def _webhook_namespaces(api: client.ApiClient, prefix: str) -> set[str]:
    adm = client.AdmissionregistrationV1Api(api)
    out: set[str] = set()
    for listing in (adm.list_mutating_webhook_configuration(), adm.list_validating_webhook_configuration()):
        for cfg in listing.items:
            if not (cfg.metadata and (cfg.metadata.name or "").startswith(prefix)):
                continue
            for hook in cfg.webhooks or []:
                svc = hook.client_config.service if hook.client_config else None
                if svc and svc.namespace:
                    out.add(svc.namespace)
    return out


def controller_deployments(api: client.ApiClient, component: str) -> list[dict[str, Any]]:
    """Deployments running `component`'s image, in its namespace or where its webhooks point."""
    default_ns, _crd, prefix = COMPONENTS[component]
    apps = client.AppsV1Api(api)
    found = []
    for ns in sorted({default_ns} | _webhook_namespaces(api, prefix)):
        try:
            deps = apps.list_namespaced_deployment(ns).items
        except ApiException as exc:
            if exc.status in (403, 404):
                continue
            raise
        for dep in (to_dict(api, d) for d in deps):
            if any(runs_component(c.get("image", ""), component) for c in _containers(dep)):
                found.append(dep)
    return found


def detect(api: client.ApiClient, component: str, known: str | None = None) -> Detected:
    _ns, crd_name, _prefix = COMPONENTS[component]
    ext = client.ApiextensionsV1Api(api)
    try:
        crd = ext.read_custom_resource_definition(crd_name)
    except ApiException as exc:
        if exc.status == 404:
            return Detected(None, f"CRD {crd_name} not found", installed=False)
        raise
    for dep in controller_deployments(api, component):
        for c in _containers(dep):
            v = image_version(c.get("image", ""), component)
            if v:
                meta = dep["metadata"]
                return Detected(v, f"image {c['image']} of Deployment {meta['namespace']}/{meta['name']}")
    labels = (crd.metadata.labels if crd.metadata else None) or {}
    if labels.get("app.kubernetes.io/version"):
        v = str(labels["app.kubernetes.io/version"])
        return Detected(v if v.startswith("v") else f"v{v}", f"label app.kubernetes.io/version on CRD {crd_name}")
    if known:
        return Detected(known, "cluster handle: the harness built this cluster")
    return Detected(None, "installed, but no controller Deployment image or CRD version label shows the version")


def _controller_gates(api: client.ApiClient, component: str) -> list[str]:
    out = []
    for dep in controller_deployments(api, component):
        for c in _containers(dep):
            for arg in [*(c.get("args") or []), *(c.get("command") or [])]:
                if arg.startswith("--feature-gates="):
                    out.append(arg.split("=", 1)[1])
    config, _why = manager_config.read(api, COMPONENTS[component][0], f"{component}-manager-config")
    gates = (config or {}).get("featureGates")
    if gates:
        out.append(",".join(f"{k}={v}" for k, v in sorted(gates.items())))
    return out


def apiserver_gates(api: client.ApiClient) -> tuple[list[str], str | None]:
    """Alpha gates the API server reports enabled (`kubernetes_feature_enabled` on /metrics)."""
    try:
        method, url, headers, _body, _post = api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
        resp = api.call_api(method, url, header_params=headers)
        resp.read()
        if resp.status != 200:
            return [], f"/metrics not readable (HTTP {resp.status})"
        text = bytes(resp.data or b"").decode(errors="replace")
    except ApiException as exc:
        return [], f"/metrics not readable ({exc.status})"
    gates = _GATE.findall(text)
    if not gates:
        return [], "no kubernetes_feature_enabled metric"
    return sorted(name for name, stage, on in gates if stage == "ALPHA" and on == "1"), None


def _gpus(node: dict[str, Any], resource: str) -> int:
    try:
        return int(str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0")))
    except ValueError:
        return 0


def node_capacity(api: client.ApiClient, t: Topology, report: Report) -> None:
    nodes = [to_dict(api, n) for n in client.CoreV1Api(api).list_node().items]
    gpu_nodes = [n for n in nodes if _gpus(n, t.gpu_resource) > 0]
    total = sum(_gpus(n, t.gpu_resource) for n in gpu_nodes)
    report.add("nodes", "ok" if nodes else "fail", f"{len(nodes)} node(s), {len(gpu_nodes)} with {t.gpu_resource}")
    if not gpu_nodes:
        report.add(
            "gpu capacity", "fail", f"no node advertises {t.gpu_resource}; set topology.gpu_resource (lwsc discover)"
        )
        return
    keys = (t.block_label, t.rack_label, t.hostname_label)
    labels = [n["metadata"].get("labels") or {} for n in gpu_nodes]
    unlabelled = [
        n["metadata"]["name"] for n, lb in zip(gpu_nodes, labels, strict=True) if not all(k in lb for k in keys)
    ]
    blocks = {lb[t.block_label] for lb in labels if t.block_label in lb}
    racks = {lb[t.rack_label] for lb in labels if t.rack_label in lb}
    report.add(
        "gpu capacity",
        "ok" if total >= t.nodes * t.gpus_per_node else "warn",
        f"{total} {t.gpu_resource} allocatable on {len(gpu_nodes)} node(s), {len(racks)} rack(s), "
        f"{len(blocks)} block(s); "
        f"the profile expects {t.nodes * t.gpus_per_node} on {t.nodes} node(s), {t.racks} rack(s), {t.blocks} block(s)",
    )
    if unlabelled:
        report.add(
            "topology labels",
            "warn",
            f"{len(unlabelled)} GPU node(s) lack {' / '.join(keys)} (e.g. {unlabelled[0]}); "
            "placement tests will not find them",
        )
    else:
        report.add("topology labels", "ok", f"every GPU node has {', '.join(keys)}")


def run(api: client.ApiClient, t: Topology, known: dict[str, str] | None = None) -> Report:
    """Every preflight check; only what would make every test meaningless is `fail`."""
    report = Report()
    try:
        server = client.VersionApi(api).get_code().git_version
    except Exception as exc:  # noqa: BLE001  (any failure here means: cannot talk to the cluster)
        report.add("api server", "fail", f"unreachable: {str(exc).splitlines()[0][:200]}")
        return report
    report.add("api server", "ok", f"Kubernetes {server}")
    report.versions["kubernetes"] = Detected(server, "/version")
    for component in COMPONENTS:
        d = detect(api, component, (known or {}).get(component))
        report.versions[component] = d
        status = "ok" if d.version else ("fail" if not d.installed and component == "lws" else "warn")
        shown = d.version or ("not installed" if not d.installed else "version not visible")
        report.add(f"{component} version", status, f"{shown} ({d.source})")
        if d.installed:
            gates = _controller_gates(api, component)
            report.add(
                f"{component} feature gates",
                "ok",
                "; ".join(gates) if gates else f"none visible (Deployment --feature-gates, {component}-manager-config)",
            )
    alpha, why = apiserver_gates(api)
    report.add("apiserver alpha gates", "ok", why or (", ".join(alpha) if alpha else "none enabled"))
    node_capacity(api, t, report)
    return report
