"""LeaderWorkerSet through MultiKueue: submitted to a manager cluster, run on one worker cluster.

Kueue's "Run LeaderWorkerSet in Multi-Cluster" page (v0.17.0): "All workloads from a
LeaderWorkerSet are dispatched to the same worker cluster atomically", and "The LeaderWorkerSet is
created on the worker cluster after all workloads are synchronized." An LWS split over clusters,
or copied to two, would run groups that cannot talk to each other or run twice on scarce GPUs.
Quota is in GPUs, 1 per pod, so the arithmetic reads as "pods".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Claims,
    ClusterHandle,
    WaitTimeout,
    json_log_records,
    observe,
    to_dict,
    wait_for,
    workloads,
)
from lws_conformance.testing import predicates as P

from ..kueue import kueue_helpers as K
from .mk_helpers import MultiKueue, Worker

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


def _quota(cluster: ClusterHandle, gpus: int) -> dict[str, str]:
    return {"cpu": "100", "memory": "100Gi", cluster.topology.gpu_resource: str(gpus)}


def _lws(name: str, cluster: ClusterHandle, replicas: int, size: int) -> Obj:
    return workloads.lws(
        name, replicas=replicas, size=size, gpus=1, gpu_resource=cluster.topology.gpu_resource, queue=K.QUEUE
    )


def _lws_on(w: Worker, namespace: str, name: str) -> Obj | None:
    try:
        obj: Obj = w.custom.get_namespaced_custom_object(LWS_GROUP, LWS_VERSION, namespace, LWS_PLURAL, name)
        return obj
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _holders(mk: MultiKueue, name: str, skip: tuple[str, ...] = ()) -> list[str]:
    """Names of the workers (but `skip`) holding a (live) copy of LWS `name`."""
    ns = mk.manager.namespace
    out = []
    for w in mk.workers:
        if w.name not in skip and (o := _lws_on(w, ns, name)) and not o["metadata"].get("deletionTimestamp"):
            out.append(w.name)
    return out


def _wait_worker_pods(w: Worker, namespace: str, predicate: Callable[[list[Obj]], Any], condition: str) -> Any:
    return wait_for(
        w.api,
        w.core.list_namespaced_pod,
        predicate,
        what=f"pods on worker {w.name} in {namespace}",
        condition=condition,
        timeout=90,
        namespace=namespace,
    )


def _manager_workloads(mk: MultiKueue, uid: str, predicate: Callable[[list[Obj]], Any], condition: str) -> Any:
    return K.wait_workloads(mk.manager, uid, predicate, condition)


def _dispatched(names: set[str]) -> Callable[[list[Obj]], dict[str, str] | None]:
    """Every named manager Workload Admitted with a status.clusterName: name -> clusterName."""

    def check(ws: list[Obj]) -> dict[str, str] | None:
        live = K.by_name(ws)
        if set(live) != names or not all(K.admitted(w) and w["status"].get("clusterName") for w in live.values()):
            return None
        return {n: w["status"]["clusterName"] for n, w in live.items()}

    return check


@pytest.mark.requirement("KUEUE-MK-001")
@pytest.mark.requirement("KUEUE-MK-002")
@pytest.mark.requirement("KUEUE-MK-003")
@pytest.mark.requirement("KUEUE-MK-004")
@pytest.mark.requirement("KUEUE-MK-005")
def test_lws_is_dispatched_whole_to_one_worker_and_removed_with_it(
    multikueue: MultiKueue, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two groups of two; every worker has quota for both. The LWS lands on exactly one worker,
    every group's Workload names that worker, the groups run there, nothing runs on the manager, and
    deleting the LWS on the manager deletes the worker's copy."""
    mk, replicas, size = multikueue, 2, 2
    mk.queues(unique, _quota(lwsc_cluster, 100), _quota(lwsc_cluster, replicas * size))
    mk.manager.create(_lws("mk", lwsc_cluster, replicas, size))
    uid = K.lws_uid(mk.manager, "mk")
    names = {workloads.lws_workload_name("mk", uid, i) for i in range(replicas)}
    placed: dict[str, str] = _manager_workloads(mk, uid, _dispatched(names), "every group Admitted with a clusterName")
    with claim("KUEUE-MK-002"):
        assert len(set(placed.values())) == 1, f"groups of one LWS dispatched to different workers: {placed}"
    target = next(iter(placed.values()))
    worker = next(w for w in mk.workers if w.name == target)
    with claim("KUEUE-MK-003"):
        _wait_worker_pods(worker, mk.manager.namespace, K.all_ready(replicas, size), "every group Ready on the worker")
    with claim("KUEUE-MK-001"):
        holders = _holders(mk, "mk")
        assert holders == [target], f"LWS copies on workers {holders}; want exactly [{target}]"
        copy = _lws_on(worker, mk.manager.namespace, "mk")
        assert copy and copy["spec"]["replicas"] == replicas, f"the copy on {target} is not the submitted LWS"
    with claim("KUEUE-MK-004"):
        escaped = mk.manager.observe_pods(_manager_pod_escaped, K.OBSERVE_SECONDS, selector=K.selector("mk"))
        assert escaped is None, escaped
    with claim("KUEUE-MK-005"):
        K.delete_lws(mk.manager, "mk")
        wait_for(
            worker.api,
            worker.custom.list_namespaced_custom_object,
            lambda objs: not [o for o in objs if o["metadata"]["name"] == "mk"],
            what=f"LeaderWorkerSets on worker {target} in {mk.manager.namespace}",
            condition="the copy of mk deleted after its deletion on the manager",
            timeout=60,
            group=LWS_GROUP,
            version=LWS_VERSION,
            namespace=mk.manager.namespace,
            plural=LWS_PLURAL,
        )


