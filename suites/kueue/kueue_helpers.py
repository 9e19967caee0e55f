"""Shared pieces of the Kueue suites: per-test queues, Workload waits, group views of pods.

Not a test module. Every cluster-scoped object is named from the test's `unique` value and created
through `scenario.create`, so it is deleted after the test and never collides with a concurrent
test. Pods of one LWS are selected by the LWS name label, so several LWS can share a namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_API,
    ClusterHandle,
    Scenario,
    Topology,
    workloads,
)
from lws_conformance.testing import kueue_evidence as E
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]

KUEUE_API = f"{workloads.KUEUE_GROUP}/{workloads.KUEUE_VERSION}"

JOB_UID = "kueue.x-k8s.io/job-uid"

NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"

OBSERVE_SECONDS = 5.0  # "must never happen" windows: several Kueue scheduling cycles (it requeues within ~1 s)
# How long a Workload that fits may wait for quota before the harness looks for why it has none
# (test_kueue_tas._wait_quota; without evidence of a cause it waits on to its ordinary deadline):
# Kueue reserves quota for a fitting required-rack TAS group of the suite's shape 0.21 s (median)
# and at most 0.70 s after its Workload appears, on the 2-core machine at load 23-36
# (benchmarks/tas_admission_latency.py, docs/performance.md). 5 s is 7 times that maximum;
# `wait_for` multiplies it by timeouts.scale.

ADMISSION_SECONDS = 5.0

GROUP_NAME = "kueue.x-k8s.io/pod-group-name"  # Kueue's pod-group label and annotation key

MANAGED = "kueue.x-k8s.io/managed"  # the label (and finalizer) Kueue puts on the pods it manages

QUEUE = "lq"  # LocalQueue name in the test namespace (never `default`: that captures unlabelled LWS)


# -- queues ------------------------------------------------------------------------------------


def plain_queue(
    scenario: Scenario,
    unique: str,
    quota: dict[str, str],
    *,
    preemption: bool = False,
    queue: str = QUEUE,
    node_labels: dict[str, str] | None = None,
) -> str:
    """ResourceFlavor (`node_labels`, none by default) + ClusterQueue with `quota` + LocalQueue;
    returns the queue name."""
    scenario.create(workloads.resource_flavor(f"{unique}-rf", node_labels))
    cq = workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", quota)
    if preemption:
        cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    scenario.create(cq)
    scenario.create(workloads.local_queue(queue, f"{unique}-cq"))
    return queue


def tas_queue(
    scenario: Scenario, cluster: ClusterHandle, unique: str, quota: dict[str, str], queue: str = QUEUE
) -> str:
    """Topology (block, rack, hostname) + TAS ResourceFlavor + ClusterQueue + LocalQueue, all per test.

    The flavor selects nodes with the same nodeLabels as the harness's own TAS flavor, so it works
    on any provider whose handle names one.
    """
    t = cluster.topology
    shared = scenario.objects.get("ResourceFlavor", KUEUE_API, cluster.kueue_flavor_name)
    node_labels = (shared.get("spec") or {}).get("nodeLabels") or {}
    assert node_labels, f"ResourceFlavor {cluster.kueue_flavor_name} has no nodeLabels to copy"
    scenario.create(workloads.topology(f"{unique}-topo", [t.block_label, t.rack_label, t.hostname_label]))
    scenario.create(workloads.resource_flavor(f"{unique}-rf", node_labels, topology=f"{unique}-topo"))
    scenario.create(workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", quota))
    scenario.create(workloads.local_queue(queue, f"{unique}-cq"))
    scenario.interference.append(lambda: gpus_taken_by_others(scenario, cluster, node_labels))
    return queue


def gpus_taken_by_others(scenario: Scenario, cluster: ClusterHandle, node_labels: dict[str, str]) -> str | None:
    """`kueue_evidence.taken_by_others`, then `held_by_others`, for this test's pods and Workloads
    as the cluster stands: the flavor of `tas_queue` (`node_labels`) shares its nodes with the pods
    of every other namespace."""
    core, t = scenario.core, cluster.topology
    nodes = scenario.api.sanitize_for_serialization(core.list_node(label_selector=t.rack_label)).get("items") or []
    pods = scenario.api.sanitize_for_serialization(core.list_pod_for_all_namespaces()).get("items") or []
    mine = [p for p in pods if p["metadata"].get("namespace") == scenario.namespace]
    wls = scenario.list_objects("Workload")
    reserved = {wl["metadata"]["name"]: at for wl in wls if (at := E.became_true(wl, "QuotaReserved")) is not None}
    held = [wl for wl in wls if condition_false(wl, "QuotaReserved")]
    gpu = t.gpu_resource
    return E.taken_by_others(mine, pods, nodes, t, gpu, reserved, E.bound_slack()) or E.held_by_others(
        mine, held, pods, nodes, t, node_labels, gpu
    )


def set_quota(scenario: Scenario, unique: str, quota: dict[str, str]) -> None:
    """Replace the per-test ClusterQueue's quota (the resource groups are replaced whole)."""
    groups = workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", quota)["spec"]["resourceGroups"]
    scenario.custom.patch_cluster_custom_object(
        workloads.KUEUE_GROUP,
        workloads.KUEUE_VERSION,
        "clusterqueues",
        f"{unique}-cq",
        {"spec": {"resourceGroups": groups}},
    )


