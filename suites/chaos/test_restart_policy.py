"""Restart policies under pod faults (LWS pod_controller.go handleRestartPolicy@v0.9.0; Kueue
pkg/controller/jobs/leaderworkerset@v0.17.0).

Why: a multi-host inference or training group is useless with one member restarted alone (the
collective is broken), so RecreateGroupOnPodRestart must rebuild the whole group, in place
(same names, same group index), without touching the others; `None` must leave healthy pods
alone; RecreateGroupAfterStart must not thrash a group that is still coming up.

Faults are pod-level and stay inside the test's namespace, so this suite runs on the shared
cluster: a container restart is the kubelet's report (restartCount + 1 by JSON patch on the
status subresource, phase Running), a pod failure is a pod deletion. See
`lws_conformance.chaos.actions`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    ClusterHandle,
    Failures,
    Scenario,
    artifact_dir,
    history,
    images,
    record,
    run_in_pod,
    saved,
    steady_state_violations,
    workloads,
)
from lws_conformance.testing import predicates as P

from ..rollout.rollout_support import reconcile_window
from .restart_support import (
    PFX,
    RECOVERY,
    WINDOW,
    apply_fault,
    group_uids,
    recreate_group_events,
    recreate_group_reported,
    restart_lws,
    steady,
    wait_group_recreated,
    waits_until_started,
)

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
# seconds (x timeouts.scale) a group left with lws#998's picture is watched further: the race's
# outcome is permanent (LWS missed the deletion and never recreates the group), while a controller
# that was only slow recreates it within this much more (a rebuild takes 0.2-3 s, RECOVERY covers
# a loaded machine): only a leader still unchanged then is the race, not the load.
AFTER_RECOVERY = 2 * RECOVERY
TRIES_998 = 4  # worker deletions per run: kubernetes-sigs/lws#998 reproduced in ~1 of 30 here


# -- RecreateGroupOnPodRestart ---------------------------------------------------------------
@pytest.mark.requirement("CHAOS-RESTART-001")
@pytest.mark.parametrize(
    ("role", "fault"),
    [("worker", "restart"), ("worker", "delete"), ("leader", "restart"), ("leader", "delete")],
)
def test_recreate_group_on_pod_restart_rebuilds_the_whole_group(scenario: Scenario, role: str, fault: str) -> None:
    """A restarted or deleted pod (worker or leader) of group 1 makes LWS rebuild all of group
    1: every pod gets a new UID under the same name and group index; group 0 keeps its pods.

    A deleted worker is tried TRIES_998 times: kubernetes-sigs/lws#998 (a race: the worker
    StatefulSet recreates the pod before LWS sees the deletion, so the group is not recreated)
    shows in some tries. Only that picture in some, never all, tries is the known deviation
    (fixtures/known-deviations.yaml); a group never recreated in every try, a slow rebuild (a
    wait timeout) or group 0 touched stay failures."""
    sc, name, group = scenario, "rg", 1
    lws = sc.create(restart_lws(name, "RecreateGroupOnPodRestart"))
    before = steady(sc, lws)
    tries = TRIES_998 if (role, fault) == ("worker", "delete") else 1
    alone: list[tuple[str, str]] = []
    for _ in range(tries):
        apply_fault(sc, fault, name, group, 0 if role == "leader" else 1)
        try:
            after = wait_group_recreated(sc, lws, group, before, timeout=RECOVERY)
        except AssertionError:
            picture = _worker_replaced_alone(sc, name, group, before) if (role, fault) == ("worker", "delete") else None
            if picture is None:
                raise
            _never_recreated_after(sc, name, picture[1], before[picture[1]])
            alone.append(picture)
            after = steady(sc, lws)
        else:
            kept = group_uids(after, name, 0) == group_uids(before, name, 0)
            assert kept, "group 0 was touched by group 1's recreation"
        before = after
    if alone:
        worker, leader = alone[0]
        if len(alone) == tries:
            raise AssertionError(
                f"a deleted worker never made LWS recreate its group: in {tries} of {tries} tries worker {worker} "
                f"was replaced alone and leader {leader} kept its UID for {RECOVERY:.0f} s"
            )
        raise AssertionError(
            f"kubernetes-sigs/lws#998 picture in {len(alone)} of {tries} tries: worker {worker} replaced alone "
            f"(new UID), leader {leader} kept its UID for the whole recovery deadline and {AFTER_RECOVERY:.0f} s "
            "after it; the other tries recreated the whole group"
        )


def _never_recreated_after(sc: Scenario, name: str, leader: str, uid: str) -> None:
    """lws#998's picture is the race only if the leader keeps its UID for AFTER_RECOVERY more: a
    leader replaced then means LWS was slow, a failure of the recovery deadline, not the race."""

    def replaced(pods: list[dict[str, Any]]) -> str | None:
        now = next((p["metadata"]["uid"] for p in P.live(pods) if p["metadata"]["name"] == leader), uid)
        return f"leader {leader} replaced (new UID {now})" if now != uid else None

    late = sc.observe_pods(replaced, AFTER_RECOVERY, selector=f"{PFX}name={name}")
    assert late is None, (
        f"{late} only after the {RECOVERY:.0f} s recovery deadline: LWS recreated the group late (a slow "
        "recovery, not kubernetes-sigs/lws#998's race, whose group is never recreated)"
    )


def _worker_replaced_alone(sc: Scenario, name: str, group: int, before: dict[str, str]) -> tuple[str, str] | None:
    """(worker, leader) when worker 1 of `group` has a new UID and its leader the old one."""
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(sc.pods(f"{PFX}name={name}"))}
    leader, worker = f"{name}-{group}", f"{name}-{group}-1"
    if now.get(leader) == before[leader] and now.get(worker) not in (None, before[worker]):
        return worker, leader
    return None


@pytest.mark.requirement("CHAOS-RESTART-011")
def test_a_leader_deleted_in_the_background_recreates_its_group_once(
    scenario: Scenario, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Leader rb-1 deleted with the API's default propagation (background, as CHAOS-RESTART-001's
    kill): the garbage collector deletes its old workers after the new leader exists, and LWS must
    not take those deletions for a failure of the new group (kubernetes-sigs/lws#805). Recorded
    from the delete until the group is steady again and one reconcile window after it
    (`timeouts.reconcile_window_seconds`: a late reconcile of an old worker deletes the new leader
    within it): rb-1 gets exactly one new UID, which is never deleted again, and LWS reports no
    RecreateGroup for group 1 (it records one only for a leader it deletes itself)."""
    sc, name, group = scenario, "rb", 1
    leader = f"{name}-{group}"
    lws = sc.create(restart_lws(name, "RecreateGroupOnPodRestart"))
    before = steady(sc, lws)
    with record(sc.api, sc.namespace, workloads=False) as tl:
        apply_fault(sc, "delete", name, group, 0)
        after = wait_group_recreated(sc, lws, group, before, timeout=RECOVERY)

        def replaced_again(pods: list[Obj]) -> str | None:
            mine = [p for p in P.live(pods) if p["metadata"]["name"] == leader]
            if not mine or mine[0]["metadata"]["uid"] != after[leader]:
                return f"{leader} deleted or replaced again after its group was steady"
            return None

        late = sc.observe_pods(replaced_again, reconcile_window(request.config), selector=f"{PFX}name={name}")
    events = saved(tl, artifact_dir(tmp_path), request.node.name, lws=name)
    # The recording holds what the window saw (its final sync lists after the window ended).
    out = history.replaced_more_than_once(events, leader) or ([late] if late else [])
    out += [
        f"RecreateGroup event for group {group}, whose leader only the test deleted: {e['note']}"
        for e in recreate_group_events(sc)
        if str(e.get("note")).endswith(f"to recreate group {group}")
    ]
    if out:
        raise Failures(out)


