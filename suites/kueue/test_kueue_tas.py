"""Topology-aware co-location of LWS groups through Kueue TAS (pkg/controller/tas@v0.17.0).

Why this matters: multi-host inference and training put a leader and its workers on one fast
network domain (a rack); a group spread over racks runs, but slowly, and a group split by a
scheduler that ignores the constraint is worse than a group that waits. With
`podset-required-topology` and one `podset-group-name` on both templates, Kueue must place each
group whole in one domain of that level (per group, not across groups), `podset-preferred-topology`
must only prefer, and GPUs must be counted against the nodes' real capacity.

Every number comes from `lwsc_cluster.topology`. Capacity tests are built so that concurrent load
on the shared cluster cannot change their outcome: negative cases ask for something no rack can
hold even when empty; positive cases need well under half the cluster. Quota is always roomy, so
only topology and capacity decide.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    POOL_LABEL,
    ClusterHandle,
    Failures,
    InfraError,
    LocalCluster,
    Scenario,
    WaitTimeout,
    node_manifest,
    workloads,
)
from lws_conformance.testing import kueue_evidence as E
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


def _lws(name: str, replicas: int, size: int) -> Obj:
    return workloads.lws(name, replicas=replicas, size=size, queue=K.QUEUE)


def _per_pod(obj: Obj, requests: dict[str, str]) -> Obj:
    for role in ("leader", "worker"):
        workloads.set_requests(obj, role, requests)
    return obj


def _needs_racks(cluster: ClusterHandle, racks: int) -> None:
    if cluster.topology.racks < racks:
        pytest.skip(f"needs at least {racks} racks, the cluster has {cluster.topology.racks}")


def _one_rack_per_group(scenario: Scenario, cluster: ClusterHandle, pods: list[Obj]) -> dict[int, str]:
    placement = K.racks_of(scenario, cluster, pods)
    spread = {i: sorted(r) for i, r in placement.items() if len(r) != 1}
    assert not spread, f"groups spread over racks: {spread}"
    return {i: next(iter(r)) for i, r in placement.items()}


def _half_node_cpu(cluster: ClusterHandle) -> str:
    """More than half a node's cpu: two such pods never share a node."""
    return f"{K.cpu_millis(cluster.topology.cpu_per_node) // 2 + 1}m"


@pytest.mark.requirement("KUEUE-TAS-001")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_required_rack_colocates_each_group_not_all_groups(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Two groups, each needing more than half a rack's GPUs: each must sit in one rack, so the two
    must sit in different racks. A constraint applied across replicas could not admit them at all.

    With one-node racks a group is a leader and one worker; a group Kueue then keeps Pending while
    a rack has the worker's GPUs free is named as such (Kueue's reason, and the racks free both as
    the cluster stood when Kueue wrote it and after the wait), every other group by its own state,
    not only as the wait's timeout."""
    _needs_racks(lwsc_cluster, 2)
    t = lwsc_cluster.topology
    per_worker = t.gpus_per_node // 2 + 1  # one worker per node
    size = t.nodes_per_rack + 1  # leader (no GPU) + one worker per node of a rack
    assert (size - 1) * per_worker > t.gpus_per_rack / 2
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(t))
    obj = workloads.set_requests(_lws("co", 2, size), "worker", {t.gpu_resource: str(per_worker)})
    scenario.create(workloads.set_tas(obj, t.rack_label))

    try:
        pods = scenario.wait_pods(K.all_ready(2, size), "both groups placed and Ready", selector=K.selector("co"))
    except WaitTimeout:
        held = K.one_pod_groups_held(scenario, lwsc_cluster, "co", 2, per_worker) if size == 2 else []
        if held:
            raise Failures(held) from None
        raise
    racks = _one_rack_per_group(scenario, lwsc_cluster, pods)
    assert racks[0] != racks[1], f"both groups in rack {racks[0]}: they cannot both fit there"
    for p in pods:
        assert t.hostname_label in (p["spec"].get("nodeSelector") or {}), (
            f"pod {p['metadata']['name']} was not pinned by the TAS ungater: {p['spec'].get('nodeSelector')}"
        )
    uid = K.lws_uid(scenario, "co")
    wls = K.wait_workloads(scenario, uid, lambda ws: len(ws) == 2 and all(map(K.admitted, ws)) and ws, "2 Admitted")
    for wl in wls:
        assert K.topology_assigned(wl) == ["leader", "worker"], f"{wl['metadata']['name']}: no topologyAssignment"


@pytest.mark.requirement("KUEUE-TAS-002")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_preferred_rack_prefers_but_does_not_require(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """A group that fits a rack lands in one; a group no rack can hold is still admitted, spread."""
    _needs_racks(lwsc_cluster, 2)
    t = lwsc_cluster.topology
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(t))
    small = _per_pod(_lws("ps", 1, 3), {t.gpu_resource: "1"})
    scenario.create(workloads.set_tas(small, t.rack_label, required=False))
    big_size = t.nodes_per_rack + 1  # every pod needs its own node: one more node than a rack has
    big = _per_pod(_lws("pb", 1, big_size), {"cpu": _half_node_cpu(lwsc_cluster)})
    scenario.create(workloads.set_tas(big, t.rack_label, required=False))

    pods = scenario.wait_pods(K.all_ready(1, 3), "the small group Ready", selector=K.selector("ps"))
    _one_rack_per_group(scenario, lwsc_cluster, pods)
    pods = scenario.wait_pods(
        K.all_ready(1, big_size), "the rack-sized-plus-one group Ready", selector=K.selector("pb")
    )
    spread = K.racks_of(scenario, lwsc_cluster, pods)[0]
    assert len(spread) >= 2, f"{big_size} pods needing a node each fit one rack {spread}?"