def roomy(t: Topology) -> dict[str, str]:
    """Quota far above what the cluster holds, so quota is never what blocks a TAS test."""
    return {"cpu": "1000", "memory": "10000Gi", t.gpu_resource: str(t.nodes * t.gpus_per_node * 4)}


# Every test that places pods through a TAS flavor of its own over the cluster's shared nodes
# (`tas_queue`) takes turns with the others (`@pytest.mark.exclusive(SHARED_NODES_TAS)`;
# tests/test_suite_isolation.py checks each one carries it). A flavor's TAS cache counts its own
# Workloads and the pods Kueue does not place by topology, never another flavor's TAS pods (Kueue
# v0.17.0 pkg/controller/tas/non_tas_usage_controller.go, filterPod), so two tests' flavors can
# give the same free GPUs to both groups, and one group then never schedules: a failure of the
# harness's sharing, not of Kueue (seen: KUEUE-SEED-002's last worker Pending with "Insufficient
# nvidia.com/gpu" on its assigned node while KUEUE-TAS-010's rack-filling group ran beside it, run
# 20261207-005338). Tests on Nodes of their own (`SLOTS` flavors) need no turn. Pods outside every
# TAS flavor (other tests' plain-queue and LWS pods) still share the nodes: Kueue counts them once
# bound, so they can keep a group out of every rack, or, bound between TAS's assignment and the
# assigned pods' binding, take the assigned GPUs. A test failing while either shows reads error
# (`gpus_taken_by_others`), not failed.

SHARED_NODES_TAS = "tas-on-shared-nodes"


def rack_of_ranked_workers(cluster: ClusterHandle, name: str) -> tuple[Obj, int]:
    """One group whose workers, one GPU each, exactly fill one rack under a required rack (no podset
    group: the leader is its own podset, in a rack of its own choosing): (the LWS, its worker
    count). Many workers per node make a layout that only happens to be rank-ordered unlikely."""
    t = cluster.topology
    if t.gpus_per_node < 2:
        pytest.skip(f"needs at least 2 GPUs per node, the profile has {t.gpus_per_node}")
    workers = t.gpus_per_node * t.nodes_per_rack
    obj = workloads.lws(name, replicas=1, size=workers + 1, queue=QUEUE)
    # cpu and memory small enough that GPUs alone decide how many workers a node holds, also on
    # kind's 2-cpu nodes that other tests' pods share (100m each would fit only 7 of 8 there)
    workloads.set_requests(obj, "worker", {t.gpu_resource: "1", "cpu": "10m", "memory": "16Mi"})
    workloads.set_tas(obj, t.rack_label, group=None)
    return obj, workers


# -- Workloads ---------------------------------------------------------------------------------


def admitted(wl: Obj) -> bool:
    return P.condition(wl, "Admitted") == "True"