@pytest.mark.requirement("CHAOS-RESTART-002")
def test_recreate_group_emits_a_recreate_group_event(scenario: Scenario) -> None:
    """The recreation is reported as a Normal `RecreateGroup` event (events.k8s.io/v1, reporter
    `leaderworkerset`) on the LWS, naming the failed pod, the leader and the group."""
    sc, name = scenario, "ev"
    lws = sc.create(restart_lws(name, "RecreateGroupOnPodRestart", replicas=1, size=2))
    before = steady(sc, lws)
    apply_fault(sc, "restart", name, 0, 1)
    wait_group_recreated(sc, lws, 0, before, RECOVERY)
    events = recreate_group_reported(sc, 0)
    assert events, "no RecreateGroup event in events.k8s.io/v1"
    ev = events[0]
    assert ev["type"] == "Normal" and ev["reportingController"] == "leaderworkerset", ev
    assert ev["regarding"]["kind"] == "LeaderWorkerSet" and ev["regarding"]["name"] == name, ev["regarding"]
    assert ev["note"] == f"Worker pod {name}-0-1 failed, deleted leader pod {name}-0 to recreate group 0", ev["note"]


# -- None --------------------------------------------------------------------------------------
@pytest.mark.requirement("CHAOS-RESTART-003")
@pytest.mark.requirement("CHAOS-RESTART-006")
@pytest.mark.parametrize(
    ("role", "fault", "replaced"),
    [
        ("worker", "restart", "none"),
        ("leader", "restart", "none"),
        ("worker", "delete", "pod"),
        ("leader", "delete", "group"),
    ],
)
def test_restart_policy_none_replaces_only_the_failed_pod(
    scenario: Scenario, claim: Claims, role: str, fault: str, replaced: str
) -> None:
    """With `None` a restarted container changes no pod and a deleted worker is replaced alone
    (CHAOS-RESTART-003, documented); a deleted leader still takes its whole group, its worker
    StatefulSet being owned by the leader pod and garbage-collected (CHAOS-RESTART-006: what
    v0.9.0 does, against the documented "only the failed pod")."""
    sc, name, group = scenario, "np", 0
    lws = sc.create(restart_lws(name, "None"))
    before = steady(sc, lws)
    target = f"{name}-{group}" if role == "leader" else f"{name}-{group}-1"
    apply_fault(sc, fault, name, group, 0 if role == "leader" else 1)
    with claim("CHAOS-RESTART-006" if replaced == "group" else "CHAOS-RESTART-003"):
        if replaced == "group":
            after = wait_group_recreated(sc, lws, group, before, RECOVERY)
            assert group_uids(after, name, 1) == group_uids(before, name, 1), "group 1 was touched"
            return
        if replaced == "pod":

            def replaced_alone(ps: list[Obj]) -> list[Obj] | None:
                mine = [p for p in P.live(ps) if p["metadata"]["name"] == target]
                new = any(p["metadata"]["uid"] != before[target] for p in mine)
                return ps if new and not steady_state_violations(lws, ps) else None

            sc.wait_pods(
                replaced_alone,
                f"{target} replaced and the LWS steady",
                timeout=RECOVERY,
                selector=f"{PFX}name={name}",
            )
        changed = sc.observe_pods(
            lambda ps: (
                sorted(
                    n
                    for n, u in {p["metadata"]["name"]: p["metadata"]["uid"] for p in ps}.items()
                    if n != target and before.get(n) != u
                )
                or None
            ),
            duration=WINDOW,
            selector=f"{PFX}name={name}",
        )
        assert changed is None, f"restartPolicy None recreated pods other than {target}: {changed}"
        if replaced == "none":
            uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(sc.pods(f"{PFX}name={name}"))}
            assert uids == before, "a container restart under None replaced a pod"
        assert not recreate_group_events(sc) or replaced == "group", "RecreateGroup event under restartPolicy None"


