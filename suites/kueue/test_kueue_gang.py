"""Gang admission of LWS groups through Kueue (pkg/controller/jobs/leaderworkerset@v0.17.0).

Why this matters: an LWS group (leader + workers) is only useful whole. Kueue is what turns LWS into
gang scheduling (kubernetes-sigs/lws#167): one Workload per group, quota reserved for the whole
group, and every pod of the group held behind the `kueue.x-k8s.io/admission` scheduling gate until
then (the shape of the CNCF AI-conformance gang-scheduling requirement KAR-0053). A partially
started group holds accelerators and does no work, so the negative checks are watched, not
sampled. Quota is expressed in GPUs, 1 per pod, so the arithmetic reads as "pods".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    ClusterHandle,
    Scenario,
    artifact_dir,
    history,
    record,
    saved,
    workloads,
)
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K
from .kueue_helpers import gang_lws, gpu_quota

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


@pytest.mark.requirement("KUEUE-GANG-001")
@pytest.mark.requirement("KUEUE-PODSET-001")
def test_every_group_gets_its_own_workload_and_runs_whole(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    replicas, size = 2, 3
    K.plain_queue(scenario, unique, gpu_quota(lwsc_cluster.topology, replicas * size))
    scenario.create(gang_lws("gang", lwsc_cluster, replicas, size))

    pods = scenario.wait_pods(
        K.all_ready(replicas, size), "every pod of both groups ungated, bound and Ready", selector=K.selector("gang")
    )
    with claim("KUEUE-GANG-001"):
        assert P.names(pods) == P.expected_pod_names("gang", replicas, size)
        assert not [p["metadata"]["name"] for p in pods if p["spec"].get("schedulingGates")], "pods kept a gate"

    uid = K.lws_uid(scenario, "gang")
    expected = {workloads.lws_workload_name("gang", uid, i): i for i in range(replicas)}
    wls = K.wait_workloads(
        scenario,
        uid,
        lambda ws: K.by_name(ws) if set(K.by_name(ws)) == set(expected) and all(map(K.admitted, ws)) else None,
        f"exactly the Workloads {sorted(expected)}, all Admitted",
    )
    for name, wl in wls.items():
        with claim("KUEUE-GANG-001"):
            podsets = {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]}
            whole = {"leader": 1, "worker": size - 1}
            assert podsets == whole, f"{name}: podSets {podsets} do not cover one whole group"
            owners = {(o["kind"], o["uid"]) for o in wl["metadata"].get("ownerReferences") or []}
            assert ("LeaderWorkerSet", uid) in owners, f"{name} is not owned by the LWS"
        with claim("KUEUE-PODSET-001"):
            requests = {ps["name"]: ps.get("topologyRequest") for ps in wl["spec"]["podSets"]}
            assert requests["leader"] is None, (
                f"{name}: the leader podSet of an LWS without topology annotations has topologyRequest "
                f"{requests['leader']!r}"
            )
            worker = requests["worker"]
            asked = {k: worker[k] for k in ("required", "preferred", "unconstrained") if worker and k in worker}
            assert worker is None or (worker.get("podIndexLabel") == P.WORKER_INDEX and not asked), (
                f"{name}: the worker podSet's topologyRequest {worker!r} is not just podIndexLabel {P.WORKER_INDEX}"
            )
    for p in pods:
        with claim("KUEUE-GANG-001"):
            idx = int(p["metadata"]["labels"][P.GROUP_INDEX])
            group = P.kueue_pod_group(p)
            assert group and expected.get(group) == idx, f"pod {p['metadata']['name']} belongs to Kueue group {group}"


@pytest.mark.requirement("KUEUE-GANG-002")
def test_group_without_quota_stays_wholly_gated(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """Quota for one group plus one pod: the second group could start one pod, and must start none.

    A second LWS whose single group needs more GPUs than the whole ClusterQueue has is held too.
    """
    replicas, size = 2, 3
    K.plain_queue(scenario, unique, gpu_quota(lwsc_cluster.topology, size + 1))
    scenario.create(gang_lws("gang", lwsc_cluster, replicas, size))
    (running,), (waiting,) = scenario.wait_pods(
        K.split(replicas, size, ready=1),
        "one group whole and Ready, the other wholly held",
        selector=K.selector("gang"),
    )
    scenario.create(gang_lws("huge", lwsc_cluster, 1, size, gpus=2))  # needs 2*size > size+1 GPUs
    scenario.wait_pods(K.split(1, size, ready=0), "the oversized group wholly held", selector=K.selector("huge"))
    uid, huge_uid = K.lws_uid(scenario, "gang"), K.lws_uid(scenario, "huge")
    pending = K.wait_pending(scenario, uid, workloads.lws_workload_name("gang", uid, waiting))
    K.wait_pending(scenario, huge_uid, workloads.lws_workload_name("huge", huge_uid, 0))
    assert not (pending.get("status") or {}).get("admission"), "a waiting Workload must carry no admission"

    def violation(pods: list[Obj]) -> str | None:
        mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(K.NAME_LABEL) == "gang"]
        other = [p for p in pods if (p["metadata"].get("labels") or {}).get(K.NAME_LABEL) == "huge"]
        return K.leak(waiting)(mine) or K.leak(0)(other)

    escaped = scenario.observe_pods(violation, K.OBSERVE_SECONDS)
    assert escaped is None, escaped

    wls = K.by_name(K.workloads_of(scenario, uid))
    assert not K.quota_reserved(wls[pending["metadata"]["name"]]), "the waiting Workload got quota"
    assert K.admitted(wls[workloads.lws_workload_name("gang", uid, running)])
    pods = scenario.pods(K.selector("gang"))
    assert K.whole_ready(K.groups_of(pods)[running], size), "the admitted group did not stay whole and Ready"


@pytest.mark.requirement("KUEUE-GANG-003")
def test_deleting_admitted_lws_admits_waiting_group_whole(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    size = 3
    K.plain_queue(scenario, unique, gpu_quota(lwsc_cluster.topology, size + 1))
    scenario.create(gang_lws("first", lwsc_cluster, 1, size))
    scenario.wait_pods(K.split(1, size, ready=1), "the first LWS admitted whole", selector=K.selector("first"))
    first_uid = K.lws_uid(scenario, "first")
    scenario.create(gang_lws("second", lwsc_cluster, 1, size))
    scenario.wait_pods(K.split(1, size, ready=0), "the second LWS wholly held", selector=K.selector("second"))
    second_uid = K.lws_uid(scenario, "second")
    K.wait_pending(scenario, second_uid, workloads.lws_workload_name("second", second_uid, 0))

    K.delete_lws(scenario, "first")
    K.wait_workloads(scenario, first_uid, lambda ws: not ws or None, "the deleted LWS's Workloads are gone")
    scenario.wait_pods(
        K.split(1, size, ready=1),
        "the waiting group admitted whole after the quota was released",
        selector=K.selector("second"),
    )
    K.wait_workloads(scenario, second_uid, lambda ws: len(ws) == 1 and K.admitted(ws[0]), "its Workload Admitted")


@pytest.mark.requirement("KUEUE-SCALE-001")
def test_scale_up_admits_new_groups_whole_as_quota_allows(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, tmp_path: Path
) -> None:
    """1 -> 3 groups with quota for 2 groups and 1 pod: one new group starts whole, one waits whole,
    and starts whole when the quota is raised. Both new groups are checked in the watch stream
    (resourceVersion order, pods and Workloads): every pod created behind a scheduling gate, and
    no pod ungated before the write that made its group's Workload Admitted."""
    size = 2
    t = lwsc_cluster.topology
    K.plain_queue(scenario, unique, gpu_quota(t, 2 * size + 1))
    scenario.create(gang_lws("up", lwsc_cluster, 1, size))
    scenario.wait_pods(K.split(1, size, ready=1), "group 0 Ready", selector=K.selector("up"))
    uid = K.lws_uid(scenario, "up")

    with record(scenario.api, scenario.namespace) as tl:
        scenario.patch_lws("up", {"spec": {"replicas": 3}})
        up, (waiting,) = scenario.wait_pods(
            K.split(3, size, ready=2), "two groups whole and Ready, the third wholly held", selector=K.selector("up")
        )
        assert 0 in up, "the original group must keep running"
        K.wait_pending(scenario, uid, workloads.lws_workload_name("up", uid, waiting))
        escaped = scenario.observe_pods(K.leak(waiting), K.OBSERVE_SECONDS, selector=K.selector("up"))
        assert escaped is None, escaped
        names = {workloads.lws_workload_name("up", uid, i) for i in range(3)}
        K.wait_workloads(
            scenario,
            uid,
            lambda ws: set(K.by_name(ws)) == names and sum(map(K.admitted, ws)) == 2,
            "3 Workloads, 2 admitted",
        )

        K.set_quota(scenario, unique, gpu_quota(t, 3 * size))
        scenario.wait_pods(K.split(3, size, ready=3), "the waiting group admitted whole", selector=K.selector("up"))
    events = saved(tl, artifact_dir(tmp_path), "up", lws="up")
    wrong = history.released_before_admission(events, "up", [1, 2], lambda g: workloads.lws_workload_name("up", uid, g))
    timeline = artifact_dir(tmp_path) / "up.timeline.json"
    assert not wrong, f"new groups not gated until admitted: {wrong} (timeline: {timeline})"


