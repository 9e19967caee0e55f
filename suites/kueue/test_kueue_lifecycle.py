"""Kueue-managed LWS beyond plain admission: priority changes, deactivation, restart policy None,
quick scale up/down, unequal leader/worker requests, size-1 groups, LeaderReady startup and a
percentage maxSurge (Kueue pkg/controller/jobs/leaderworkerset; Kueue's own e2e test/e2e/singlecluster/
leaderworkerset_test.go covers each of these at v0.17.0).

Why this matters: these are the day-2 operations of a gang-scheduled LWS. A priority bump that
Kueue ignores, a deactivation that deletes the Workload, a single pod restart that bypasses the
gate or a percentage surge that hangs the rollout all leave accelerators idle or over-committed.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    ClusterHandle,
    Failures,
    InfraError,
    Scenario,
    WaitTimeout,
    artifact_dir,
    history,
    images,
    record,
    saved,
    workloads,
)
from lws_conformance.testing import kueue_evidence as E
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


def _quota(cluster: ClusterHandle, gpus: int) -> dict[str, str]:
    return {"cpu": "100", "memory": "100Gi", cluster.topology.gpu_resource: str(gpus)}


def _lws(name: str, cluster: ClusterHandle, replicas: int, size: int, labels: dict[str, str] | None = None) -> Obj:
    obj = workloads.lws(
        name, replicas=replicas, size=size, gpus=1, gpu_resource=cluster.topology.gpu_resource, queue=K.QUEUE
    )
    obj["metadata"]["labels"].update(labels or {})
    return obj


def _wl_named(name: str, pred: Any) -> Any:
    def check(ws: list[Obj]) -> Obj | None:
        live = K.by_name(ws)
        return live[name] if name in live and pred(live[name]) else None

    return check


def _patch_workload(scenario: Scenario, name: str, body: Obj) -> None:
    scenario.custom.patch_namespaced_custom_object(
        workloads.KUEUE_GROUP, workloads.KUEUE_VERSION, scenario.namespace, "workloads", name, body
    )


# -- WorkloadPriorityClass label change ---------------------------------------------------------
@pytest.mark.requirement("KUEUE-PRIO-001")
@pytest.mark.requirement("KUEUE-PRIO-002")
def test_priority_label_change_updates_workload_and_preempts(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Quota for one group; a running low LWS and a pending low LWS. Relabelling the pending one
    to the high WorkloadPriorityClass updates its Workload's priority and preempts the running one."""
    size = 2
    lo, hi = f"{unique}-lo", f"{unique}-hi"
    scenario.create(workloads.workload_priority_class(lo, 100))
    scenario.create(workloads.workload_priority_class(hi, 10000))
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, size), preemption=True)
    scenario.create(_lws("run", lwsc_cluster, 1, size, labels={workloads.PRIORITY_LABEL: lo}))
    scenario.wait_pods(K.all_ready(1, size), "the running LWS Ready", selector=K.selector("run"))
    scenario.create(_lws("bump", lwsc_cluster, 1, size, labels={workloads.PRIORITY_LABEL: lo}))
    bump_uid, run_uid = K.lws_uid(scenario, "bump"), K.lws_uid(scenario, "run")
    bump_wl = workloads.lws_workload_name("bump", bump_uid, 0)
    K.wait_pending(scenario, bump_uid, bump_wl)

    scenario.patch_lws("bump", {"metadata": {"labels": {workloads.PRIORITY_LABEL: hi}}})
    with claim("KUEUE-PRIO-001"):
        K.wait_workloads(
            scenario,
            bump_uid,
            _wl_named(bump_wl, lambda w: w["spec"].get("priority") == 10000),
            f"{bump_wl} spec.priority 10000 (the {hi} value)",
        )
    with claim("KUEUE-PRIO-002"):
        run_wl = workloads.lws_workload_name("run", run_uid, 0)
        K.wait_workloads(
            scenario,
            run_uid,
            _wl_named(run_wl, lambda w: P.condition(w, "Preempted") == "True" and not K.quota_reserved(w)),
            f"{run_wl} Preempted=True and without quota",
        )
        scenario.wait_pods(K.all_ready(1, size), "the relabelled LWS Ready", selector=K.selector("bump"))
        scenario.wait_pods(K.split(1, size, ready=0), "the preempted LWS wholly held", selector=K.selector("run"))