# -- a container that exits on its own (real kubelets) -------------------------------------------
EXIT_CODE = 3
# The worker's process exits on its own once the test drops a file (no API write is involved):
# the kubelet sees the exit and restarts the container (restartPolicy Always).
EXITING = f"while [ ! -e /tmp/exit ]; do sleep 0.2; done; exit {EXIT_CODE}"


def _exiting_lws(name: str, policy: str) -> Obj:
    obj = restart_lws(name, policy, replicas=2, size=2)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        spec = lwt[key]["spec"]
        spec["terminationGracePeriodSeconds"] = 1
        c = spec["containers"][0]
        c.pop("ports", None)
        c.update(image=images.ref("agnhost"), command=["/bin/sh", "-c", EXITING])
    return obj


def _exit_container(sc: Scenario, pod: str) -> None:
    """Make the container's own process exit (it ends its loop), as a crash would."""
    container = sc.core.read_namespaced_pod(pod, sc.namespace).spec.containers[0].name
    ran = run_in_pod(sc.api, sc.namespace, pod, container, ["/bin/sh", "-c", "> /tmp/exit"], timeout=30)
    assert ran.returncode == 0, f"could not signal {pod}'s process to exit: {ran}"


def _restarted(pod: Obj) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])


@pytest.mark.requirement("CHAOS-RESTART-008")
def test_a_container_exiting_on_its_own_recreates_its_group(scenario: Scenario) -> None:
    """Under RecreateGroupOnPodRestart a worker's process that exits by itself (the kubelet
    restarts the container) makes LWS recreate the whole group; the other group keeps its pods."""
    sc, name, group = scenario, "ex", 1
    sc.require_real_kubelet(simulated_by="test_simulated_container_exit_recreates_its_group")
    lws = sc.create(_exiting_lws(name, "RecreateGroupOnPodRestart"))
    before = steady(sc, lws, timeout=180)
    _exit_container(sc, f"{name}-{group}-1")
    after = wait_group_recreated(sc, lws, group, before, timeout=120)
    assert group_uids(after, name, 0) == group_uids(before, name, 0), "group 0 was touched by group 1's recreation"


