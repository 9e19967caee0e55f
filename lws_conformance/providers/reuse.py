"""Is a running local cluster still what its profile describes? Checked before it is reused.

Why: a cluster trusted blindly can differ from its profile — a node left with kwok's default
capacity by a chaos rollback turns every later run's TAS tests red, and those reds look like
contract violations. So before any test the reused cluster is compared with its profile:
- node set: exactly the profile's fake nodes carry `lwsc.x-k8s.io/managed=true`;
- each node: its labels and kwok annotation, capacity and allocatable (GPUs included), node info,
  Ready=True, no `node.kubernetes.io/*` taint, schedulable;
- every LWS and Kueue CRD present and Established; every webhook configuration present with the
  same webhooks pointing at the same URLs;
- every process alive, answering its health check, running the profile's version (its binary's
  cache path names the version) with the command line the cluster saved at start-up.
A node whose capacity, allocatable or node info drifted is repaired (its status re-asserted from
the profile, as `lwsc up` does; nothing runs differently for its pods) and said so; anything else
is one line naming what differs and the fix, `lwsc down && lwsc up`, exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from kubernetes import client
from kubernetes.utils import parse_quantity

from ..errors import UserError
from ..k8s.client import api_client, to_dict
from ..profile import Profile
from . import nodes, process


class RunningCluster(Protocol):
    """What the check reads of a running local cluster (`providers.local.LocalCluster`)."""

    name: str
    profile: Profile

    @property
    def kubeconfig(self) -> Path: ...

    def records(self) -> list[process.ProcRecord]: ...

    def healthy(self, component: str, within: float = 2.0) -> bool: ...

    def saved_argv(self, component: str) -> list[str] | None: ...

    def installed_manifests(self, component: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...


Obj = dict[str, Any]
REPAIRABLE = ("capacity", "allocatable", "nodeInfo")
VERSION_KEY = {
    "etcd": "etcd",
    "kube-apiserver": "kubernetes",
    "kube-controller-manager": "kubernetes",
    "kube-scheduler": "kubernetes",
    "kwok": "kwok",
    "lws": "lws",
    "kueue": "kueue",
}


def expected_nodes(profile: Profile) -> dict[str, Obj]:
    t = profile.topology
    return {name: nodes.node_manifest(t, name, block, rack) for name, block, rack in nodes.node_names(t)}


def _same_quantities(want: dict[str, str], have: dict[str, str]) -> bool:
    if set(want) != set(have):
        return False
    try:
        return all(parse_quantity(want[k]) == parse_quantity(have[k]) for k in want)
    except ValueError:
        return want == have


def status_drift(want: Obj, have: Obj) -> list[str]:
    """The repairable differences of one node: capacity, allocatable, node info."""
    w, h = want.get("status") or {}, have.get("status") or {}
    out = [
        f"{k} {h.get(k)} (want {w[k]})"
        for k in ("capacity", "allocatable")
        if not _same_quantities(w[k], h.get(k) or {})
    ]
    info = {k: v for k, v in w["nodeInfo"].items() if (h.get("nodeInfo") or {}).get(k) != v}
    if info:
        out.append(f"nodeInfo { ({k: (h.get('nodeInfo') or {}).get(k) for k in info}) } (want {info})")
    return out


def node_problems(want: Obj, have: Obj) -> list[str]:
    """The non-repairable differences of one node: labels, annotation, readiness, taints."""
    out = []
    labels = have["metadata"].get("labels") or {}
    bad = {k: labels.get(k) for k, v in want["metadata"]["labels"].items() if labels.get(k) != v}
    if bad:
        out.append(f"labels {bad} (want { ({k: want['metadata']['labels'][k] for k in bad}) })")
    ann = nodes.KWOK_ANNOTATION
    if (have["metadata"].get("annotations") or {}).get(ann[0]) != ann[1]:
        out.append(f"no {ann[0]}={ann[1]} annotation (kwok does not manage it)")
    ready = {c["type"]: c.get("status") for c in (have.get("status") or {}).get("conditions") or []}.get("Ready")
    if ready != "True":
        out.append(f"Ready={ready}")
    spec = have.get("spec") or {}
    taints = [t["key"] for t in spec.get("taints") or [] if t["key"].startswith("node.kubernetes.io/")]
    if taints or spec.get("unschedulable"):
        out.append(f"tainted {taints}" if taints else "cordoned (unschedulable)")
    return out


def nodes_check(expected: dict[str, Obj], actual: list[Obj]) -> tuple[list[str], dict[str, list[str]]]:
    """(problems, {node: repairable drift}) of the managed nodes against the profile's."""
    have = {n["metadata"]["name"]: n for n in actual}
    problems = [f"node {n} missing" for n in sorted(set(expected) - set(have))]
    problems += [f"node {n} is not in the profile" for n in sorted(set(have) - set(expected))]
    drift = {}
    for name in sorted(set(expected) & set(have)):
        problems += [f"node {name}: {p}" for p in node_problems(expected[name], have[name])]
        d = status_drift(expected[name], have[name])
        if d:
            drift[name] = d
    return problems, drift