# -- Workload deactivation ---------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-DEACT-001")
@pytest.mark.requirement("KUEUE-DEACT-002")
def test_deactivated_workload_evicts_its_whole_group_and_is_kept(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims
) -> None:
    """Two running groups; group 0's Workload gets spec.active=false: every pod of group 0 is held
    again behind the gate, group 1 is untouched, the Workload is Evicted (reason Deactivated) and
    stays (the same object: its UID, not only its name); reactivating it brings the group back
    whole, admitted again under that same Workload."""
    replicas, size = 2, 3
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, replicas * size))
    scenario.create(_lws("da", lwsc_cluster, replicas, size))
    before = K.groups_of(
        scenario.wait_pods(K.all_ready(replicas, size), "both groups Ready", selector=K.selector("da"))
    )
    uid = K.lws_uid(scenario, "da")
    wl = workloads.lws_workload_name("da", uid, 0)
    wl_uid = K.wait_workloads(scenario, uid, _wl_named(wl, K.admitted), f"{wl} Admitted")["metadata"]["uid"]

    _patch_workload(scenario, wl, {"spec": {"active": False}})
    with claim("KUEUE-DEACT-001"):
        K.wait_workloads(
            scenario,
            uid,
            _wl_named(wl, lambda w: _evicted_deactivated(w) and not K.quota_reserved(w)),
            f"{wl} Evicted=True reason Deactivated, without quota",
        )
        after = scenario.wait_pods(
            K.split(replicas, size, ready=1), "group 0 wholly held, group 1 Ready", selector=K.selector("da")
        )
        assert after == ([1], [0]), f"(ready, held) groups {after}: the wrong group was evicted"
        kept = {p["metadata"]["uid"] for p in K.groups_of(scenario.pods(K.selector("da")))[1]}
        assert kept == {p["metadata"]["uid"] for p in before[1]}, "group 1 was disturbed by group 0's deactivation"
        escaped = scenario.observe_pods(K.leak(0), K.OBSERVE_SECONDS, selector=K.selector("da"))
        assert escaped is None, escaped
    with claim("KUEUE-DEACT-002"):
        still = K.by_name(K.workloads_of(scenario, uid))
        assert wl in still and still[wl]["spec"].get("active") is False, (
            f"deactivated Workload {wl} was deleted or reactivated: present={wl in still}"
        )
        got = still[wl]["metadata"]["uid"]
        assert got == wl_uid, f"deactivated Workload {wl} was recreated under its name (uid {wl_uid} -> {got})"
        _patch_workload(scenario, wl, {"spec": {"active": True}})
        scenario.wait_pods(
            K.all_ready(replicas, size), "group 0 back whole after reactivation", selector=K.selector("da")
        )
        back = K.wait_workloads(scenario, uid, _wl_named(wl, K.admitted), f"{wl} Admitted again")["metadata"]["uid"]
        assert back == wl_uid, f"group 0 came back under another Workload {wl} (uid {wl_uid} -> {back})"


def _evicted_deactivated(wl: Obj) -> bool:
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c["type"] == "Evicted" and c["status"] == "True" and c.get("reason") == "Deactivated":
            return True
    return False


