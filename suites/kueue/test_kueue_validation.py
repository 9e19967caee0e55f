"""Kueue's LeaderWorkerSet webhook: what it refuses (Kueue v0.17.0
pkg/controller/jobs/leaderworkerset/leaderworkerset_webhook.go) and TAS rank ordering.

Why this matters: a leader/worker pair whose TAS annotations disagree cannot be co-located as the
"Run LeaderWorkerSet" page describes; accepted silently, it would be placed apart. A queue-name
change on a running LWS would move admitted groups between queues behind Kueue's back. Rank
ordering keeps neighbouring worker indexes on neighbouring nodes, which collective-communication
rings rely on.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, ClusterHandle, Scenario, admission, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def _rejected(scenario: Scenario, action: Any, *names: str) -> str:
    """Run `action`; it must be refused as invalid (a 403 webhook denial or a 422 Invalid; a 5xx
    is no refusal, an unreachable webhook an `error`: `lws_conformance.k8s.admission`) with a
    message naming each of `names`. Returns the message."""
    return admission.assert_refused(admission.answer(action), names)


def _refused_and_not_stored(scenario: Scenario, obj: Obj, reason: str) -> None:
    """Creating the LWS `obj` is refused for `reason`, and no LWS of its name is stored after."""
    _rejected(scenario, lambda: scenario.create(obj), reason)
    listing = scenario.list_objects("LeaderWorkerSet")
    stored = admission.stored_despite_refusal("LeaderWorkerSet", obj["metadata"]["name"], listing)
    assert stored is None, stored


def _annotate(obj: Obj, role: str, annotations: dict[str, str]) -> None:
    tpl = obj["spec"]["leaderWorkerTemplate"][f"{role}Template"]
    tpl.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)


@pytest.mark.requirement("KUEUE-VALID-001")
@pytest.mark.requirement("KUEUE-VALID-002")
def test_mismatched_podset_group_annotations_are_rejected(
    scenario: Scenario, lwsc_cluster: ClusterHandle, claim: Claims
) -> None:
    """Leader and worker templates with different podset-group-name values, or one group name with
    different required-topology levels: Kueue's webhook refuses the LWS, and no LWS of that name is
    stored (each requirement's own claim)."""
    t = lwsc_cluster.topology
    with claim("KUEUE-VALID-001"):
        obj = workloads.lws("pgn", replicas=1, size=2, queue=K.QUEUE)
        _annotate(obj, "leader", {workloads.TAS_REQUIRED: t.rack_label, workloads.TAS_GROUP: "a"})
        _annotate(obj, "worker", {workloads.TAS_REQUIRED: t.rack_label, workloads.TAS_GROUP: "b"})
        _refused_and_not_stored(scenario, obj, "can only define groups of exactly 2 pod sets")
    with claim("KUEUE-VALID-002"):
        obj = workloads.lws("top", replicas=1, size=2, queue=K.QUEUE)
        _annotate(obj, "leader", {workloads.TAS_REQUIRED: t.rack_label, workloads.TAS_GROUP: "g"})
        _annotate(obj, "worker", {workloads.TAS_REQUIRED: t.block_label, workloads.TAS_GROUP: "g"})
        _refused_and_not_stored(scenario, obj, "topology consistent with")


@pytest.mark.requirement("KUEUE-VALID-007")
def test_slice_size_without_slice_topology_is_rejected(scenario: Scenario, lwsc_cluster: ClusterHandle) -> None:
    """A kueue.x-k8s.io/podset-slice-size on the leader template, then on the worker template, with
    no podset-slice-required-topology beside it (a valid size, 1, and nothing else Kueue refuses):
    Kueue's webhook refuses each LWS, naming both annotations, and no LWS of either name is stored."""
    for role in ("leader", "worker"):
        obj = workloads.lws(f"slice-{role}", replicas=1, size=2, queue=K.QUEUE)
        _annotate(obj, role, {workloads.TAS_SLICE_SIZE: "1"})
        _rejected(scenario, lambda o=obj: scenario.create(o), workloads.TAS_SLICE_SIZE, workloads.TAS_SLICE_REQUIRED)
        listing = scenario.list_objects("LeaderWorkerSet")
        stored = admission.stored_despite_refusal("LeaderWorkerSet", obj["metadata"]["name"], listing)
        assert stored is None, stored


@pytest.mark.requirement("KUEUE-VALID-003")
def test_queue_name_change_on_running_lws_is_rejected(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """A running LWS's kueue.x-k8s.io/queue-name cannot be changed (immutable on Kueue v0.17; from
    v0.18 once the LWS status counts a Ready replica: the webhook reads status.readyReplicas)."""
    gpu = lwsc_cluster.topology.gpu_resource
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi", gpu: "2"})
    scenario.create(workloads.lws("qn", replicas=1, size=2, gpus=1, gpu_resource=gpu, queue=K.QUEUE))
    scenario.wait_pods(K.all_ready(1, 2), "the group Ready", selector=K.selector("qn"))
    scenario.wait_lws(
        "qn", lambda o: (o.get("status") or {}).get("readyReplicas", 0) >= 1, "status.readyReplicas counts the group"
    )
    _rejected(
        scenario,
        lambda: scenario.patch_lws("qn", {"metadata": {"labels": {workloads.QUEUE_LABEL: "other"}}}),
        "immutable",
        workloads.QUEUE_LABEL,
    )
    assert scenario.lws("qn")["metadata"]["labels"][workloads.QUEUE_LABEL] == K.QUEUE


@pytest.mark.requirement("KUEUE-TAS-005")
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
@pytest.mark.requirement("KUEUE-TAS-009")
def test_tas_places_workers_in_rank_order_within_the_rack(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Workers at one GPU each, exactly filling one rack (required rack): worker indexes fill the
    rack's nodes one after the other, in node order (1-8 on the first node, ...). The ClusterQueue
    has no GPU quota until every pod of the group exists, so Kueue's ungater meets all of them
    gated at once: ungated one by one as they appear, pods would land in creation order whether or
    not Kueue ordered them by rank. With eight workers a node, a Kueue that ignored ranks would
    pack them by index only by rare chance."""
    t = lwsc_cluster.topology
    obj, workers = K.rack_of_ranked_workers(lwsc_cluster, "rk")
    K.tas_queue(scenario, lwsc_cluster, unique, {**K.roomy(t), t.gpu_resource: "0"})
    scenario.create(obj)
    scenario.wait_pods(
        lambda pods: pods if len(P.live(pods)) == workers + 1 and all(P.gated(p) for p in pods) else None,
        f"all {workers + 1} pods of the group created, every one gated (no GPU quota yet)",
        selector=K.selector("rk"),
    )
    K.set_quota(scenario, unique, K.roomy(t))
    pods = scenario.wait_pods(K.all_ready(1, workers + 1), "the group Ready", selector=K.selector("rk"))
    # The leader is its own podset (no podset group here), in a rack of its own choosing: ranks
    # and the required rack apply within the worker podset (Kueue's e2e checks workers only).
    workers_only = [p for p in pods if p["metadata"]["labels"][WORKER_INDEX] != "0"]
    placed = {int(p["metadata"]["labels"][WORKER_INDEX]): p["spec"]["nodeName"] for p in workers_only}
    racks = set(K.node_labels(scenario, workers_only, t.rack_label).values())
    assert len(racks) == 1, f"the workers spread over racks {sorted(racks)} despite a required rack"
    with claim("KUEUE-TAS-005"):
        broken = P.rank_ranges_broken(placed)
        assert not broken, f"consecutive worker ranks not packed node by node within the rack: {broken}"
    with claim("KUEUE-TAS-009"):
        unordered = P.rank_nodes_unordered(placed)
        assert not unordered, f"worker ranks not in node name order within the rack: {unordered}"