# -- an init container that fails at start-up (real kubelets) --------------------------------------
GATE = "init-gate"  # ConfigMap: `fail` names the pod whose init container exits 1 (read at each start)
FAILING_INIT = '[ "$FAIL" != "$POD_NAME" ] || { echo "init of $POD_NAME fails"; exit 1; }'


def _init_gated_lws(name: str) -> Obj:
    """Workers whose init container exits 1 while the gate's `fail` names their pod: the kubelet
    restarts it (its restartCount grows, the pod stays Pending)."""
    obj = restart_lws(name, "RecreateGroupOnPodRestart", replicas=2, size=2)
    spec = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["terminationGracePeriodSeconds"] = 1
    spec["initContainers"] = [
        {
            "name": "init",
            "image": images.ref("agnhost"),
            "command": ["/bin/sh", "-c", FAILING_INIT],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "FAIL", "valueFrom": {"configMapKeyRef": {"name": GATE, "key": "fail", "optional": True}}},
            ],
        }
    ]
    return obj


def _init_restarts(pod: Obj) -> int:
    return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("initContainerStatuses") or [])


@pytest.mark.requirement("CHAOS-RESTART-010")
def test_an_init_container_restart_recreates_its_group(scenario: Scenario) -> None:
    """Under RecreateGroupOnPodRestart, worker ini-1-1's init container fails at start-up and the
    kubelet restarts it: LWS recreates the whole of group 1 (leader and worker, new UIDs, same
    names) while group 0, already Ready, keeps its pods. The gate is then opened and group 1 comes
    up."""
    sc, name, group = scenario, "ini", 1
    sc.require_real_kubelet(simulated_by="test_simulated_init_container_restart_recreates_its_group")
    target = f"{name}-{group}-1"
    sc.core.create_namespaced_config_map(sc.namespace, {"metadata": {"name": GATE}, "data": {"fail": target}})
    lws = sc.create(_init_gated_lws(name))

    def first_restart(ps: list[Obj]) -> dict[str, str] | None:
        live = {p["metadata"]["name"]: p for p in P.live(ps)}
        ready0 = [live.get(n) for n in (f"{name}-0", f"{name}-0-1")]
        if not all(p and P.pod_ready(p) for p in ready0) or f"{name}-{group}" not in live or target not in live:
            return None
        return {n: p["metadata"]["uid"] for n, p in live.items()} if _init_restarts(live[target]) >= 1 else None

    seen = sc.wait_pods(
        first_restart,
        f"group 0 Ready and {target}'s init container restarted by the kubelet",
        timeout=180,
        selector=f"{PFX}name={name}",
    )
    failed = group_uids(seen, name, group)

    def recreated(ps: list[Obj]) -> list[Obj] | None:
        live = {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(ps)}
        return ps if all(n in live and live[n] != u for n, u in failed.items()) else None

    sc.wait_pods(
        recreated,
        f"every pod of group {group} ({sorted(failed)}) recreated after {target}'s init container restarted",
        timeout=120,
        selector=f"{PFX}name={name}",
    )
    sc.core.patch_namespaced_config_map(GATE, sc.namespace, {"data": {"fail": ""}})
    after = steady(sc, lws, timeout=180)
    assert group_uids(after, name, 0) == group_uids(seen, name, 0), "group 0 was touched by group 1's recreation"