# -- restartPolicy None ------------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-RESTART-001")
def test_restart_policy_none_replaces_only_the_deleted_pod_through_the_gate(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """restartPolicy None: deleting one worker brings back only that pod (same name, new UID),
    created behind Kueue's admission gate and released under the group's same Admitted Workload:
    the Workload keeps its UID and its admission (Admitted never re-set) and counts the replacement
    among its members (its owner references, as Kueue's pod groups record membership)."""
    size = 3
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, size))
    obj = _lws("rn", lwsc_cluster, 1, size)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    scenario.create(obj)
    pods = scenario.wait_pods(K.all_ready(1, size), "the group Ready", selector=K.selector("rn"))
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    uid = K.lws_uid(scenario, "rn")
    name = workloads.lws_workload_name("rn", uid, 0)
    (wl,) = K.wait_workloads(
        scenario, uid, lambda ws: [w for w in ws if w["metadata"]["name"] == name and K.admitted(w)], f"{name} Admitted"
    )
    admission = (wl["metadata"]["uid"], _admitted_since(wl))
    victim = "rn-0-1"
    gated_at_birth: list[bool] = []

    def replaced(objs: list[Obj]) -> Any:
        live = {p["metadata"]["name"]: p for p in P.live(objs)}
        fresh = live.get(victim)
        if fresh and fresh["metadata"]["uid"] != uids[victim] and not gated_at_birth:
            gated_at_birth.append(P.gated(fresh))
        ready = K.all_ready(1, size)(objs)
        return live if ready and live[victim]["metadata"]["uid"] != uids[victim] else None

    live = scenario.wait_objects(
        "Pod",
        K.act_then_wait(lambda: scenario.core.delete_namespaced_pod(victim, scenario.namespace), replaced),
        f"{victim} replaced (new UID) and the group Ready",
        timeout=60,
        selector=K.selector("rn"),
        what=f"pods of {scenario.namespace}/rn",
    )
    others = {n: p["metadata"]["uid"] for n, p in live.items() if n != victim}
    assert others == {n: u for n, u in uids.items() if n != victim}, f"pods other than {victim} were replaced"
    assert gated_at_birth == [True], f"the replacement {victim} was first seen without the admission gate"
    fresh = live[victim]["metadata"]["uid"]

    def admitted_owning_the_replacement(ws: list[Obj]) -> Obj | None:
        live = K.by_name(ws)
        if set(live) != {name} or not K.admitted(live[name]):
            return None
        owners = {o.get("uid") for o in live[name]["metadata"].get("ownerReferences", [])}
        return live[name] if fresh in owners else None

    after = K.wait_workloads(
        scenario, uid, admitted_owning_the_replacement, f"only {name}, Admitted, owned by the replacement {fresh}"
    )
    assert (after["metadata"]["uid"], _admitted_since(after)) == admission, (
        f"{name} is not the same admitted Workload: (uid, Admitted since) {admission} before the deletion, "
        f"{(after['metadata']['uid'], _admitted_since(after))} after"
    )


# The finalizer Kueue's pod webhook puts on a pod it manages (pod/constants PodFinalizer, the same
# string as the label) when SkipFinalizersForPodsSuspendedByParent is off or the pod has no parent.
FINALIZER = K.MANAGED
NO_SKIP = "SkipFinalizersForPodsSuspendedByParent"


@pytest.mark.private_cluster(f"kueue.feature_gates.{NO_SKIP}=false")
@pytest.mark.requirement("KUEUE-RESTART-002")
def test_a_force_deleted_pod_is_released_by_kueue_without_a_terminal_phase(
    private_scenario: Scenario, unique: str
) -> None:
    """Kueue's SkipFinalizersForPodsSuspendedByParent gate off (a private cluster of its own): every
    pod of a queued LWS carries Kueue's finalizer. Worker fz-0-1 of the admitted group is
    force-deleted (grace 0), as an operator removes a pod whose node stopped answering: no kubelet
    ever reports it terminated (kwok writes no terminal phase for it, and its pod-delete stage plays
    only during a grace period). Kueue must drop its finalizer from the pod being deleted, so the
    pod goes away and the StatefulSet replaces it (restartPolicy None: only that pod) and the group
    runs whole again; a Kueue that releases only terminated pods keeps it Terminating for good."""
    sc, name, size, victim = private_scenario, "fz", 2, "fz-0-1"
    K.plain_queue(sc, unique, {"cpu": "10", "memory": "10Gi"})
    obj = workloads.lws(name, replicas=1, size=size, queue=K.QUEUE)
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    sc.create(obj)
    pods = sc.wait_pods(K.all_ready(1, size), "the group admitted and Ready", selector=K.selector(name))
    without = sorted(p["metadata"]["name"] for p in pods if FINALIZER not in (p["metadata"].get("finalizers") or []))
    if without:
        raise InfraError(
            f"the test's precondition did not hold (not a Kueue verdict): with {NO_SKIP} off, pods {without} "
            f"carry no {FINALIZER} finalizer"
        )
    old = next(p["metadata"]["uid"] for p in pods if p["metadata"]["name"] == victim)
    sc.core.delete_namespaced_pod(victim, sc.namespace, grace_period_seconds=0)

    def replaced(objs: list[Obj]) -> list[Obj] | None:
        if any(p["metadata"]["uid"] == old for p in objs):
            return None
        return K.all_ready(1, size)(objs)

    try:
        sc.wait_pods(replaced, f"{victim} gone, replaced and the group Ready", selector=K.selector(name))
    except WaitTimeout as exc:
        left = [p for p in sc.pods(K.selector(name)) if p["metadata"]["uid"] == old]
        if not left:
            raise
        meta = left[0]["metadata"]
        raise AssertionError(
            f"force-deleted {victim} (uid {old}) still Terminating: finalizers {meta.get('finalizers')}, "
            f"phase {(left[0].get('status') or {}).get('phase')}, deletionTimestamp {meta.get('deletionTimestamp')}"
            f"\n{exc}"
        ) from None