def quota_reserved(wl: Obj) -> bool:
    return P.condition(wl, "QuotaReserved") == "True"


def condition_false(wl: Obj, ctype: str) -> bool:
    """The condition is present and False: Kueue evaluated the Workload and said no."""
    return P.condition(wl, ctype) == "False"


def lws_uid(scenario: Scenario, name: str) -> str:
    uid: str = scenario.lws(name)["metadata"]["uid"]
    return uid


def workload_selector(uid: str) -> str:
    """The label selector of the Workloads of one LWS (Kueue labels them with its UID)."""
    return f"{JOB_UID}={uid}"


def workloads_of(scenario: Scenario, uid: str) -> list[Obj]:
    """The Workloads of one LWS, as they are now."""
    return scenario.list_objects("Workload", selector=workload_selector(uid))


def wait_workloads(
    scenario: Scenario, uid: str, predicate: Callable[[list[Obj]], Any], condition: str, timeout: float = 60
) -> Any:
    return scenario.wait_objects(
        "Workload",
        predicate,
        condition,
        timeout,
        selector=workload_selector(uid),
        what=f"Workloads in {scenario.namespace} ({JOB_UID}={uid})",
    )


def wait_pending(scenario: Scenario, uid: str, name: str) -> Obj:
    """Wait until Kueue has evaluated Workload `name` and left it without quota (QuotaReserved=False).

    Observation windows start after this, so a "nothing escaped" verdict never just means "Kueue
    had not looked yet".
    """
    found: list[Obj] = wait_workloads(
        scenario,
        uid,
        lambda ws: [w for w in ws if w["metadata"]["name"] == name and condition_false(w, "QuotaReserved")],
        f"{name} evaluated and pending (QuotaReserved=False)",
    )
    return found[0]


def by_name(objs: list[Obj]) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if not o["metadata"].get("deletionTimestamp")}


# -- pods of one LWS ---------------------------------------------------------------------------


def selector(lws_name: str) -> str:
    return f"{NAME_LABEL}={lws_name}"


def groups_of(pods: list[Obj]) -> dict[int, list[Obj]]:
    return {int(k): v for k, v in P.by_group(pods).items()}


def whole_ready(group: list[Obj], size: int) -> bool:
    """Every pod of the group present, ungated, bound and Ready."""
    return len(group) == size and all(P.pod_ready(p) and P.bound(p) and not P.gated(p) for p in group)


def whole_held(group: list[Obj], size: int) -> bool:
    """Every pod of the group present and held back by Kueue (gated, unbound, not running)."""
    return len(group) == size and all(P.held(p) for p in group)


def split(replicas: int, size: int, ready: int) -> Callable[[list[Obj]], tuple[list[int], list[int]] | None]:
    """Predicate: all `replicas` groups exist; exactly `ready` are whole-ready, the rest whole-held."""

    def check(pods: list[Obj]) -> tuple[list[int], list[int]] | None:
        groups = groups_of(pods)
        if sorted(groups) != list(range(replicas)):
            return None
        up = sorted(i for i, g in groups.items() if whole_ready(g, size))
        down = sorted(i for i, g in groups.items() if whole_held(g, size))
        return (up, down) if len(up) == ready and len(down) == replicas - ready else None

    return check


def all_ready(replicas: int, size: int) -> Callable[[list[Obj]], list[Obj] | None]:
    def check(pods: list[Obj]) -> list[Obj] | None:
        groups = groups_of(pods)
        if sorted(groups) == list(range(replicas)) and all(whole_ready(g, size) for g in groups.values()):
            return P.live(pods)
        return None

    return check


def escaped(pods: list[Obj], of: str = "") -> str | None:
    """The first of `pods` that left Kueue's gate, was bound or ran (`of`: what it belongs to,
    for the message), or None."""
    for p in pods:
        if not P.held(p):
            gates = [g.get("name") for g in p["spec"].get("schedulingGates") or []]
            return (
                f"pod {p['metadata']['name']}{of} escaped: gates={gates} "
                f"node={p['spec'].get('nodeName')} phase={(p.get('status') or {}).get('phase')}"
            )
    return None