@pytest.mark.requirement("KUEUE-TAS-003")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_required_rack_group_too_large_stays_pending_not_split(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """The same rack-plus-one shape as the preferred case, but required: it must wait whole.

    A small required group in the same queue is admitted, so the queue and topology are working.
    """
    t = lwsc_cluster.topology
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(t))
    scenario.create(workloads.set_tas(_lws("rc", 1, 3), t.rack_label))
    big_size = t.nodes_per_rack + 1
    big = _per_pod(_lws("rb", 1, big_size), {"cpu": _half_node_cpu(lwsc_cluster)})
    scenario.create(workloads.set_tas(big, t.rack_label))

    pods = scenario.wait_pods(K.all_ready(1, 3), "the small required group Ready", selector=K.selector("rc"))
    _one_rack_per_group(scenario, lwsc_cluster, pods)
    scenario.wait_pods(K.split(1, big_size, ready=0), "the big group wholly held", selector=K.selector("rb"))
    uid = K.lws_uid(scenario, "rb")
    K.wait_pending(scenario, uid, workloads.lws_workload_name("rb", uid, 0))
    escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector("rb"))
    assert escaped is None, escaped


@pytest.mark.requirement("KUEUE-TAS-004")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_gpu_requests_count_against_rack_capacity(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """A group asking for more GPUs than a rack has (topology.gpus_per_rack) never runs; the same
    group without GPUs is admitted into one rack, so GPUs are what blocks it, not quota or shape."""
    t = lwsc_cluster.topology
    size = t.nodes_per_rack + 1
    assert size * t.gpus_per_node > t.gpus_per_rack
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(t))
    scenario.create(workloads.set_tas(_lws("gc", 1, size), t.rack_label))
    hungry = _per_pod(_lws("gb", 1, size), {t.gpu_resource: str(t.gpus_per_node)})
    scenario.create(workloads.set_tas(hungry, t.rack_label))

    pods = scenario.wait_pods(K.all_ready(1, size), "the GPU-free twin Ready", selector=K.selector("gc"))
    _one_rack_per_group(scenario, lwsc_cluster, pods)
    scenario.wait_pods(K.split(1, size, ready=0), "the GPU-hungry group wholly held", selector=K.selector("gb"))
    uid = K.lws_uid(scenario, "gb")
    K.wait_pending(scenario, uid, workloads.lws_workload_name("gb", uid, 0))
    escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector("gb"))
    assert escaped is None, escaped


# -- pod slots ---------------------------------------------------------------------------------
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
SLOTS = "lwsc.x-k8s.io/pod-slots"  # label (the test's flavor selects it) and taint of the test's own Nodes
SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"


def _slot_node(
    scenario: Scenario, unique: str, name: str, capacity: dict[str, str], labels: dict[str, str] | None = None
) -> None:
    """A kwok Node of this test only, with `capacity` (cpu, memory, pods; a GPU only if named) as
    its allocatable, no block or rack label (outside the harness's pool and its rack counts) but
    `labels`, tainted so that only this test's pods, which tolerate it, land there. Returns once
    kwok reports it Ready."""
    body = node_manifest(scenario.cluster.topology, name, "", "")
    node_labels = body["metadata"]["labels"]
    for key in (POOL_LABEL[0], scenario.cluster.topology.block_label, scenario.cluster.topology.rack_label):
        node_labels.pop(key, None)
    node_labels.update(labels or {})
    node_labels[SLOTS] = unique
    body["spec"]["taints"] = [{"key": SLOTS, "value": unique, "effect": "NoSchedule"}]
    for field in ("capacity", "allocatable"):
        body["status"][field] = dict(capacity)
    scenario.core.create_node(body)  # type: ignore[arg-type]  # the client accepts dicts
    scenario.core.patch_node_status(name, {"status": body["status"]})
    scenario.wait_objects(
        "Node",
        lambda ns: ns if ns and P.condition(ns[0], "Ready") == "True" and not _not_ready_taints(ns[0]) else None,
        "Ready (kwok) and untainted by the node lifecycle controller",
        timeout=30,
        field_selector=f"metadata.name={name}",
        what=f"Node {name}",
    )


def _not_ready_taints(node: Obj) -> list[str]:
    """The node lifecycle controller's taints of a Node it has not yet seen Ready; TAS excludes
    a Node while it has them."""
    keys = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    return [t["key"] for t in node["spec"].get("taints") or [] if t.get("key") in keys]


def _slot_queue(
    scenario: Scenario,
    unique: str,
    levels: list[str],
    quota: dict[str, str] | None = None,
    preemption: dict[str, str] | None = None,
) -> None:
    """Topology `levels`, a flavor of this test's Nodes only, and a roomy ClusterQueue (cpu,
    memory and `quota`, with `preemption` as its spec.preemption) behind the namespace's
    LocalQueue: only the Nodes' capacity and `quota` decide."""
    sc = scenario
    sc.create(workloads.topology(f"{unique}-slots", levels))
    sc.create(workloads.resource_flavor(f"{unique}-rf", {SLOTS: unique}, topology=f"{unique}-slots"))
    cq = workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", {"cpu": "100", "memory": "100Gi", **(quota or {})})
    if preemption:
        cq["spec"]["preemption"] = dict(preemption)
    sc.create(cq)
    sc.create(workloads.local_queue(K.QUEUE, f"{unique}-cq"))