def _admitted_since(wl: Obj) -> str:
    return next((c.get("lastTransitionTime", "") for c in wl["status"]["conditions"] if c["type"] == "Admitted"), "")


# -- quick scale up then down ------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-SCALE-003")
def test_quick_scale_up_then_down_converges(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """replicas 1 -> 3 -> 1 with no wait in between: the LWS settles at one Ready group, only group 0's
    Workload remains (Admitted), and no pod of groups 1-2 is left."""
    size = 2
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, 3 * size))
    scenario.create(_lws("qs", lwsc_cluster, 1, size))
    scenario.wait_pods(K.all_ready(1, size), "group 0 Ready", selector=K.selector("qs"))
    uid = K.lws_uid(scenario, "qs")
    scenario.patch_lws("qs", {"spec": {"replicas": 3}})
    scenario.patch_lws("qs", {"spec": {"replicas": 1}})
    scenario.wait_lws("qs", scenario.settled(1), "settled at 1 replica, Available")
    scenario.wait_pods(
        lambda pods: P.live(pods) if set(K.groups_of(P.live(pods))) == {0} and K.all_ready(1, size)(pods) else None,
        "only group 0's pods, Ready",
        selector=K.selector("qs"),
    )
    only = workloads.lws_workload_name("qs", uid, 0)
    # Every Workload of the LWS counts, a terminating one too: one stuck in deletion (its finalizer
    # never removed, the race fixed by kueue#9135) is still left.
    K.wait_workloads(
        scenario,
        uid,
        lambda ws: {w["metadata"]["name"] for w in ws} == {only} and all(map(K.admitted, ws)),
        f"only {only} (none left terminating), Admitted",
    )


# -- leader and workers with different requests ------------------------------------------------
@pytest.mark.requirement("KUEUE-RES-001")
def test_unequal_leader_and_worker_requests_are_charged_per_role(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Leader 1 GPU, workers 3 GPUs each, size 3: a group costs 1 + 2*3 = 7 GPUs. The Workload's
    podSets carry each role's requests; quota 7 admits one group, and a second group stays held."""
    gpu = lwsc_cluster.topology.gpu_resource
    size, leader_gpus, worker_gpus = 3, 1, 3
    group_cost = leader_gpus + (size - 1) * worker_gpus
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, group_cost))
    obj = workloads.lws("ur", replicas=2, size=size, queue=K.QUEUE)
    workloads.set_requests(obj, "leader", {gpu: str(leader_gpus)})
    workloads.set_requests(obj, "worker", {gpu: str(worker_gpus)})
    scenario.create(obj)
    scenario.wait_pods(K.split(2, size, ready=1), "one group Ready, the other wholly held", selector=K.selector("ur"))
    uid = K.lws_uid(scenario, "ur")
    wls = K.wait_workloads(
        scenario, uid, lambda ws: K.by_name(ws) if len(K.by_name(ws)) == 2 else None, "two Workloads"
    )
    for name, wl in wls.items():
        got = {ps["name"]: _podset_gpus(ps, gpu) for ps in wl["spec"]["podSets"]}
        assert got == {"leader": (1, leader_gpus), "worker": (size - 1, worker_gpus)}, (
            f"{name}: podSets (count, {gpu} per pod) {got}, "
            f"want leader (1, {leader_gpus}) worker ({size - 1}, {worker_gpus})"
        )
    admitted = [w for w in wls.values() if K.admitted(w)]
    assert len(admitted) == 1, f"{len(admitted)} Workloads admitted with quota for exactly one group"
    usage = _charged(admitted[0], gpu)
    assert usage == group_cost, f"admitted Workload charged {usage} {gpu}, a group costs {group_cost}"


def _podset_gpus(ps: Obj, gpu: str) -> tuple[int, int]:
    return ps["count"], K.gpus(ps["template"], gpu)