@pytest.mark.requirement("KUEUE-SCALE-002")
def test_scale_down_deletes_removed_groups_workloads_and_frees_quota(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    size = 2
    K.plain_queue(scenario, unique, gpu_quota(lwsc_cluster.topology, 3 * size))
    scenario.create(gang_lws("down", lwsc_cluster, 3, size))
    scenario.wait_pods(K.all_ready(3, size), "all three groups Ready", selector=K.selector("down"))
    uid = K.lws_uid(scenario, "down")
    scenario.create(gang_lws("wait", lwsc_cluster, 1, size))
    scenario.wait_pods(K.split(1, size, ready=0), "the other LWS wholly held (queue full)", selector=K.selector("wait"))

    scenario.patch_lws("down", {"spec": {"replicas": 1}})
    keep = workloads.lws_workload_name("down", uid, 0)
    K.wait_workloads(
        scenario,
        uid,
        lambda ws: [w["metadata"]["name"] for w in ws] == [keep] or None,
        f"only {keep} left (the removed groups' Workloads deleted)",
    )
    scenario.wait_pods(K.all_ready(1, size), "the LWS down to group 0", selector=K.selector("down"))
    scenario.wait_pods(
        K.split(1, size, ready=1), "the freed quota admits the waiting group whole", selector=K.selector("wait")
    )


@pytest.mark.requirement("KUEUE-PREEMPT-001")
@pytest.mark.requirement("KUEUE-PREEMPT-002")
def test_higher_priority_evicts_a_whole_lower_priority_group(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims, tmp_path: Path
) -> None:
    """Quota for 2 groups + 1 pod; a high-priority group needs one low group's quota, never half of
    two; every pod of the evicted group is told why before it is deleted."""
    size = 3
    lo, hi = f"{unique}-lo", f"{unique}-hi"
    scenario.create(workloads.workload_priority_class(lo, 100))
    scenario.create(workloads.workload_priority_class(hi, 10000))
    K.plain_queue(scenario, unique, gpu_quota(lwsc_cluster.topology, 2 * size + 1), preemption=True)
    scenario.create(gang_lws("low", lwsc_cluster, 2, size, labels={workloads.PRIORITY_LABEL: lo}))
    before = scenario.wait_pods(K.all_ready(2, size), "both low groups Ready", selector=K.selector("low"))
    uids_before = {i: {p["metadata"]["uid"] for p in g} for i, g in K.groups_of(before).items()}
    names_before = {p["metadata"]["uid"]: p["metadata"]["name"] for p in before}
    low_uid = K.lws_uid(scenario, "low")

    with record(scenario.api, scenario.namespace) as tl:
        scenario.create(gang_lws("high", lwsc_cluster, 1, size, labels={workloads.PRIORITY_LABEL: hi}))
        scenario.wait_pods(K.split(1, size, ready=1), "the high-priority group Ready", selector=K.selector("high"))
        (kept,), (evicted,) = scenario.wait_pods(
            K.split(2, size, ready=1),
            "one low group whole and Ready, the other wholly held",
            selector=K.selector("low"),
        )
    events = saved(tl, artifact_dir(tmp_path), "preempt", lws="low")
    after = K.groups_of(scenario.pods(K.selector("low")))
    with claim("KUEUE-PREEMPT-001"):
        assert {p["metadata"]["uid"] for p in after[kept]} == uids_before[kept], "the surviving group was touched"
        assert not {p["metadata"]["uid"] for p in after[evicted]} & uids_before[evicted], (
            "some pods of the evicted group survived: the group was only partly evicted"
        )
    with claim("KUEUE-PREEMPT-002"):
        told = {
            e.obj.get("uid"): e.obj["terminating_for"]
            for e in events
            if e.kind == "Pod" and e.obj.get("terminating_for")
        }
        want = "TerminationTarget/WorkloadEvictedDueToPreempted"
        wrong = {names_before[u]: told.get(u) for u in sorted(uids_before[evicted]) if told.get(u) != want}
        assert not wrong, (
            f"evicted pods not marked {want} (condition type/reason) before their deletion: {wrong} "
            f"(timeline: {artifact_dir(tmp_path) / 'preempt.timeline.json'})"
        )
    victim = workloads.lws_workload_name("low", low_uid, evicted)
    with claim("KUEUE-PREEMPT-001"):
        K.wait_workloads(
            scenario,
            low_uid,
            lambda ws: [
                w
                for w in ws
                if w["metadata"]["name"] == victim and P.condition(w, "Preempted") == "True" and not K.quota_reserved(w)
            ],
            f"{victim} Preempted=True and without quota",
        )
        escaped = scenario.observe_pods(K.leak(evicted), K.OBSERVE_SECONDS, selector=K.selector("low"))
        assert escaped is None, escaped

        K.delete_lws(scenario, "high")
        scenario.wait_pods(K.all_ready(2, size), "the evicted group re-admitted whole", selector=K.selector("low"))