def leak(group_index: int) -> Callable[[list[Obj]], str | None]:
    """Violation for `observe`: a pod of `group_index` left the gate, was bound, or ran."""
    return lambda pods: escaped(groups_of(pods).get(group_index, []), f" of waiting group {group_index}")


def node_labels(scenario: Scenario, pods: list[Obj], key: str) -> dict[str, str]:
    """pod name -> value of node label `key` on the node the pod is bound to."""
    out = {}
    for p in pods:
        node = scenario.core.read_node(p["spec"]["nodeName"])
        labels = (node.metadata.labels if node.metadata else None) or {}
        out[p["metadata"]["name"]] = labels.get(key, "")
    return out


def delete_lws(scenario: Scenario, name: str, propagation: str | None = None) -> None:
    group, _, version = LWS_API.rpartition("/")
    scenario.custom.delete_namespaced_custom_object(
        group, version, scenario.namespace, "leaderworkersets", name, propagation_policy=propagation
    )


def act_then_wait(action: Callable[[], Any], check: Callable[[list[Obj]], Any]) -> Callable[[list[Obj]], Any]:
    """A `wait_for` predicate that runs `action` right after the initial list, then applies `check`.

    `wait_for` watches from the initial list's resourceVersion, so every change `action` causes is
    seen as an event, however briefly it lasts (e.g. a surge Workload that exists for a second).
    """
    fired = False

    def predicate(objs: list[Obj]) -> Any:
        nonlocal fired
        if not fired:
            fired = True
            action()
            return None
        return check(objs)

    return predicate


def gpus(pod: Obj, resource: str) -> int:
    return E.gpus(pod, resource)


def cpu_millis(quantity: str) -> int:
    """A cpu quantity ("32", "500m", "1.5") in millicores."""
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def racks_of(scenario: Scenario, cluster: ClusterHandle, pods: list[Obj]) -> dict[int, set[str]]:
    """group index -> the set of racks its pods are bound to (pod.spec.nodeName -> node labels)."""
    racks = node_labels(scenario, pods, cluster.topology.rack_label)
    out: dict[int, set[str]] = {}
    for idx, group in groups_of(pods).items():
        out[idx] = {racks[p["metadata"]["name"]] for p in group}
    return out


def topology_assigned(wl: Obj) -> list[str]:
    """Names of the Workload's podsets that carry a TAS topologyAssignment."""
    psas = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    return sorted(psa["name"] for psa in psas if psa.get("topologyAssignment"))


def free_per_rack(
    scenario: Scenario, cluster: ClusterHandle, resource: str, resource_version: str | None = None
) -> dict[str, int] | None:
    """rack -> the most `resource` free on one of its nodes that TAS counts for the suites' flavor
    (`kueue_evidence.rack_capacity`, every namespace's pods), as the cluster stood at
    `resource_version` (an Exact list) or, without one, now. None when that cannot be read (e.g.
    a resourceVersion already compacted)."""
    core = scenario.core
    flavor = scenario.objects.get("ResourceFlavor", KUEUE_API, cluster.kueue_flavor_name)
    wanted = (flavor.get("spec") or {}).get("nodeLabels") or {}
    at: dict[str, Any] = {}
    if resource_version:
        at = {"resource_version": resource_version, "resource_version_match": "Exact"}
    try:
        node_list = core.list_node(label_selector=cluster.topology.rack_label, **at)
        pod_list = core.list_pod_for_all_namespaces(**at)
    except ApiException:
        return None
    nodes = scenario.api.sanitize_for_serialization(node_list).get("items") or []
    pods = scenario.api.sanitize_for_serialization(pod_list).get("items") or []
    return E.rack_capacity(nodes, pods, cluster.topology, wanted, resource)