def _charged(wl: Obj, gpu: str) -> int:
    total = 0
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        total += int((psa.get("resourceUsage") or {}).get(gpu, "0"))
    return total


# -- size-1 groups -----------------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-SINGLE-001")
@pytest.mark.parametrize("flavor", ["plain", "tas"])
@pytest.mark.exclusive(K.SHARED_NODES_TAS)
def test_size_one_groups_are_admitted_one_pod_per_workload(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, flavor: str
) -> None:
    """size 1 (a leader only): one Workload per group whose podSets cover 1 pod; quota for two
    pods admits two of three groups. Under a plain ResourceFlavor, and under a TAS one with a
    preferred rack on both templates: the worker podSet of a size-1 group has count 0 and a
    topology request, the shape of the divide-by-zero panic of kubernetes-sigs/kueue#6486."""
    obj = _lws("s1", lwsc_cluster, 3, 1)
    if flavor == "tas":
        K.tas_queue(scenario, lwsc_cluster, unique, _quota(lwsc_cluster, 2))
        workloads.set_tas(obj, lwsc_cluster.topology.rack_label, required=False, group=None)
    else:
        K.plain_queue(scenario, unique, _quota(lwsc_cluster, 2))
    scenario.create(obj)
    uid = K.lws_uid(scenario, "s1")
    names = {workloads.lws_workload_name("s1", uid, i) for i in range(3)}
    if flavor == "tas":
        _quota_for_two(scenario, uid, names)
    scenario.wait_pods(K.split(3, 1, ready=2), "two groups Ready, one held", selector=K.selector("s1"))
    wls = K.wait_workloads(
        scenario, uid, lambda ws: K.by_name(ws) if set(K.by_name(ws)) == names else None, f"Workloads {sorted(names)}"
    )
    for name, wl in wls.items():
        podsets = [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]]
        assert sum(c for _, c in podsets) == 1, f"{name}: podSets {podsets} do not cover exactly the one pod"
    assert sum(map(K.admitted, wls.values())) == 2, "quota for two pods must admit exactly two size-1 groups"


def _quota_for_two(scenario: Scenario, uid: str, names: set[str], deadline: float = 60) -> None:
    """Wait for two of the size-1 groups' Workloads (`names`) to get quota. After K.ADMISSION_SECONDS
    (× timeouts.scale) without it, and again past `deadline`, the failure is named from Kueue's own
    evidence when there is some: the API server refusing Kueue's admission of them, as Kueue's
    scheduler logs it (K.admission_refusals), with every Workload's podSets. Without a refusal the
    wait goes on, so a slow admission on a loaded machine is no failure."""

    def two(ws: list[Obj]) -> list[Obj] | None:
        got = [w for n, w in K.by_name(ws).items() if n in names and K.quota_reserved(w)]
        return got if len(got) >= 2 else None

    for timeout, what in ((K.ADMISSION_SECONDS, ""), (deadline, " (quota holds two)")):
        try:
            K.wait_workloads(scenario, uid, two, f"two of the three Workloads QuotaReserved{what}", timeout=timeout)
            return
        except WaitTimeout:
            refused = {n: K.admission_refusals(scenario, n) or {} for n in sorted(names)}
            if any(refused.values()):
                raise AssertionError(_refused(scenario, uid, names, refused)) from None
            if timeout == deadline:
                raise


def _refused(scenario: Scenario, uid: str, names: set[str], refused: dict[str, dict[str, int]]) -> str:
    """The failure of size-1 groups whose admission the API server refused: how many of their
    Workloads have quota now, and each refused one's podSets (name, count) and every distinct error
    Kueue logged for it, with how often."""
    now = K.by_name(K.workloads_of(scenario, uid))
    reserved = sum(1 for n in names if n in now and K.quota_reserved(now[n]))
    said = []
    for n, errors in refused.items():
        if errors:
            podsets = [(ps["name"], ps["count"]) for ps in (now.get(n) or {}).get("spec", {}).get("podSets") or []]
            said.append(f"{n} (podSets {podsets}): {E.describe_errors(errors)}")
    return (
        f"{reserved} of 3 size-1 groups' Workloads given quota, though quota holds two, {K.ADMISSION_SECONDS:g}s × "
        f"timeouts.scale or more after their creation; Kueue's scheduler logged the API server refusing the "
        f"admission of {len(said)} of them: {' | '.join(said)}"
    )