def _delete_lws_then_nodes(scenario: Scenario, lws_name: str | list[str], node_names: list[str]) -> None:
    """Delete the LWS (one name or several), wait for their pods to go, then delete the test's
    Nodes (also when an LWS was never created)."""
    sc = scenario
    names = [lws_name] if isinstance(lws_name, str) else lws_name
    try:
        for name in names:
            try:
                K.delete_lws(sc, name)
            except ApiException as exc:
                if exc.status != 404:  # not created
                    raise
        for name in names:
            sc.wait_gone(
                sc.core.list_namespaced_pod,
                f"the pods of {name} gone",
                namespace=sc.namespace,
                label_selector=K.selector(name),
            )
    finally:
        for name in node_names:
            try:
                sc.core.delete_node(name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


def _held_until_a_node_fits(
    scenario: Scenario,
    cluster: ClusterHandle,
    unique: str,
    small: dict[str, str],
    big: dict[str, str],
    why: str,
) -> None:
    """A required-hostname group of a leader and one worker: while the flavor's only node has the
    `small` capacity, the group must stay Pending and wholly gated (`why` it does not fit); once a
    node of the `big` capacity joins, the group is admitted onto that node and runs whole."""
    scenario.require_kwok("adds Nodes of its own with a chosen capacity")
    sc, host = scenario, cluster.topology.hostname_label
    one, two = f"lwsc-{unique}-small", f"lwsc-{unique}-big"
    toleration = {"key": SLOTS, "operator": "Equal", "value": unique, "effect": "NoSchedule"}
    obj = workloads.set_tas(_lws("sl", 1, 2), host)
    for role in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [toleration]
    try:
        _slot_node(sc, unique, one, small)
        _slot_queue(sc, unique, [host])
        sc.create(obj)
        uid = K.lws_uid(sc, "sl")
        name = workloads.lws_workload_name("sl", uid, 0)
        (wl,) = K.wait_workloads(
            sc,
            uid,
            lambda ws: [w for w in ws if w["metadata"]["name"] == name and P.condition(w, "QuotaReserved")],
            f"{name} evaluated by Kueue (QuotaReserved set)",
        )
        assert P.condition(wl, "QuotaReserved") == "False", (
            f"{name} got quota while its only node {one} {why}: {(wl.get('status') or {}).get('admission')}"
        )
        escaped = sc.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector("sl"))
        assert escaped is None, f"{escaped} (its only node {one} {why})"

        _slot_node(sc, unique, two, big)
        pods = sc.wait_pods(K.all_ready(1, 2), f"the group admitted onto {two} and Ready", selector=K.selector("sl"))
        placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
        assert set(placed.values()) == {two}, f"pods not all on {two}, the one node that holds the group: {placed}"
        (wl,) = K.wait_workloads(
            sc, uid, lambda ws: [w for w in ws if w["metadata"]["name"] == name and K.admitted(w)], f"{name} Admitted"
        )
        assert K.topology_assigned(wl) == ["leader", "worker"], f"{name}: no topologyAssignment for both roles"
    finally:
        _delete_lws_then_nodes(sc, "sl", [one, two])


@pytest.mark.requirement("KUEUE-TAS-006")
@pytest.mark.destructive  # adds Nodes of its own
def test_leader_and_workers_count_against_a_nodes_pod_slots(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Two pods on a node with one pod slot: a TAS that left the leader out of the pod count would
    put both there, where one of them can never be scheduled."""
    roomy = {"cpu": "32", "memory": "256Gi"}
    _held_until_a_node_fits(
        scenario,
        lwsc_cluster,
        unique,
        {**roomy, "pods": "1"},
        {**roomy, "pods": "2"},
        "has one pod slot for the group's two pods",
    )


def _placed_in_one_rack(
    scenario: Scenario,
    cluster: ClusterHandle,
    unique: str,
    hosts: dict[str, dict[str, str]],
    requests: dict[str, dict[str, str]],
    why: str,
    worker_slices: int = 0,
    slices_per_rack: bool = False,
) -> dict[str, list[str]]:
    """One required-rack group of a leader and four workers (`requests` per role) on a rack of
    this test's own Nodes (`hosts`: name suffix -> allocatable). The group must get quota (`why` it
    fits: `_wait_quota`) and run whole; returns host suffix -> the roles it runs.
    Leader and workers are one podset group; with `worker_slices`, they are two podsets instead
    and the workers ask for host slices of that many pods (a podset group forbids slices), or
    rack slices with `slices_per_rack`."""
    scenario.require_kwok("adds Nodes of its own with a chosen capacity")
    sc, host = scenario, cluster.topology.hostname_label
    names = {f"lwsc-{unique}-{h}": h for h in hosts}
    toleration = {"key": SLOTS, "operator": "Equal", "value": unique, "effect": "NoSchedule"}
    # one rack: every Node of this test has the label
    obj = workloads.set_tas(_lws("lf", 1, 5), SLOTS, group=None if worker_slices else "lws-group")
    if worker_slices:
        meta = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"].setdefault("metadata", {})
        level = SLOTS if slices_per_rack else host
        meta.setdefault("annotations", {}).update({SLICE_TOPOLOGY: level, SLICE_SIZE: str(worker_slices)})
    for role, req in requests.items():
        workloads.set_requests(obj, role, req)
    for role in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [toleration]
    extended = {r for req in requests.values() for r in req if "/" in r}
    try:
        for node, h in names.items():
            _slot_node(sc, unique, node, {"memory": "256Gi", "pods": "10", **hosts[h]})
        _slot_queue(sc, unique, [SLOTS, host], {r: "100" for r in extended})
        sc.create(obj)
        uid = K.lws_uid(sc, "lf")
        name = workloads.lws_workload_name("lf", uid, 0)
        last: list[Obj] = []

        def mine(ws: list[Obj]) -> list[Obj] | None:
            last[:] = [w for w in ws if w["metadata"]["name"] == name]
            return last or None

        K.wait_workloads(sc, uid, mine, f"{name} created")
        _wait_quota(sc, uid, name, mine, last, why)
        pods = sc.wait_pods(K.all_ready(1, 5), f"the group admitted and Ready ({why})", selector=K.selector("lf"))
        per_node: dict[str, list[str]] = {}
        for p in pods:
            role = "leader" if p["metadata"]["labels"].get(WORKER_INDEX) == "0" else "worker"
            per_node.setdefault(names[p["spec"]["nodeName"]], []).append(role)
        return {h: sorted(r) for h, r in sorted(per_node.items())}
    finally:
        _delete_lws_then_nodes(sc, "lf", list(names))


def _wait_quota(sc: Scenario, uid: str, name: str, mine: Any, last: list[Obj], why: str, deadline: float = 60) -> None:
    """Wait for Workload `name` to get quota. After K.ADMISSION_SECONDS (× timeouts.scale) without
    it, the failure is named from Kueue's own evidence: the API server refusing Kueue's admission
    of it, as Kueue's scheduler logs it. Without such evidence the wait goes on to `deadline`, so a
    slow admission on a loaded machine is no failure; past it, a Workload Kueue refused with a
    reason (QuotaReserved False) fails with that reason, and one never evaluated with the wait's
    own timeout."""

    def reserved(ws: list[Obj]) -> list[Obj] | None:
        return last if mine(ws) and K.quota_reserved(last[0]) else None

    try:
        K.wait_workloads(sc, uid, reserved, f"{name} QuotaReserved", timeout=K.ADMISSION_SECONDS)
        return
    except WaitTimeout:
        refused = K.admission_refusals(sc, name)
        if refused:
            raise AssertionError(_refused_admission(name, why, refused)) from None
    try:
        K.wait_workloads(sc, uid, reserved, f"{name} QuotaReserved ({why})", timeout=deadline)
    except WaitTimeout:
        refused = K.admission_refusals(sc, name)
        if refused:
            raise AssertionError(_refused_admission(name, why, refused)) from None
        conds = (last[0].get("status") or {}).get("conditions") or [] if last else []
        cond = next((c for c in conds if c["type"] == "QuotaReserved" and c["status"] == "False"), None)
        if cond is None:
            raise
        raise AssertionError(
            f"{name} not given quota though {why}: QuotaReserved False: {cond.get('message', '')}"
        ) from None


def _refused_admission(name: str, why: str, refused: dict[str, int]) -> str:
    """The failure of a Workload whose admission the API server refused (K.admission_refusals):
    every distinct error with how often Kueue logged it."""
    errors = E.describe_errors(refused)
    return (
        f"{name} not given quota within {K.ADMISSION_SECONDS:g}s × timeouts.scale though {why}: QuotaReserved "
        f"never set; Kueue's scheduler logged the API server refusing its admission: {errors}"
    )


@pytest.mark.requirement("KUEUE-TAS-007")
@pytest.mark.destructive  # adds Nodes of its own
def test_leader_placed_where_the_workers_still_fit(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Kueue's own example: a 1-cpu leader and four 2-cpu workers, required in one rack of three
    hosts with 2, 4 and 3 cpus. The group fits only with the leader on the 3-cpu host (3 = 1 + 2,
    4 = 2 + 2, 2 = 2); a TAS that puts the leader on the tightest host that holds it (the 2-cpu
    one) leaves room for three workers and holds a group that fits."""
    got = _placed_in_one_rack(
        scenario,
        lwsc_cluster,
        unique,
        {f"h{c}": {"cpu": str(c)} for c in (2, 4, 3)},
        {"leader": {"cpu": "1"}, "worker": {"cpu": "2"}},
        "its rack holds the group with the leader on the 3-cpu host",
    )
    want = {"h2": ["worker"], "h3": ["leader", "worker"], "h4": ["worker", "worker"]}
    assert got == want, f"pods per node {got}, the one layout that fits: {want}"