@pytest.mark.requirement("CHAOS-RESTART-009")
def test_under_none_a_container_exiting_on_its_own_only_restarts_itself(scenario: Scenario) -> None:
    """Under restartPolicy None the same exit restarts that container in place (its restartCount
    grows, the pod keeps its UID) and no pod of any group is recreated."""
    sc, name = scenario, "exn"
    sc.require_real_kubelet(simulated_by="test_simulated_container_exit_under_none_restarts_only_itself")
    lws = sc.create(_exiting_lws(name, "None"))
    before = steady(sc, lws, timeout=180)
    target = f"{name}-0-1"
    _exit_container(sc, target)

    def restarted(ps: list[Obj]) -> list[Obj] | None:
        mine = [p for p in P.live(ps) if p["metadata"]["name"] == target]
        return ps if mine and _restarted(mine[0]) >= 1 and not steady_state_violations(lws, ps) else None

    sc.wait_pods(
        restarted,
        f"{target}'s container restarted by the kubelet and every group Ready",
        timeout=120,
        selector=f"{PFX}name={name}",
    )
    changed = sc.observe_pods(
        lambda ps: (
            sorted(
                n for n, u in {p["metadata"]["name"]: p["metadata"]["uid"] for p in ps}.items() if before.get(n) != u
            )
            or None
        ),
        duration=WINDOW,
        selector=f"{PFX}name={name}",
    )
    assert changed is None, f"restartPolicy None recreated pods after {target}'s container exited: {changed}"
    assert not recreate_group_events(sc), "RecreateGroup event under restartPolicy None"


# -- RecreateGroupAfterStart -------------------------------------------------------------------
@pytest.mark.requirement("CHAOS-RESTART-004")
def test_recreate_group_after_start_waits_until_the_group_has_started(
    scenario: Scenario, lwsc_cluster: ClusterHandle
) -> None:
    """While the workers of the group are still Pending (held by a scheduling gate), a leader
    container restart recreates nothing; once every pod of the group runs, the restart (still
    recorded in the leader's restartCount) rebuilds the whole group."""
    sc, name = scenario, "ra"
    sc.require_simulated_kubelet("keeps a container restart in the leader's restartCount")
    obj = restart_lws(name, "RecreateGroupAfterStart", replicas=1, size=3)
    waits_until_started(sc, obj, "RecreateGroupAfterStart")


# -- under Kueue -------------------------------------------------------------------------------
@pytest.mark.requirement("CHAOS-RESTART-005")
def test_recreated_group_is_readmitted_whole_under_kueue(scenario: Scenario, unique: str) -> None:
    """Under Kueue (quota for exactly one group), a worker restart rebuilds the group; the new
    pods pass Kueue's admission gate under the same admitted Workload, all of them."""
    sc, name, size = scenario, "kq", 3
    topo = sc.cluster.topology
    sc.create(workloads.resource_flavor(unique))
    sc.create(workloads.cluster_queue(unique, unique, {"cpu": "10", "memory": "10Gi", topo.gpu_resource: str(size)}))
    sc.create(workloads.local_queue("lq", unique))
    lws = sc.create(
        restart_lws(
            name, "RecreateGroupOnPodRestart", replicas=1, size=size, gpus=1, gpu_resource=topo.gpu_resource, queue="lq"
        )
    )
    before = steady(sc, lws)
    wl_before = _workloads(sc)
    assert len(wl_before) == 1 and _admitted(wl_before[0]), [w["metadata"]["name"] for w in wl_before]
    apply_fault(sc, "restart", name, 0, 1)
    after = wait_group_recreated(sc, lws, 0, before, RECOVERY)
    pods = [p for p in P.live(sc.pods(f"{PFX}name={name}")) if p["metadata"]["name"] in after]
    for p in pods:
        assert not P.gated(p), f"{p['metadata']['name']} still gated"
        assert (p["metadata"].get("labels") or {}).get("kueue.x-k8s.io/podset"), (
            f"{p['metadata']['name']} not admitted by Kueue"
        )
    wl_after = _workloads(sc)
    assert [w["metadata"]["uid"] for w in wl_after] == [wl_before[0]["metadata"]["uid"]], (
        "the group got another Workload"
    )
    assert _admitted(wl_after[0]), "the Workload is no longer admitted after the group restart"


def _workloads(sc: Scenario) -> list[Obj]:
    return sc.list_objects("Workload")


def _admitted(wl: Obj) -> bool:
    return P.condition(wl, "Admitted") == "True"