# -- LeaderReady startup -----------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-STARTUP-001")
def test_leader_ready_startup_under_kueue(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, tmp_path: Path
) -> None:
    """startupPolicy LeaderReady under Kueue: every group becomes Ready (the leader is released from
    the gate alone, its workers only after it is Ready), with no worker created before its leader
    was Ready (watched)."""
    replicas, size = 2, 3
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, replicas * size))
    obj = _lws("lr", lwsc_cluster, replicas, size)
    obj["spec"]["startupPolicy"] = "LeaderReady"
    with record(scenario.api, scenario.namespace) as tl:
        scenario.create(obj)
        scenario.wait_pods(K.all_ready(replicas, size), "every group Ready", selector=K.selector("lr"))
        scenario.wait_lws("lr", scenario.settled(replicas), "Available")
    events = saved(tl, artifact_dir(tmp_path), "lr", lws="lr")
    early = [w for g in range(replicas) for w in history.workers_before_leader_ready(events, "lr", g)]
    assert not early, f"workers created before their leader was Ready: {early}"


# -- percentage maxSurge -----------------------------------------------------------------------
@pytest.mark.requirement("KUEUE-UPDATE-003")
def test_percentage_max_surge_rollout_completes(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """maxSurge "50%" of 2 replicas (LWS rounds up: 1 surge group), quota for 3 groups: the surge
    group gets its own Workload, is admitted, and the rollout completes (kueue PR #14405)."""
    replicas, size = 2, 2
    K.plain_queue(scenario, unique, _quota(lwsc_cluster, (replicas + 1) * size))
    obj = _lws("ps", lwsc_cluster, replicas, size)
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": "50%"},
    }
    scenario.create(obj)
    scenario.wait_pods(K.all_ready(replicas, size), "both groups Ready", selector=K.selector("ps"))
    uid = K.lws_uid(scenario, "ps")
    lwt = scenario.lws("ps")["spec"]["leaderWorkerTemplate"]
    new_image = images.ref("workload-update")
    body = {
        key: {"spec": {"containers": [{**c, "image": new_image} for c in lwt[key]["spec"]["containers"]]}}
        for key in ("leaderTemplate", "workerTemplate")
    }
    scenario.patch_lws("ps", {"spec": {"leaderWorkerTemplate": body}})
    scenario.wait_pods(
        lambda pods: P.live(pods) if replicas in K.groups_of(P.live(pods)) else None,
        f"surge group {replicas} created",
        selector=K.selector("ps"),
    )
    # Kueue creates a surge group's Workload when LWS status.replicas exceeds spec.replicas
    # (filterWorkloads): from when the harness sees that, every Kueue reconcile of the LWS could.
    counted_lws = scenario.wait_lws(
        "ps", lambda o: (o.get("status") or {}).get("replicas", 0) > replicas, "status.replicas counts the surge group"
    )
    # When the API server stored that status (its managedFields time, whole seconds), not when this
    # harness saw it: on a loaded machine Kueue's reconcile of the same update can precede our read.
    counted = _status_written(counted_lws) or time.time()
    surge = workloads.lws_workload_name("ps", uid, replicas)
    admitted = _wl_named(surge, K.admitted)
    try:
        # The surge group's pods exist (waited for above): Kueue makes a pod group's Workload as
        # its pods appear and admits it at once with free quota — with an integer maxSurge 0.07-0.12 s
        # after the first surge pod (benchmarks/surge_admission_latency.py, 8 rounds, idle). 5 s
        # (x timeouts.scale) is 40 times that. Past it, a Workload never created is named with
        # Kueue's reconciles of the LWS since its status counted the surge group (the cause); with
        # none logged yet the wait goes on to the ordinary deadline (a loaded machine).
        K.wait_workloads(scenario, uid, admitted, f"surge Workload {surge} Admitted", timeout=5)
    except WaitTimeout:
        if _surge_workload_exists(scenario, uid, surge) or not K.lws_reconciles_after(scenario, "ps", counted):
            try:
                K.wait_workloads(scenario, uid, admitted, f"surge Workload {surge} Admitted")
            except WaitTimeout:
                raise AssertionError(_surge_held(scenario, uid, surge, replicas, counted)) from None
        else:
            raise AssertionError(_surge_held(scenario, uid, surge, replicas, counted)) from None
    scenario.wait_lws("ps", scenario.settled(replicas), "rollout finished: updated == ready == replicas, Available")
    steady = {workloads.lws_workload_name("ps", uid, i) for i in range(replicas)}
    K.wait_workloads(
        scenario, uid, lambda ws: set(K.by_name(ws)) == steady, f"surge Workload gone, leaving {sorted(steady)}"
    )