def _manager_pod_escaped(pods: list[Obj]) -> str | None:
    """Violation: a pod on the manager left Kueue's gate, was bound or ran."""
    for p in pods:
        if not P.held(p):
            return f"pod {p['metadata']['name']} ran on the manager: node={p['spec'].get('nodeName')}"
    return None


@pytest.mark.requirement("KUEUE-MK-006")
def test_groups_beyond_worker_quota_wait_wholly_on_the_same_worker(
    multikueue: MultiKueue, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Each worker has quota for one group of two; the LWS has two groups. The LWS goes to one
    worker, where group 0 runs whole and group 1 is wholly held behind the gate (watched); group 1
    is never dispatched to the other worker (which has free quota) and no pod exists there."""
    mk, replicas, size = multikueue, 2, 2
    mk.queues(unique, _quota(lwsc_cluster, 100), _quota(lwsc_cluster, size))
    mk.manager.create(_lws("big", lwsc_cluster, replicas, size))
    uid = K.lws_uid(mk.manager, "big")
    first = workloads.lws_workload_name("big", uid, 0)
    placed = _manager_workloads(mk, uid, _first_dispatched(first), f"{first} dispatched")
    worker = next(w for w in mk.workers if w.name == placed)
    ns = mk.manager.namespace
    _wait_worker_pods(
        worker, ns, K.split(replicas, size, ready=1), "group 0 Ready and group 1 wholly held on the worker"
    )
    escaped = observe(worker.api, worker.core.list_namespaced_pod, K.leak(1), duration=K.OBSERVE_SECONDS, namespace=ns)
    assert escaped is None, f"on worker {placed}: {escaped}"
    for w in mk.workers:
        if w.name == placed:
            continue
        assert _lws_on(w, ns, "big") is None, f"LWS also copied to worker {w.name}"
        elsewhere = [p.metadata.name for p in w.core.list_namespaced_pod(ns).items]
        assert not elsewhere, f"pods {elsewhere} of the LWS on worker {w.name}, not where it was dispatched"
    named = {w["metadata"]["name"]: (w.get("status") or {}).get("clusterName") for w in K.workloads_of(mk.manager, uid)}
    assert set(named.values()) <= {placed, None}, f"groups dispatched to different workers: {named}"


def _first_dispatched(name: str) -> Callable[[list[Obj]], str | None]:
    def check(ws: list[Obj]) -> str | None:
        wl = K.by_name(ws).get(name)
        return wl["status"]["clusterName"] if wl and K.admitted(wl) and wl["status"].get("clusterName") else None

    return check


def _mk_cluster_active(mk: MultiKueue, name: str, want: str) -> Any:
    def check(objs: list[Obj]) -> Obj | None:
        for o in objs:
            if o["metadata"]["name"] == name and P.condition(o, "Active") == want:
                return o
        return None

    return mk.manager.wait_objects(
        "MultiKueueCluster", check, f"Active={want}", timeout=90, what=f"MultiKueueCluster {name} on the manager"
    )


@pytest.mark.destructive
@pytest.mark.alone  # it stops a worker's apiserver the other tests dispatch to
@pytest.mark.requirement("KUEUE-MK-007")
@pytest.mark.requirement("KUEUE-MK-008")
def test_lost_worker_is_reported_and_its_lws_kept(
    multikueue: MultiKueue, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """The worker running an LWS loses its kube-apiserver: its MultiKueueCluster turns Active=False,
    and within workerLostTimeout (15 min default) the LWS stays dispatched to it (Workloads
    Admitted, same clusterName) and is not copied elsewhere; with the apiserver back the cluster is
    Active again and the groups still run there."""
    mk, replicas, size = multikueue, 1, 2
    mk.queues(unique, _quota(lwsc_cluster, 100), _quota(lwsc_cluster, replicas * size))
    mk.manager.create(_lws("lost", lwsc_cluster, replicas, size))
    uid = K.lws_uid(mk.manager, "lost")
    names = {workloads.lws_workload_name("lost", uid, i) for i in range(replicas)}
    placed = _manager_workloads(mk, uid, _dispatched(names), "every group Admitted with a clusterName")
    target = next(iter(placed.values()))
    worker = next(w for w in mk.workers if w.name == target)
    _wait_worker_pods(worker, mk.manager.namespace, K.all_ready(replicas, size), "the group Ready on the worker")
    local = mk.local_cluster(target)
    local.stop_component("kube-apiserver")
    try:
        with claim("KUEUE-MK-007"):
            lost = _mk_cluster_active(mk, target, "False")
            reason = next(c for c in lost["status"]["conditions"] if c["type"] == "Active")
            assert reason.get("message"), f"MultiKueueCluster {target} Active=False without a message: {reason}"
        with claim("KUEUE-MK-008"):
            moved = mk.manager.observe_objects(
                "Workload",
                lambda ws: None if _dispatched(names)(ws) == placed else f"Workloads changed: {_states(ws)}",
                K.OBSERVE_SECONDS,
                selector=K.workload_selector(uid),
            )
            assert moved is None, f"while {target} was unreachable: {moved}"
            others = _holders(mk, "lost", skip=(target,))
            assert not others, f"LWS copied to {others} while {target} was unreachable"
    finally:
        local.start_component("kube-apiserver")
    with claim("KUEUE-MK-007"):  # the sentence's second clause: Active=True again once it is back
        _mk_cluster_active(mk, target, "True")
    _wait_worker_pods(worker, mk.manager.namespace, K.all_ready(replicas, size), "the group still Ready on the worker")


def _states(ws: list[Obj]) -> dict[str, tuple[bool, str | None]]:
    return {n: (K.admitted(w), (w.get("status") or {}).get("clusterName")) for n, w in K.by_name(ws).items()}


LONG_NAME = "long-" + "n" * 45  # 50 characters: the group Workload's name is 74, past a label value's 63


@pytest.mark.requirement("KUEUE-MK-009")
def test_lws_with_a_50_character_name_is_dispatched_and_runs(
    multikueue: MultiKueue, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """One group of two, named with 50 characters: its Workload on the manager
    (leaderworkerset-<name>-0-<hash>, 74 characters) is admitted with a clusterName, the LWS is
    copied to that worker and the group runs Ready there, where the pods name their prebuilt
    Workload. The name is the longest Kueue's own single-cluster e2e test uses."""
    mk, replicas, size = multikueue, 1, 2
    mk.queues(unique, _quota(lwsc_cluster, 100), _quota(lwsc_cluster, replicas * size))
    mk.manager.create(_lws(LONG_NAME, lwsc_cluster, replicas, size))
    uid = K.lws_uid(mk.manager, LONG_NAME)
    names = {workloads.lws_workload_name(LONG_NAME, uid, i) for i in range(replicas)}
    placed = _manager_workloads(mk, uid, _dispatched(names), "the group Admitted with a clusterName")
    target = next(iter(placed.values()))
    worker = next(w for w in mk.workers if w.name == target)
    holders = _holders(mk, LONG_NAME)
    assert holders == [target], f"LWS {LONG_NAME} copied to workers {holders}; want exactly [{target}]"
    try:
        _wait_worker_pods(worker, mk.manager.namespace, K.all_ready(replicas, size), "the group Ready on the worker")
    except WaitTimeout:
        ns = mk.manager.namespace
        found = worker.core.list_namespaced_pod(ns, label_selector=K.selector(LONG_NAME)).items
        stuck = K.stuck_without_group_name(
            [to_dict(worker.api, p) for p in found],
            f"{next(iter(names))} dispatched to {target}, but every pod of its group there",
        )
        if stuck is None:
            raise
        # the cause: the worker's API server refusing its Kueue's label patch, as that Kueue logs it
        held = [p.metadata.name for p in found]
        refused = K.label_refusals(
            json_log_records(mk.local_cluster(target).log("kueue"), K.RECONCILER_ERROR), ns, held
        )
        raise K.held_for_label(stuck, refused) from None