def one_pod_groups_held(
    scenario: Scenario, cluster: ClusterHandle, lws_name: str, replicas: int, worker_gpus: int
) -> list[str]:
    """For `replicas` groups of a leader without GPUs and one worker with `worker_gpus` that did
    not all become Ready: one failure per group not Admitted with both pods Ready, each naming the
    group's state (`kueue_evidence.one_pod_group_failure`)."""
    uid = lws_uid(scenario, lws_name)
    named = by_name(workloads_of(scenario, uid))
    groups = groups_of(P.live(scenario.pods(selector(lws_name))))
    gpu = cluster.topology.gpu_resource
    read: dict[str | None, dict[str, int] | None] = {}

    def capacity(rv: str | None) -> dict[str, int] | None:
        if rv not in read:
            read[rv] = free_per_rack(scenario, cluster, gpu, rv)
        return read[rv]

    out = []
    for idx in range(replicas):
        wl_name = workloads.lws_workload_name(lws_name, uid, idx)
        failure = E.one_pod_group_failure(
            idx, wl_name, named.get(wl_name), groups.get(idx, []), worker_gpus, gpu, capacity
        )
        if failure:
            out.append(failure)
    return out


def admission_refusals(scenario: Scenario, name: str) -> dict[str, int] | None:
    """The API server's refusals of Kueue's admission of Workload `name` (this namespace), as
    Kueue's scheduler logs them: error -> how many times it was logged. None when Kueue's log
    cannot be read here (a provider whose controllers log elsewhere)."""
    records = scenario.controller_log_records("kueue", E.COULD_NOT_ADMIT)
    return None if records is None else E.admission_refusals(records, scenario.namespace, name)


def stuck_without_group_name(pods: list[dict[str, Any]], what: str) -> AssertionError | None:
    """Kueue ungates an admitted group's pods by their pod-group name, so pods it never labelled
    with one stay at its gate: the failure saying so (`what` says which group, and where) when
    every pod of `pods` is gated without the GROUP_NAME label, else None (no pods, or another
    picture, which the caller's own timeout describes better)."""
    held = sorted(p["metadata"]["name"] for p in pods if P.gated(p) and GROUP_NAME not in p["metadata"]["labels"])
    if not pods or len(held) < len(pods):
        return None
    return AssertionError(f"{what} stays at Kueue's admission gate without the {GROUP_NAME} label: {', '.join(held)}")


RECONCILER_ERROR = E.RECONCILER_ERROR  # the "msg" of the records `label_refusals` reads


def label_refusals(records: list[dict[str, Any]] | None, namespace: str, pods: list[str]) -> dict[str, int] | None:
    """The errors Kueue's reconcilers logged for `pods` of `namespace` (a refused label patch is
    one), from the records of Kueue's log with "msg" RECONCILER_ERROR: error -> how many times.
    None when that log cannot be read (`records` None)."""
    return None if records is None else E.reconciler_errors(records, namespace, set(pods))


def held_for_label(stuck: AssertionError, refused: dict[str, int] | None) -> AssertionError:
    """`stuck_without_group_name`'s failure with its cause as Kueue logged it, when it did."""
    if not refused:
        return stuck
    return AssertionError(f"{stuck}; Kueue logged its updates of them refused: {E.describe_errors(refused)}")


def lws_reconciles_after(scenario: Scenario, name: str, after: float) -> int | None:
    """How many times Kueue's LWS reconciler logged reconciling LWS `name` (this namespace) after
    `after` (time.time()); None when Kueue's log cannot be read here."""
    records = scenario.controller_log_records("kueue", E.LWS_RECONCILE)
    return None if records is None else E.reconciles_after(records, scenario.namespace, name, after)


# -- gang groups -------------------------------------------------------------------------------
def gpu_quota(t: Any, gpus: int) -> dict[str, str]:
    """GPUs are the scarce resource; cpu/memory are covered generously."""
    return {"cpu": "100", "memory": "100Gi", t.gpu_resource: str(gpus)}


def gang_lws(
    name: str, cluster: ClusterHandle, replicas: int, size: int, gpus: int = 1, labels: dict[str, str] | None = None
) -> Obj:
    obj = workloads.lws(
        name, replicas=replicas, size=size, gpus=gpus, gpu_resource=cluster.topology.gpu_resource, queue=QUEUE
    )
    obj["metadata"]["labels"].update(labels or {})
    return obj
