"""Builders for the objects suites create: LeaderWorkerSets, plain Pods for Kueue, Kueue queues.

Pure functions returning dicts, so tests read as data and the harness's own tests can check
them without a cluster. Templates live in `fixtures/manifests/`.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import yaml

from . import images, resources
from .k8s.predicates import POD_GROUP_NAME

MANIFESTS = resources.fixtures() / "manifests"
LWS_GROUP, LWS_VERSION, LWS_PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# A node label no node has: pods whose nodeSelector names it stay Pending (unschedulable).
NOWHERE = {"lwsc.x-k8s.io/nowhere": "x"}


@cache
def _template(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text())
    return images.rewrite(data)  # type: ignore[no-any-return]


def lws(
    name: str,
    *,
    replicas: int = 2,
    size: int = 3,
    gpus: int = 0,
    gpu_resource: str = "nvidia.com/gpu",
    queue: str | None = None,
    leader: bool = True,
    template: str = "lws-basic.yaml",
) -> dict[str, Any]:
    """An LWS from a template; `gpus` is the per-pod request of `gpu_resource`."""
    obj = copy.deepcopy(_template(template))
    obj["metadata"] = {"name": name, **({"labels": {QUEUE_LABEL: queue}} if queue else {})}
    spec = obj["spec"]
    spec["replicas"] = replicas
    lwt = spec["leaderWorkerTemplate"]
    lwt["size"] = size
    if not leader:
        lwt.pop("leaderTemplate", None)
    for key in ("leaderTemplate", "workerTemplate"):
        if key in lwt and gpus:
            for c in lwt[key]["spec"]["containers"]:
                res = c.setdefault("resources", {})
                res.setdefault("requests", {})[gpu_resource] = str(gpus)
                res.setdefault("limits", {})[gpu_resource] = str(gpus)
    return obj


GROUP_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"


def plain_pod(name: str, *, queue: str, group: str | None = None, total: int | None = None) -> dict[str, Any]:
    """A plain Pod for Kueue's pod integration (its "Run Plain Pods" page): the LWS template's
    worker container, the queue-name label and, for a Pod group, the pod-group-name label and the
    pod-group-total-count annotation. restartPolicy Never, as in that page's examples."""
    container = copy.deepcopy(_template("lws-basic.yaml")["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"])
    meta: dict[str, Any] = {"name": name, "labels": {QUEUE_LABEL: queue}}
    if group is not None:
        meta["labels"][POD_GROUP_NAME] = group
        meta["annotations"] = {GROUP_TOTAL_COUNT: str(total)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {**container, "restartPolicy": "Never"}}


def resource_flavor(
    name: str, node_labels: dict[str, str] | None = None, topology: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if topology:
        spec["topologyName"] = topology
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue(
    name: str, flavor: str, quota: dict[str, str], namespace_selector: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": namespace_selector if namespace_selector is not None else {},
            "resourceGroups": [
                {
                    "coveredResources": sorted(quota),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [{"name": r, "nominalQuota": q} for r, q in sorted(quota.items())],
                        }
                    ],
                }
            ],
        },
    }


def local_queue(name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": cluster_queue_name},
    }


# -- Kueue gang admission / TAS helpers (suites/kueue) -------------------------------------
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"
TAS_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
TAS_SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"


def topology(name: str, levels: list[str]) -> dict[str, Any]:
    """A Kueue Topology; `levels` are node label keys ordered highest (e.g. block) to lowest."""
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": lbl} for lbl in levels]},
    }


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": f"lws-conformance priority {value}",
    }


def set_requests(obj: dict[str, Any], role: str, requests: dict[str, str]) -> dict[str, Any]:
    """Set container requests on the `role` ("leader"/"worker") template, in place; returns `obj`.

    Extended resources (names with a "/", e.g. nvidia.com/gpu) also get an equal limit: the
    apiserver rejects a request without a limit for non-overcommitable resources.
    """
    tpl = obj["spec"]["leaderWorkerTemplate"][f"{role}Template"]
    for c in tpl["spec"]["containers"]:
        res = c.setdefault("resources", {})
        res["requests"] = {**(res.get("requests") or {}), **requests}
        ext = {k: v for k, v in requests.items() if "/" in k}
        if ext:
            res["limits"] = {**(res.get("limits") or {}), **ext}
    return obj


def set_tas(
    obj: dict[str, Any], level: str, *, required: bool = True, group: str | None = "lws-group"
) -> dict[str, Any]:
    """Annotate leader and worker templates with a TAS constraint (and a shared podset group), in place."""
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        if key not in lwt:
            continue
        ann = lwt[key].setdefault("metadata", {}).setdefault("annotations", {})
        ann[TAS_REQUIRED if required else TAS_PREFERRED] = level
        if group:
            ann[TAS_GROUP] = group
    return obj


WORKLOAD_NAME_MAX = 253  # Kueue's limit for a generated Workload name: an object name's
SHORT_WORKLOAD_NAME_MAX = 63  # with Kueue's ShortWorkloadNames gate: a label value's
HASH_LENGTH = 5


def lws_workload_name(lws_name: str, lws_uid: str, group_index: int, max_length: int = WORKLOAD_NAME_MAX) -> str:
    """Kueue's Workload name for LWS group `group_index`: leaderworkerset-<name>-<idx>-<h5>.

    h5 = first 5 hex chars of SHA-1 over "LeaderWorkerSet\nleaderworkerset.x-k8s.io\n<name>-<idx>\n<uid>"
    (kueue pkg/controller/jobframework/workload_names.go@v0.17.0). The prefix
    leaderworkerset-<name>-<idx> is cut to `max_length` - 6 characters, room for the "-" and the
    hash, which is always that of the whole owner name: with SHORT_WORKLOAD_NAME_MAX
    (ShortWorkloadNames on) a name over 57 characters keeps its first 57, and the group index may
    be cut off with the rest, so only the hash tells groups apart (CHANGELOG-0.17.md: "the
    owner-based prefix is truncated to fit within the limit while maintaining uniqueness via a
    hash suffix").
    """
    import hashlib

    key = f"LeaderWorkerSet\n{LWS_GROUP}\n{lws_name}-{group_index}\n{lws_uid}"
    prefix = f"leaderworkerset-{lws_name}-{group_index}"[: max_length - 1 - HASH_LENGTH]
    return f"{prefix}-{hashlib.sha1(key.encode()).hexdigest()[:HASH_LENGTH]}"


def short_workload_names_wrong(stored: list[str], lws_name: str, lws_uid: str, replicas: int) -> list[str]:
    """What differs between the Workload names Kueue stored for an LWS's `replicas` groups and the
    names ShortWorkloadNames gives them (`lws_workload_name` at SHORT_WORKLOAD_NAME_MAX): one
    line per group whose name is missing, per stored name no group has, per name too long."""
    want = {i: lws_workload_name(lws_name, lws_uid, i, SHORT_WORKLOAD_NAME_MAX) for i in range(replicas)}
    out = [f"group {i}: no Workload {n}" for i, n in want.items() if n not in stored]
    out += [f"Workload {n} is no group's short name {sorted(want.values())}" for n in stored if n not in want.values()]
    out += [
        f"Workload {n} has {len(n)} characters, more than {SHORT_WORKLOAD_NAME_MAX}"
        for n in stored
        if len(n) > SHORT_WORKLOAD_NAME_MAX
    ]
    return out
