"""Shared pieces of the Kueue resource-management suites: ResourceFlavors bound to one block of
GPU nodes each, ClusterQueues with several flavors, cohorts with borrowing and lending limits, and
what a group's Workload was assigned.

Not a test module. Every cluster-scoped object is named from the test's `unique` value and created
through `scenario.create`, so it is deleted after the test; a cohort is only a name, so it is
`unique`-derived too and never shared with another test. GPUs are the scarce resource (1 per pod),
cpu and memory are covered generously in every flavor, so quotas read as "pods".
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import ClusterHandle, Scenario, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

Obj = dict[str, Any]
TAINT_PREFIX = "lwsc.x-k8s.io/"  # taint/toleration keys: lwsc.x-k8s.io/<unique>-<tag>, never on a real node


def two_blocks(scenario: Scenario, cluster: ClusterHandle) -> tuple[str, str]:
    """The first two values of the topology's block label on the cluster's GPU nodes: one flavor per
    block leaves the other block's free GPUs as room for a wrong placement."""
    t = cluster.topology
    found = sorted({labels[t.block_label] for labels in scenario.node_labels().values() if labels.get(t.block_label)})
    if len(found) < 2:
        pytest.skip(f"needs GPU nodes in two blocks ({t.block_label}), the cluster has {found}")
    return found[0], found[1]


def quota(cluster: ClusterHandle, gpus: int) -> dict[str, str]:
    return {"cpu": "100", "memory": "100Gi", cluster.topology.gpu_resource: str(gpus)}


def toleration(key: str, value: str | None = None) -> Obj:
    """A NoSchedule toleration of `key` (operator Equal with a value, else Exists)."""
    if value is None:
        return {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    return {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}


def flavor(
    name: str,
    node_labels: dict[str, str] | None = None,
    *,
    tolerations: list[Obj] | None = None,
    taints: list[Obj] | None = None,
) -> Obj:
    rf: Obj = workloads.resource_flavor(name, node_labels)
    if tolerations:
        rf["spec"]["tolerations"] = tolerations
    if taints:
        rf["spec"]["nodeTaints"] = taints
    return rf


def flavor_quota(
    name: str,
    amounts: dict[str, str],
    *,
    borrowing: dict[str, str] | None = None,
    lending: dict[str, str] | None = None,
) -> Obj:
    """One entry of a resource group's flavors: nominal quota, and borrowing/lending limits per resource."""
    resources = []
    for r, q in sorted(amounts.items()):
        entry: Obj = {"name": r, "nominalQuota": q}
        if borrowing and r in borrowing:
            entry["borrowingLimit"] = borrowing[r]
        if lending and r in lending:
            entry["lendingLimit"] = lending[r]
        resources.append(entry)
    return {"name": name, "resources": resources}


def cluster_queue(
    name: str,
    flavors: list[Obj],
    *,
    cohort: str | None = None,
    fungibility: Obj | None = None,
    preemption: Obj | None = None,
) -> Obj:
    """A ClusterQueue with one resource group over `flavors` in that order (every flavor covers the
    same resources)."""
    covered = sorted({r["name"] for f in flavors for r in f["resources"]})
    spec: Obj = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": covered, "flavors": flavors}]}
    if cohort:
        spec["cohortName"] = cohort
    if fungibility:
        spec["flavorFungibility"] = fungibility
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": K.KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def queue(scenario: Scenario, cq: Obj, local_queue: str) -> str:
    """Create ClusterQueue `cq` and LocalQueue `local_queue` pointing at it; returns the LocalQueue."""
    scenario.create(cq)
    scenario.create(workloads.local_queue(local_queue, cq["metadata"]["name"]))
    return local_queue


def lws(
    name: str,
    cluster: ClusterHandle,
    size: int,
    queue: str,
    *,
    replicas: int = 1,
    tolerations: list[Obj] | None = None,
    priority_class: str | None = None,
) -> Obj:
    obj: Obj = workloads.lws(
        name, replicas=replicas, size=size, gpus=1, gpu_resource=cluster.topology.gpu_resource, queue=queue
    )
    if priority_class:
        obj["metadata"]["labels"][workloads.PRIORITY_LABEL] = priority_class
    for role in ("leaderTemplate", "workerTemplate"):
        if tolerations:
            obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = list(tolerations)
    return obj


# -- what Kueue assigned ---------------------------------------------------------------------------
def flavors_of(wl: Obj) -> dict[str, list[str]]:
    """podSet name -> the flavors its resources were assigned (status.admission), sorted."""
    psas = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    return {psa["name"]: sorted(set((psa.get("flavors") or {}).values())) for psa in psas}


def group_workload(scenario: Scenario, lws_name: str, index: int, condition: str = "Admitted") -> Obj:
    """Wait until group `index`'s Workload of LWS `lws_name` is Admitted; returns it."""
    uid = K.lws_uid(scenario, lws_name)
    name = workloads.lws_workload_name(lws_name, uid, index)

    def check(ws: list[Obj]) -> Obj | None:
        wl = K.by_name(ws).get(name)
        return wl if wl and K.admitted(wl) else None

    found: Obj = K.wait_workloads(scenario, uid, check, f"{name} {condition}")
    return found


def assigned_whole(wl: Obj, want: str) -> str | None:
    """Failure message unless every podSet of `wl` was assigned exactly flavor `want`."""
    got = flavors_of(wl)
    if got and all(v == [want] for v in got.values()):
        return None
    return f"{wl['metadata']['name']} was assigned flavors {got} (podSet -> flavors), not {want} for every podSet"


def node_label_failures(
    scenario: Scenario, pods: list[Obj], flavor_name: str, node_labels: dict[str, str]
) -> list[str]:
    """One message per pod whose nodeSelector lacks the flavor's nodeLabels, or that runs on a node
    without them."""
    nodes = scenario.node_labels()
    out = []
    for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
        name = p["metadata"]["name"]
        selector = p["spec"].get("nodeSelector") or {}
        missing = {k: v for k, v in node_labels.items() if selector.get(k) != v}
        if missing:
            out.append(
                f"pod {name} (flavor {flavor_name}) has nodeSelector {selector}, "
                f"without the flavor's nodeLabels {missing}"
            )
        node = p["spec"].get("nodeName")
        on = nodes.get(node or "", {})
        wrong = {k: on.get(k) for k in node_labels if on.get(k) != node_labels[k]}
        if wrong:
            out.append(
                f"pod {name} (flavor {flavor_name}) runs on node {node} labelled {wrong}, "
                f"not the flavor's {node_labels}"
            )
    return out


def has_toleration(pod: Obj, tol: Obj) -> bool:
    keys = ("key", "operator", "value", "effect")
    want = tuple(tol.get(k) for k in keys)
    return any(tuple(t.get(k) for k in keys) == want for t in pod["spec"].get("tolerations") or [])


def tolerations_of_key(pod: Obj, key: str) -> list[Obj]:
    return [t for t in pod["spec"].get("tolerations") or [] if t.get("key") == key]


def group_pods(scenario: Scenario, lws_name: str, index: int) -> list[Obj]:
    return K.groups_of(P.live(scenario.pods(K.selector(lws_name)))).get(index, [])


def pod_uids(scenario: Scenario, lws_name: str) -> set[str]:
    return {p["metadata"]["uid"] for p in P.live(scenario.pods(K.selector(lws_name)))}


def was_preempted(wl: Obj) -> bool:
    return bool(P.condition(wl, "Preempted") == "True")