# -- manageJobsWithoutQueueName off (the default) ------------------------------------------------
def _manages_unlabelled(scenario: Scenario) -> bool:
    """Whether the cluster's Kueue config (kueue-system/kueue-manager-config, where an install keeps
    it) turns manageJobsWithoutQueueName on; the harness's own local Kueue runs the default (off)."""
    import yaml
    from kubernetes.client.exceptions import ApiException

    try:
        cm = scenario.core.read_namespaced_config_map("kueue-manager-config", "kueue-system")
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    cfg = yaml.safe_load(((cm.data or {}).get("controller_manager_config.yaml")) or "{}") or {}
    return bool(cfg.get("manageJobsWithoutQueueName"))


@pytest.mark.requirement("KUEUE-UNQUEUED-001")
def test_lws_without_queue_name_is_not_managed_by_default(scenario: Scenario, lwsc_cluster: ClusterHandle) -> None:
    """manageJobsWithoutQueueName false: an LWS without the queue-name label starts at once, no pod
    of it ever carries Kueue's admission gate or its managed label (every watch event), and Kueue
    creates no Workload."""
    if _manages_unlabelled(scenario):
        pytest.skip("this cluster's Kueue has manageJobsWithoutQueueName: true")
    replicas, size = 2, 2
    obj = workloads.lws("nq", replicas=replicas, size=size)
    gated: set[str] = set()
    labelled: set[str] = set()

    def check(pods: list[Obj]) -> Any:
        gated.update(p["metadata"]["name"] for p in pods if P.gated(p))
        labelled.update(p["metadata"]["name"] for p in pods if (p["metadata"].get("labels") or {}).get(K.MANAGED))
        return K.all_ready(replicas, size)(pods)

    scenario.wait_objects(
        "Pod",
        K.act_then_wait(lambda: scenario.create(obj), check),
        "every group Ready",
        timeout=60,
        selector=K.selector("nq"),
        what=f"pods of {scenario.namespace}/nq",
    )
    uid = K.lws_uid(scenario, "nq")
    listing = K.workloads_of(scenario, uid)
    problems = []
    if gated:
        problems.append(f"pods {sorted(gated)} of an LWS without a queue name were held by Kueue's admission gate")
    if labelled:
        problems.append(f"pods {sorted(labelled)} of an LWS without a queue name were labelled {K.MANAGED}")
    if listing:
        problems.append(f"Kueue created Workloads {[w['metadata']['name'] for w in listing['items']]}")
    if problems:
        raise Failures(problems)


def _status_written(lws: Obj) -> float | None:
    """The start of the second in which the API server last stored `lws`'s status (the latest
    managedFields entry of the status subresource), or None when no entry says so."""
    times = [
        f["time"]
        for f in (lws.get("metadata") or {}).get("managedFields") or []
        if f.get("subresource") == "status" and f.get("time")
    ]
    return max(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in times) if times else None


def _surge_workload_exists(scenario: Scenario, uid: str, surge: str) -> bool:
    found = K.workloads_of(scenario, uid)
    return surge in K.by_name(found)


def _surge_held(scenario: Scenario, uid: str, surge: str, replicas: int, counted: float) -> str:
    """The failure of a surge group whose Workload is not Admitted: its gated pods, and whether its
    Workload exists; one never created with how often Kueue reconciled the LWS since its status
    counted the surge group (Kueue's log; unknown where it cannot be read)."""
    held = [p["metadata"]["name"] for p in K.groups_of(scenario.pods(K.selector("ps"))).get(replicas, []) if P.gated(p)]
    what = f"maxSurge 50%: surge group {replicas} pods {held} stay gated; its Workload {surge}"
    if _surge_workload_exists(scenario, uid, surge):
        return f"{what} exists but is not Admitted"
    n = K.lws_reconciles_after(scenario, "ps", counted)
    seen = "unknown (Kueue's log not readable)" if n is None else n
    return (
        f"{what} was never created, though Kueue reconciled LWS ps {seen} time(s) after its status counted the "
        "surge group"
    )
