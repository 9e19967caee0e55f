"""Builders for the objects suites create: LeaderWorkerSets and Kueue queues.

Pure functions returning dicts, so tests read as data and the harness's own tests can check
them without a cluster. Templates live in `fixtures/manifests/`.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parent.parent / "fixtures" / "manifests"
LWS_GROUP, LWS_VERSION, LWS_PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@cache
def _template(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text())
    return data


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