def crd_problems(names: list[str], crds: list[Obj]) -> list[str]:
    established = {
        c["metadata"]["name"]
        for c in crds
        if any(
            x["type"] == "Established" and x["status"] == "True"
            for x in (c.get("status") or {}).get("conditions") or []
        )
    }
    return [f"CRD {n} missing or not Established" for n in names if n not in established]


def _hooks(cfg: Obj) -> dict[str, Any]:
    return {w["name"]: (w.get("clientConfig") or {}).get("url") for w in cfg.get("webhooks") or []}


def webhook_problems(expected: list[Obj], actual: list[Obj]) -> list[str]:
    have = {(c["kind"], c["metadata"]["name"]): c for c in actual}
    out = []
    for cfg in expected:
        key = (cfg["kind"], cfg["metadata"]["name"])
        if key not in have:
            out.append(f"{key[0]} {key[1]} missing")
        elif _hooks(have[key]) != _hooks(cfg):
            out.append(f"{key[0]} {key[1]} differs: {_hooks(have[key])} (want {_hooks(cfg)})")
    return out


def process_problems(profile: Profile, procs: dict[str, Obj]) -> list[str]:
    """`procs`: {component: {"exe", "alive", "ready", "argv", "saved_argv"}} of the running cluster."""
    out = []
    for name, p in sorted(procs.items()):
        if not p["alive"] or not p["ready"]:
            out.append(f"{name} {'not running' if not p['alive'] else 'not healthy'}")
            continue
        key = VERSION_KEY.get(name)
        version = profile.versions.get(key) if key and not profile.sources.get(key) else None
        if version and version not in Path(p["exe"]).parts:
            out.append(f"{name} runs {p['exe']} (want version {version})")
        if p["saved_argv"] is not None and p["argv"] != p["saved_argv"]:
            out.append(f"{name} runs with another command line than the cluster started it with")
    return out


def _live_processes(cluster: RunningCluster) -> dict[str, Obj]:
    out = {}
    for rec in cluster.records():
        alive = process.alive(rec)
        try:
            argv = [a.decode() for a in Path(f"/proc/{rec.pid}/cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            argv = None
        ready = alive and cluster.healthy(rec.name, within=5.0)
        out[rec.name] = {
            "exe": rec.exe,
            "alive": alive,
            "ready": ready,
            "argv": argv,
            "saved_argv": cluster.saved_argv(rec.name),
        }
    return out


def verify(cluster: RunningCluster, progress: Callable[[str], None]) -> None:
    """Compare the running `cluster` with its profile; repair node status drift (said through
    `progress`); raise UserError (exit 2) naming the first differences otherwise."""
    api = api_client(cluster.kubeconfig)
    try:
        core = client.CoreV1Api(api)
        expected = expected_nodes(cluster.profile)
        managed = [to_dict(api, n) for n in core.list_node(label_selector=f"{nodes.MANAGED_LABEL}=true").items]
        problems, drift = nodes_check(expected, managed)
        for name, what in drift.items():
            st = expected[name]["status"]
            patch = [{"op": "add", "path": f"/status/{k}", "value": st[k]} for k in REPAIRABLE]
            core.patch_node_status(name, patch, _content_type="application/json-patch+json")
            progress(f"repaired node {name} of the reused cluster: {'; '.join(what)}")
        raw = client.ApiextensionsV1Api(api).list_custom_resource_definition(_preload_content=False)
        crds = json.loads(cast(Any, raw).data)["items"]  # raw JSON: Kueue's CRDs take seconds to deserialize
        adm = client.AdmissionregistrationV1Api(api)
        hooks = [
            {**to_dict(api, c), "kind": kind}
            for kind, fn in (
                ("ValidatingWebhookConfiguration", adm.list_validating_webhook_configuration),
                ("MutatingWebhookConfiguration", adm.list_mutating_webhook_configuration),
            )
            for c in fn().items
        ]
    finally:
        api.close()
    for component in ("lws", "kueue"):
        want_crds, want_hooks = cluster.installed_manifests(component)
        problems += crd_problems([c["metadata"]["name"] for c in want_crds], crds)
        problems += webhook_problems(want_hooks, hooks)
    problems += process_problems(cluster.profile, _live_processes(cluster))
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UserError(
            f"cluster '{cluster.name}' no longer matches its profile: {'; '.join(problems[:3])}{more}; "
            f"fix: lwsc --name {cluster.name} down && lwsc --name {cluster.name} up"
        )