@pytest.mark.requirement("KUEUE-TAS-012")
@pytest.mark.destructive  # adds Nodes of its own
def test_the_last_host_is_the_tightest_that_holds_the_rest(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """BestFit, as KEP-2724 describes it: hosts taken from the one with the most free capacity, the
    last one chosen to leave the least free. A leader and four workers of 1 cpu each, required in
    one rack of a 4-, a 1- and a 2-cpu host: the 4-cpu host takes four of the five pods and the
    fifth goes to the 1-cpu host, the tightest that holds it; the 2-cpu host stays empty. (Which
    pod is the fifth, the leader or a worker, the promise leaves open.)"""
    got = _placed_in_one_rack(
        scenario,
        lwsc_cluster,
        unique,
        {"a4": {"cpu": "4"}, "b1": {"cpu": "1"}, "c2": {"cpu": "2"}},
        {"leader": {"cpu": "1"}, "worker": {"cpu": "1"}},
        "its rack has 7 cpus for the group's 5",
    )
    pods = {h: len(roles) for h, roles in got.items()}
    assert pods == {"a4": 4, "b1": 1}, (
        f"pods per node {got}: the most free host first (a4, 4 of the 5 pods), then the tightest host that "
        "holds the fifth (b1), leaving c2 empty"
    )


@pytest.mark.requirement("KUEUE-TAS-012")
@pytest.mark.destructive  # adds Nodes of its own
def test_workers_that_need_every_host_run_on_all_of_them(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """BestFit selects as many hosts as the pods need: four 1-cpu workers asking for one slice of
    four in the rack (so the hosts below it are chosen pod by pod), required in one rack of a 2-, a
    1- and a 1-cpu host, fill all three (two, one and one workers); the leader asks for a GPU and
    runs on a fourth host, whose memory holds no worker. Neither of the first two hosts holds the
    rest: a TAS that lost a host it had only partly filled would leave workers without a place."""
    gpu = lwsc_cluster.topology.gpu_resource
    got = _placed_in_one_rack(
        scenario,
        lwsc_cluster,
        unique,
        {
            "l": {"cpu": "1", gpu: "1", "memory": "1Gi"},
            "a2": {"cpu": "2"},
            "b1": {"cpu": "1"},
            "c1": {"cpu": "1"},
        },
        {"leader": {"cpu": "1", gpu: "1", "memory": "512Mi"}, "worker": {"cpu": "1", "memory": "2Gi"}},
        "its rack holds the leader on its GPU host and the workers on every other host",
        worker_slices=4,
        slices_per_rack=True,
    )
    want = {"a2": ["worker"] * 2, "b1": ["worker"], "c1": ["worker"], "l": ["leader"]}
    assert got == want, f"pods per node {got}: the workers need every host of the rack but the leader's: {want}"


@pytest.mark.requirement("KUEUE-TAS-013")
@pytest.mark.destructive  # adds Nodes of its own
def test_required_workers_in_slices_are_placed_by_best_fit(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """A required rack is placed by BestFit also when the workers ask for host slices: four 1-cpu
    workers in slices of two, on a rack of a 6-, a 4- and a 2-cpu host (and a host only the leader,
    asking for its GPU, fits). BestFit takes the most free host first and, since one host holds both
    slices, the tightest host that does: the 4-cpu host, left full. LeastFreeCapacity, the
    algorithm of unconstrained requests, would start from the 2-cpu host and split the slices."""
    gpu = lwsc_cluster.topology.gpu_resource
    got = _placed_in_one_rack(
        scenario,
        lwsc_cluster,
        unique,
        {"l": {"cpu": "1", gpu: "1"}, "a4": {"cpu": "4"}, "b2": {"cpu": "2"}, "c6": {"cpu": "6"}},
        {"leader": {"cpu": "1", gpu: "1"}, "worker": {"cpu": "1"}},
        "its rack holds the leader on its GPU host and both slices of workers",
        worker_slices=2,
    )
    want = {"a4": ["worker"] * 4, "l": ["leader"]}
    assert got == want, f"pods per node {got}: BestFit puts both slices on the tightest host that holds them: {want}"


@pytest.mark.requirement("KUEUE-TAS-014")
@pytest.mark.destructive  # adds Nodes of its own and deletes one
def test_a_deleted_host_is_replaced_without_moving_the_rest_of_the_group(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Node hot swap: a leader and two workers of 1 cpu each, required in one rack of four 1-cpu
    hosts, run on three of them. The first worker's host is deleted; Kueue finds the fourth host
    for that worker without evicting the group's Workload or moving the others: the group runs
    whole again on the leader's host, the second worker's host and the spare one. (The second
    worker keeps a host of the worker PodSet's assignment, so Kueue must derive the required domain
    from it and merge the replacement into it. The failed worker makes LWS recreate the group under
    its default restart policy, and the new workers take the PodSet's hosts by rank, so the check
    is per role: the leader's host and the set of the workers' hosts. With restartPolicy None the
    other workers keep running and the replacement's rank order matters:
    test_a_deleted_hosts_worker_is_replaced_on_the_spare_host_beside_the_running_ones.)"""
    scenario.require_kwok("adds Nodes of its own and deletes one")
    sc, host = scenario, lwsc_cluster.topology.hostname_label
    names = [f"lwsc-{unique}-h{i}" for i in range(4)]
    toleration = {"key": SLOTS, "operator": "Equal", "value": unique, "effect": "NoSchedule"}
    obj = _per_pod(workloads.set_tas(_lws("hs", 1, 3), SLOTS), {"cpu": "1"})
    for role in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [toleration]

    def role_nodes(pods: list[Obj]) -> dict[str, list[str]]:
        got: dict[str, list[str]] = {"leader": [], "worker": []}
        for p in pods:
            role = "leader" if p["metadata"]["labels"].get(WORKER_INDEX) == "0" else "worker"
            got[role].append(p["spec"].get("nodeName", ""))
        return {role: sorted(nodes) for role, nodes in got.items()}

    try:
        uid, wl_name, pods = _group_on_one_cpu_hosts(sc, unique, names, host, obj)
        first = role_nodes(pods)
        lost = next(p["spec"]["nodeName"] for p in pods if p["metadata"]["name"] == "hs-0-1")
        (spare,) = set(names) - {n for nodes in first.values() for n in nodes}
        sc.core.delete_node(lost)
        want = {"leader": first["leader"], "worker": sorted({*first["worker"], spare} - {lost})}

        def swapped(pods: list[Obj]) -> dict[str, str] | None:
            ready = K.all_ready(1, 3)(pods)
            return want if ready and role_nodes(ready) == want else None

        # the pods of a deleted Node go when pod GC deletes them (after its 40 s quarantine)
        sc.wait_pods(
            swapped, f"the group Ready again, {want}, after {lost} was deleted", timeout=180, selector=K.selector("hs")
        )
        _swapped_within_the_assignment(sc, uid, wl_name)
    finally:
        _delete_lws_then_nodes(sc, "hs", names)


def _cpu_of_each_pod(obj: Obj, resources: str) -> Obj:
    """One cpu (and 64Mi) per container, as requests, or as limits only (`resources` "limits"):
    Kueue treats the limits as requests, and the API server defaults the pods' requests from them."""
    for role in ("leaderTemplate", "workerTemplate"):
        for c in obj["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"]:
            c["resources"] = {resources: {"cpu": "1", "memory": "64Mi"}}
    return obj


@pytest.mark.requirement("KUEUE-TAS-014")
@pytest.mark.destructive  # adds Nodes of its own and deletes one
@pytest.mark.parametrize("resources", ["requests", "limits"])
def test_a_deleted_hosts_worker_is_replaced_on_the_spare_host_beside_the_running_ones(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, resources: str
) -> None:
    """Node hot swap of one worker while the others run: a leader and two workers of 1 cpu each (as
    container requests, or as limits only), required in one rack of three 1-cpu hosts, with LWS
    restartPolicy None, so that only the pod of a lost host is recreated. Once the group runs, a
    spare 1-cpu host joins the rack, its name sorting after the other three; then the first worker's
    (rank 0's) host is deleted. Kueue must put the spare host in its place without evicting the
    Workload: the replacement first worker runs on the spare host, the leader and the second worker
    keep running on their hosts (the same pods, same UIDs). (The replacement assignment lists the
    worker PodSet's hosts by name, so rank 0 now comes first on the second worker's host: the
    ungater must see that host taken by the running second worker and pin the replacement to the
    free one, the spare; with limits only, Kueue must count the limits as the replacement's
    requests, so that no taken host looks free.)"""
    scenario.require_kwok("adds Nodes of its own and deletes one")
    sc, host = scenario, lwsc_cluster.topology.hostname_label
    names = [f"lwsc-{unique}-h{i}" for i in range(3)]
    spare = f"lwsc-{unique}-h3"  # sorts after the other three
    obj = _one_worker_swapped_lws("hw", unique, resources)

    try:
        uid, wl_name, pods = _group_on_one_cpu_hosts(sc, unique, names, host, obj)
        first = _placed(pods)
        _slot_node(sc, unique, spare, ONE_CPU_HOST)
        lost = first["hw-0-1"]
        sc.core.delete_node(lost)
        _replaced_on_the_spare_host(sc, "hw", pods, spare, f"after {lost} was deleted")
        _swapped_within_the_assignment(sc, uid, wl_name)
    finally:
        _delete_lws_then_nodes(sc, "hw", [*names, spare])


@pytest.mark.requirement("KUEUE-TAS-016")
@pytest.mark.destructive  # adds Nodes of its own, deletes one and restarts Kueue
def test_a_node_replacement_pending_over_a_kueue_restart_completes_after_it(
    private_scenario: Scenario, private_cluster: LocalCluster, unique: str
) -> None:
    """A node hot swap that waits over a Kueue restart: a leader and two workers whose containers give
    1 cpu as limits only, required in one rack of three 1-cpu hosts, restartPolicy None. The first
    worker's host is deleted while the rack has no spare host: Kueue records the host as unhealthy
    in the Workload's status and finds no replacement yet. Kueue is stopped, a spare 1-cpu host
    joins the rack, and Kueue is started again, all before pod GC removes the lost pod (40 s), so
    the restarted Kueue finds the Workload waiting for its replacement when it starts: the
    replacement first worker must run on the spare host, the leader and the second worker keep
    running on their hosts (the same pods, same UIDs), and the Workload stays admitted, not evicted.
    (The restarted Kueue queues the replacement from the Workload as it reads it at start, whose
    limits must count as requests, so that no taken host looks free. A restart that ends after pod
    GC removed the lost pod reads error: the test cannot tell which Kueue its replacement met.)"""
    sc, host = private_scenario, private_scenario.cluster.topology.hostname_label
    sc.require_kwok("adds Nodes of its own and deletes one")
    names = [f"lwsc-{unique}-h{i}" for i in range(3)]
    spare = f"lwsc-{unique}-h3"
    obj = _one_worker_swapped_lws("hk", unique, "limits")

    try:
        uid, wl_name, pods = _group_on_one_cpu_hosts(sc, unique, names, host, obj)
        first = _placed(pods)
        lost = first["hk-0-1"]
        sc.core.delete_node(lost)
        K.wait_workloads(
            sc,
            uid,
            lambda ws: [w for w in ws if w["metadata"]["name"] == wl_name and lost in _unhealthy_nodes(w)] or None,
            f"{wl_name} recording {lost} as unhealthy (status.unhealthyNodes)",
            timeout=20,
        )
        private_cluster.stop_component("kueue")
        try:
            _slot_node(sc, unique, spare, ONE_CPU_HOST)
        finally:
            private_cluster.start_component("kueue")
        old = next(p["metadata"]["uid"] for p in pods if p["metadata"]["name"] == "hk-0-1")
        if old not in {p["metadata"]["uid"] for p in sc.list_objects("Pod", K.selector("hk"))}:
            # pod GC removed the lost pod before Kueue was back: its replacement may have met the
            # Kueue of before the restart, or none, so the restarted one's work cannot be told
            raise InfraError(
                f"hk-0-1 on the deleted {lost} was gone before Kueue had restarted (pod GC's 40 s "
                "quarantine passed while Kueue was down): the restart came too late to test"
            )
        _replaced_on_the_spare_host(sc, "hk", pods, spare, f"after {lost} was deleted and Kueue restarted")
        _swapped_within_the_assignment(sc, uid, wl_name)
    finally:
        _delete_lws_then_nodes(sc, "hk", [*names, spare])


ONE_CPU_HOST = {"cpu": "1", "memory": "256Gi", "pods": "10"}


def _group_on_one_cpu_hosts(
    sc: Scenario, unique: str, names: list[str], host: str, obj: Obj
) -> tuple[str, str, list[Obj]]:
    """The test's 1-cpu slot hosts `names` and its TAS queue, then LWS `obj` (one group of a leader
    and two workers) created and Ready on three of them: its UID, its group's Workload name, its pods."""
    name = obj["metadata"]["name"]
    for node in names:
        _slot_node(sc, unique, node, ONE_CPU_HOST)
    _slot_queue(sc, unique, [SLOTS, host])
    sc.create(obj)
    uid = K.lws_uid(sc, name)
    pods = sc.wait_pods(K.all_ready(1, 3), "the group Ready on three hosts", selector=K.selector(name))
    return uid, workloads.lws_workload_name(name, uid, 0), pods


def _one_worker_swapped_lws(name: str, unique: str, resources: str) -> Obj:
    """LWS `name` of one group, a leader and two workers of 1 cpu each (`resources`: as requests or
    as limits only), required in one rack of the test's slot hosts, restartPolicy None (only the
    pod of a lost host is recreated)."""
    toleration = {"key": SLOTS, "operator": "Equal", "value": unique, "effect": "NoSchedule"}
    obj = _cpu_of_each_pod(workloads.set_tas(_lws(name, 1, 3), SLOTS), resources)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    for role in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [toleration]
    return obj


def _placed(pods: list[Obj]) -> dict[str, str]:
    """Each live pod's node, by pod name."""
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in P.live(pods)}


def _replaced_on_the_spare_host(sc: Scenario, name: str, pods: list[Obj], spare: str, after: str) -> None:
    """Wait until `<name>-0-1` (rank 0's worker, whose host was lost) runs again on `spare` and the
    group is Ready, every other pod on its node of `pods` with the same UID (restartPolicy None)."""
    lost_pod, first = f"{name}-0-1", _placed(pods)
    seen: list[Obj] = []
    want = {**first, lost_pod: spare}

    def swapped(objs: list[Obj]) -> list[Obj] | None:
        seen[:] = P.live(objs)
        ready = K.all_ready(1, 3)(objs)
        return ready if ready and _placed(ready) == want else None

    try:
        # the pod of a deleted Node goes when pod GC deletes it (after its 40 s quarantine)
        now = sc.wait_pods(
            swapped,
            f"{lost_pod} replaced on the spare host and the group Ready, {want}, {after}",
            timeout=180,
            selector=K.selector(name),
        )
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}\n{_where_the_replacement_went(seen, lost_pod, spare, first)}") from None
    moved = _recreated(pods, now, lost_pod)
    assert not moved, f"pods other than {lost_pod} recreated (restartPolicy None), new UIDs: {moved}"


def _swapped_within_the_assignment(sc: Scenario, uid: str, wl_name: str) -> None:
    """The group's Workload `wl_name` is Admitted and was never evicted: the lost host was replaced
    within its topology assignment."""
    (wl,) = K.wait_workloads(
        sc,
        uid,
        lambda ws: [w for w in ws if w["metadata"]["name"] == wl_name and K.admitted(w)] or None,
        f"{wl_name} Admitted",
    )
    assert P.condition(wl, "Evicted") is None, (
        f"{wl_name} was evicted (conditions {(wl.get('status') or {}).get('conditions')}): "
        "the deleted host was not swapped within the assignment"
    )


def _unhealthy_nodes(wl: Obj) -> list[str]:
    """The hosts Kueue has recorded as failed for Workload `wl` (status.unhealthyNodes)."""
    return [n.get("name", "") for n in (wl.get("status") or {}).get("unhealthyNodes") or []]


def _recreated(first: list[Obj], now: list[Obj], lost: str) -> dict[str, str]:
    """The pods of `first` other than `lost` that `now` has with another UID (or not at all):
    under restartPolicy None, LWS recreates only the pod that failed."""
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in now}
    return {
        p["metadata"]["name"]: uids.get(p["metadata"]["name"], "gone")
        for p in first
        if p["metadata"]["name"] != lost and uids.get(p["metadata"]["name"]) != p["metadata"]["uid"]
    }


def _where_the_replacement_went(pods: list[Obj], name: str, spare: str, first: dict[str, str]) -> str:
    """Where the replacement `name` was last seen: its phase, node, and the host Kueue's ungating
    pinned it to (nodeSelector), beside the hosts the others ran on before (`first`)."""
    pod = next((p for p in pods if p["metadata"]["name"] == name), None)
    if pod is None:
        return f"{name}: no live pod last seen; the spare host is {spare}; the others ran on {first}"
    spec, status = pod["spec"], pod.get("status") or {}
    gates = [g["name"] for g in spec.get("schedulingGates") or []]
    why = next(
        (
            f"{c.get('reason')}: {c.get('message')}"
            for c in status.get("conditions") or []
            if c["type"] == "PodScheduled"
        ),
        "",
    )
    return (
        f"{name} last seen {status.get('phase')} on {spec.get('nodeName') or 'no node'}, nodeSelector "
        f"{spec.get('nodeSelector')}, scheduling gates {gates}, PodScheduled {why or 'unset'}; the spare host is "
        f"{spare}; before the deletion the group ran on {first}"
    )


@pytest.mark.requirement("KUEUE-TAS-008")
@pytest.mark.destructive  # adds Nodes of its own
def test_leader_placed_on_the_one_host_with_its_resource(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """A leader asking for a GPU and four 1-cpu workers, required in one rack of a 1-cpu host with
    one GPU and a 4-cpu host without. Only the GPU host holds the leader, and then has no cpu left:
    the workers go to the 4-cpu host. A TAS that counted the 4-cpu host as able to hold the leader
    (it fits every worker there with the leader's slot still free) would pin the leader where its
    GPU does not exist."""
    gpu = lwsc_cluster.topology.gpu_resource
    got = _placed_in_one_rack(
        scenario,
        lwsc_cluster,
        unique,
        {"gpu": {"cpu": "1", gpu: "1"}, "cpu": {"cpu": "4"}},
        {"leader": {"cpu": "1", gpu: "1"}, "worker": {"cpu": "1"}},
        "its rack holds the group with the leader on the GPU host",
    )
    want = {"cpu": ["worker"] * 4, "gpu": ["leader"]}
    assert got == want, f"pods per node {got}, the one layout that fits: {want}"


@pytest.mark.requirement("KUEUE-TAS-010")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_replaced_workers_are_ungated_every_time(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """Workers exactly filling one required rack, restartPolicy None: two workers (the lowest and
    the highest index) deleted one after the other. Each replacement is created behind Kueue's
    gates and must be ungated and run: the TopologyUngater keeps the PodSet's pods ungated in the
    assigned number, not only at admission. The second deletion finds the first replacement and every other worker
    already ungated, which the ungater must tell apart from pods it still has to release. (Where a
    replacement lands is not a check here: the rack is full, so the slot its predecessor freed is
    the only one that can hold it.)"""
    obj, workers = K.rack_of_ranked_workers(lwsc_cluster, "rr")
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    K.tas_queue(scenario, lwsc_cluster, unique, K.roomy(lwsc_cluster.topology))
    scenario.create(obj)
    pods = scenario.wait_pods(K.all_ready(1, workers + 1), "the group Ready", selector=K.selector("rr"))
    for name in ("rr-0-1", f"rr-0-{workers}"):  # on the rack's first and last node
        old = next(p["metadata"]["uid"] for p in pods if p["metadata"]["name"] == name)

        def replaced(objs: list[Obj], name: str = name, old: str = old) -> list[Obj] | None:
            fresh = next((p for p in P.live(objs) if p["metadata"]["name"] == name), None)
            if not fresh or fresh["metadata"]["uid"] == old:
                return None
            return K.all_ready(1, workers + 1)(objs)

        pods = scenario.wait_pods(
            K.act_then_wait(lambda name=name: scenario.core.delete_namespaced_pod(name, scenario.namespace), replaced),
            f"{name} deleted, replaced (new UID), ungated and Ready: the group Ready again",
            selector=K.selector("rr"),
        )


# -- preemption within a TAS ClusterQueue ------------------------------------------------------
SLOT_RACK = "lwsc.x-k8s.io/slot-rack"  # the rack label of a test's own Nodes (its topology's top level)


def _rack_per_group(scenario: Scenario, pods: list[Obj]) -> dict[int, str]:
    """group index -> the one SLOT_RACK its pods run in; fails naming every group spread over racks."""
    racks = K.node_labels(scenario, pods, SLOT_RACK)
    placement = {i: {racks[p["metadata"]["name"]] for p in g} for i, g in K.groups_of(pods).items()}
    spread = {i: sorted(r) for i, r in placement.items() if len(r) != 1}
    assert not spread, f"groups spread over racks: {spread}"
    return {i: next(iter(r)) for i, r in placement.items()}


def _pending_reason(scenario: Scenario, lws_name: str) -> str:
    """What Kueue says of the Workloads of `lws_name`: name, QuotaReserved status and message."""
    uid = K.lws_uid(scenario, lws_name)
    said = []
    for wl in K.workloads_of(scenario, uid):
        conds = (wl.get("status") or {}).get("conditions") or []
        qr = next((c for c in conds if c["type"] == "QuotaReserved"), None)
        state = f"QuotaReserved {qr['status']}: {qr.get('message', '')}" if qr else "never evaluated (no QuotaReserved)"
        said.append(f"{wl['metadata']['name']} {state}")
    return "; ".join(said) or "no Workload"


@pytest.mark.requirement("KUEUE-TAS-015")
@pytest.mark.destructive  # adds Nodes of its own
@pytest.mark.parametrize("gpu_short", [False, True], ids=["quota-fits", "gpu-quota-short"])
def test_a_higher_priority_group_preempts_within_one_rack(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, gpu_short: bool
) -> None:
    """A TAS ClusterQueue with withinClusterQueue LowerPriority over two racks of one host each (4
    cpu, 2 GPUs). Two low-priority groups of two 1.5-cpu pods, required in a rack, hold 3 cpu of
    each rack; a high-priority required-rack group of two 1-cpu pods fits the free cpu quota but
    neither rack's 1 free cpu. It must preempt the low group of one rack (that group's pods
    replaced, held at Kueue's gate) and run whole there; the other low group runs on untouched.

    gpu-quota-short is the case of kubernetes-sigs/kueue#10193 ("preemption with multiple
    resources"): the GPU quota (2) is all held by a third low-priority group of two 1-GPU pods and
    the high group's pods ask for a GPU each, so the GPU quota needs a preemption too while cpu
    quota fits and cpu is fragmented: the victims must be the GPU group and the low group of one
    rack. A Kueue that looks for victims only among the users of the GPU quota frees the GPUs but
    no rack's cpu, and leaves the high group pending."""
    scenario.require_kwok("adds Nodes of its own with a chosen capacity")
    sc, host, gpu = scenario, lwsc_cluster.topology.hostname_label, lwsc_cluster.topology.gpu_resource
    nodes = {f"lwsc-{unique}-r{i}": f"r{i}" for i in (1, 2)}
    toleration = {"key": SLOTS, "operator": "Equal", "value": unique, "effect": "NoSchedule"}
    lo, hi = f"{unique}-lo", f"{unique}-hi"

    def group(name: str, replicas: int, requests: dict[str, str], priority: str, required: bool = True) -> Obj:
        obj = _per_pod(workloads.set_tas(_lws(name, replicas, 2), SLOT_RACK, required=required), requests)
        obj["metadata"]["labels"][workloads.PRIORITY_LABEL] = priority
        for role in ("leaderTemplate", "workerTemplate"):
            obj["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [toleration]
        return obj

    names = ["low", "gpus", "high"] if gpu_short else ["low", "high"]
    try:
        for node, rack in nodes.items():
            _slot_node(sc, unique, node, {"cpu": "4", "memory": "256Gi", "pods": "10", gpu: "2"}, {SLOT_RACK: rack})
        sc.create(workloads.workload_priority_class(lo, 100))
        sc.create(workloads.workload_priority_class(hi, 10000))
        _slot_queue(
            sc, unique, [SLOT_RACK, host], {gpu: "2"} if gpu_short else None, {"withinClusterQueue": "LowerPriority"}
        )
        sc.create(group("low", 2, {"cpu": "1500m"}, lo))
        low = sc.wait_pods(K.all_ready(2, 2), "both low-priority groups Ready", selector=K.selector("low"))
        low_racks = _rack_per_group(sc, low)
        assert sorted(low_racks.values()) == ["r1", "r2"], f"the low groups' racks {low_racks}: one group per rack"
        low_uids = {i: {p["metadata"]["uid"] for p in g} for i, g in K.groups_of(low).items()}
        victims = {"low": K.lws_uid(sc, "low")}
        if gpu_short:
            sc.create(group("gpus", 1, {"cpu": "100m", gpu: "1"}, lo, required=False))
            sc.wait_pods(K.all_ready(1, 2), "the low-priority GPU group Ready", selector=K.selector("gpus"))
            victims["gpus"] = K.lws_uid(sc, "gpus")

        sc.create(group("high", 1, {"cpu": "1", **({gpu: "1"} if gpu_short else {})}, hi))
        try:
            pods = sc.wait_pods(
                K.all_ready(1, 2),
                "the high-priority group admitted and Ready",
                timeout=120,
                selector=K.selector("high"),
            )
        except WaitTimeout:
            also = " and the GPU group" if gpu_short else ""
            raise AssertionError(
                "the high-priority required-rack group never ran, though preempting the low group of "
                f"either rack{also} makes room for it: {_pending_reason(sc, 'high')}"
            ) from None
        (rack,) = set(_rack_per_group(sc, pods).values())
        (evicted,) = [i for i, r in low_racks.items() if r == rack]
        (kept,) = [i for i, r in low_racks.items() if r != rack]

        now = K.groups_of(sc.pods(K.selector("low")))
        kept_now = {p["metadata"]["uid"] for p in now.get(kept, []) if P.pod_ready(p)}
        assert kept_now == low_uids[kept], (
            f"the low group in rack {low_racks[kept]}, where the high group does not run, was touched: "
            f"Ready pods {sorted(kept_now)}, before {sorted(low_uids[kept])}"
        )
        survivors = {p["metadata"]["name"] for p in now.get(evicted, []) if p["metadata"]["uid"] in low_uids[evicted]}
        assert not survivors, f"pods of the low group in rack {rack} survived its preemption: {sorted(survivors)}"
        preempted = {"low": workloads.lws_workload_name("low", victims["low"], evicted)}
        if gpu_short:
            preempted["gpus"] = workloads.lws_workload_name("gpus", victims["gpus"], 0)
        for name, wl_name in preempted.items():
            K.wait_workloads(
                sc,
                victims[name],
                lambda ws, wl_name=wl_name: [
                    w
                    for w in ws
                    if w["metadata"]["name"] == wl_name
                    and P.condition(w, "Preempted") == "True"
                    and not K.quota_reserved(w)
                ],
                f"{wl_name} Preempted=True and without quota",
            )
        escaped = sc.observe_pods(K.leak(evicted), K.OBSERVE_SECONDS, selector=K.selector("low"))
        assert escaped is None, escaped
    finally:
        _delete_lws_then_nodes(sc, names, list(nodes))
