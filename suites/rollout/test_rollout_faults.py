"""Rolling updates under faults, watched event by event (leaderworkerset_controller.go rollingUpdateParameters@v0.9.0).

kubernetes-sigs/lws#225: after an LWS controller restart (or resync) in the middle of a rollout,
every group was updated at once — the worker StatefulSets were patched to the new template. Fixed
by PR #229 (the worker StatefulSet is created, never patched). The fault needs the controller
process, so it runs on the xdist worker's private cluster, never the shared one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    InfraError,
    LocalCluster,
    Scenario,
    WaitTimeout,
    artifact_dir,
    facts,
    node_containers,
    run_in_pod,
    wait_pod_log,
    workloads,
)
from lws_conformance.testing import predicates as P

from .rollout_claims import proves_invariants, verify_claims
from .rollout_probe_support import OLD, READY_FILE, _container
from .rollout_support import (
    bump_annotation,
    from_revision,
    held_update,
    leader_revision,
    moved_below,
    one_revision,
    pods_at,
    ready_again_when_the_update_moved,
    reconcile_window,
    recorded,
    release_partition,
    rollout_lws,
)

pytestmark = pytest.mark.cluster
# LWS's log lines at --zap-log-level=2 (v0.8.0 .. main) at the end of a reconcile of an LWS and of
# a leader pod (pkg/controllers/leaderworkerset_controller.go, pod_controller.go).
RECONCILED_LWS, RECONCILED_POD = "Leader Reconcile completed", "Worker Reconcile completed"
LWS_NAMESPACE = "lws-system"  # where LWS's config/default installs its controller


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-FAULT-001")
@pytest.mark.requirement("ROLL-FAULT-005")
def test_controller_restart_mid_rollout_updates_no_extra_group(
    private_scenario: Scenario,
    private_cluster: LocalCluster,
    claim: Claims,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """R=4, maxUnavailable 1, spec.partition 2: groups 3 and 2 update; the LWS controller is
    stopped and started while the partition holds; groups 1 and 0 must keep the old revision
    through the restarted controller's first reconciles and one reconcile window after them
    (watched), and lowering the partition then finishes the update with every
    invariant holding at every event."""
    sc, name, r, size, part = private_scenario, "rc", 4, 2, 2
    with recorded(sc) as tl:
        old, new = held_update(sc, name, r, size, part)
        sc.wait_pods(pods_at(name, r, size, lambda g: new if g >= part else old), "groups >= 2 new, the rest old")

        offset = private_cluster.log_offset("lws")
        private_cluster.stop_component("lws")
        private_cluster.start_component("lws")
        with claim("ROLL-FAULT-001"):
            # lws#225 happened in the restarted controller's first reconciles (the informers'
            # initial list queues every object): the window opens once this process has finished
            # its first reconcile of the LWS and of every leader pod below the partition (their
            # log lines at --zap-log-level=2; the local cluster runs LWS without leader election, so
            # there is no lease to watch), and lasts one reconcile's measured latency after that.
            for needle, key in ((RECONCILED_LWS, name), *((RECONCILED_POD, f"{name}-{g}") for g in range(part))):
                private_cluster.wait_log("lws", (needle, f'"name": "{key}"', sc.namespace), offset, 60)
            violation = sc.observe_pods(moved_below(part, old), duration=reconcile_window(request.config))
            assert violation is None, f"{violation} (kubernetes-sigs/lws#225 regression)"
        release_partition(sc, name, r, size, new, "update done after partition 0", f"all pods at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-FAULT-005"):
        by_group = facts.revisions_by_group(events)
        assert all(by_group.get(g) == [old, new] for g in range(r)), f"each group updated exactly once: {by_group}"


@proves_invariants
@pytest.mark.alone
@pytest.mark.requirement("ROLL-FAULT-004")
@pytest.mark.requirement("ROLL-FAULT-006")
def test_controller_pod_deleted_mid_rollout_updates_no_extra_group(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The kind counterpart of the restart above, the way an operator or a node drain does it: the
    LWS controller pod holding the leader-election Lease is deleted while spec.partition 2 holds
    (R=4, groups 3 and 2 updated); the Deployment's other replica takes the Lease. Groups 1 and 0
    must keep the old revision through the new leader's first reconciles (read from its log) and
    one reconcile window after them (watched); lowering the partition then finishes the update,
    each group updated exactly once, every invariant holding at every event. `alone`: without an
    LWS leader for up to a Lease duration, other tests' waits on the shared cluster would stall."""
    sc, name, r, size, part = scenario, "rc", 4, 2, 2
    sc.require_kind()
    cfg = {"kubeconfig": str(sc.cluster.kubeconfig)}
    with recorded(sc) as tl:
        old, new = held_update(sc, name, r, size, part)
        sc.wait_pods(pods_at(name, r, size, lambda g: new if g >= part else old), "groups >= 2 new, the rest old")

        gone = node_containers.delete_controller_pod("lws", configuration=cfg)
        taken = node_containers.wait_new_leader("lws", gone["deleted"], within=60, configuration=cfg)
        request.node.user_properties.append(("lease_taken_over_s", taken["after_s"]))
        with claim("ROLL-FAULT-004"):
            # As above: the window opens once the new leader has logged its first reconcile of the
            # LWS and of every leader pod below the partition.
            for needle, key in ((RECONCILED_LWS, name), *((RECONCILED_POD, f"{name}-{g}") for g in range(part))):
                wait_pod_log(
                    sc.api, LWS_NAMESPACE, taken["leader_pod"], "manager", (needle, f'"name": "{key}"', sc.namespace),
                    60,
                )  # fmt: skip
            violation = sc.observe_pods(moved_below(part, old), duration=reconcile_window(request.config))
            assert violation is None, f"{violation} after the controller pod {gone['deleted']} was deleted"
        release_partition(sc, name, r, size, new, "update done after partition 0", f"all pods at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-FAULT-006"):
        by_group = facts.revisions_by_group(events)
        assert all(by_group.get(g) == [old, new] for g in range(r)), f"each group updated exactly once: {by_group}"


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-FAULT-002")
def test_update_completes_when_every_old_group_is_unhealthy(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """kubernetes-sigs/lws#567 (fixed by PR #568 in v0.7.0): size 1, maxUnavailable 0, maxSurge 1,
    and no old pod ever becomes Ready (here: the old template selects no node, so every old pod
    stays Pending). Updating the template to one that can run MUST not get stuck: every group
    ends at the new revision and the LWS becomes Available."""
    sc, name, r, size = scenario, "ru", 4, 1
    obj = rollout_lws(name, r, size, mu=0, ms=1)
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"] = workloads.NOWHERE
    obj["spec"]["leaderWorkerTemplate"].pop("leaderTemplate", None)
    with recorded(sc) as tl:
        sc.create(obj)
        sc.wait_pods(
            lambda pods: pods if len(P.live(pods)) == r and not any(P.pod_ready(p) for p in pods) else None,
            f"{r} old pods, none Ready",
        )
        old = leader_revision(sc, name)
        sc.patch_lws(name, {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"nodeSelector": None}}}}})
        with claim("ROLL-FAULT-002"):
            sc.wait_lws(
                name, sc.settled(r), f"Available with {r} groups after the fixed template rolled out", timeout=90
            )
        new = leader_revision(sc, name)
        with claim("ROLL-FAULT-002"):
            assert new != old, "the template change did not create a new revision"
            sc.wait_pods(pods_at(name, r, size, lambda g: new), f"all pods at {new}")

    verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)


def _unready(sc: Scenario, pod: str) -> None:
    """Make `pod`'s readiness fail. On real kubelets its container's probe (`cat READY_FILE`, see
    `_container`) fails once the test removes the file, and the kubelet reports the pod not Ready.
    On the local cluster, where kwok runs no probe, the test writes what a kubelet writes then:
    Ready and ContainersReady False, the pod still Running (kwok's stages only play on Pending
    pods, so the fake kubelet leaves this alone). No container restarts either way, so no restart
    policy reacts."""
    if sc.cluster.provider != "local":
        # busybox's rm: the test image is agnhost with busybox (the kind image's /bin holds only
        # busybox's shell tools; agnhost's own image is built on busybox)
        ran = run_in_pod(sc.api, sc.namespace, pod, "main", ["/bin/busybox", "rm", "-f", READY_FILE], timeout=30)
        if ran.returncode != 0:
            raise InfraError(
                f"could not fail {pod}'s readiness probe: rm exited {ran.returncode}: {ran.stderr.strip()!r}"
            )
        return
    conds = [{"type": t, "status": "False", "reason": "ReadinessProbeFailed"} for t in ("ContainersReady", "Ready")]
    sc.core.patch_namespaced_pod_status(pod, sc.namespace, {"status": {"conditions": conds}})


def _probed_rollout_lws(name: str, r: int, size: int, mu: int) -> dict[str, Any]:
    """`rollout_lws` whose workers have an exec readiness probe that passes while READY_FILE exists
    (their command writes it at start), so a real kubelet's probe can be made to fail."""
    obj = rollout_lws(name, r, size, mu=mu)
    spec = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec.update(containers=[_container(OLD)], terminationGracePeriodSeconds=1)
    return obj


def _unready_group_counted_ready(sc: Scenario, name: str, group: int, worker: str) -> str | None:
    """Why LWS `name` still counts `group` ready with its `worker` not Ready, when the objects show
    it: the LWS's readyReplicas counting every group while the group's worker StatefulSet has all
    its pods (status.replicas = spec.replicas) but fewer of them Ready or available (lws PR #705:
    StatefulsetReady compared status.replicas); None for any other picture (a slow controller, the
    pod Ready again), which the wait's own timeout names."""
    lws = sc.lws(name)
    replicas, ready = lws["spec"].get("replicas"), (lws.get("status") or {}).get("readyReplicas")
    sts = next((x for x in sc.statefulsets() if x["metadata"]["name"] == f"{name}-{group}"), None)
    pods = sc.pods(f"leaderworkerset.sigs.k8s.io/name={name}")
    pod = next((p for p in pods if p["metadata"]["name"] == worker), None)
    if sts is None or pod is None or ready != replicas or P.pod_ready(pod):
        return None
    st, want = sts.get("status") or {}, sts["spec"].get("replicas")
    sts_ready, available = st.get("readyReplicas", 0), st.get("availableReplicas", 0)
    if st.get("replicas") != want or min(sts_ready, available) >= want:
        return None
    return (
        f"readyReplicas {ready} with group {group}'s worker {worker} not Ready: its StatefulSet {name}-{group} has "
        f"status.replicas {want} = spec.replicas, readyReplicas {sts_ready}, availableReplicas {available}"
    )


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-FAULT-003")
def test_update_counts_an_already_unhealthy_group_against_max_unavailable(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """lws PR #488 (upstream integration test "rolling update with unhealthy pods below
    partition"): R=4, maxUnavailable 2, group 1 unready (a worker's readiness fails) before the
    update. The first partition step may take down only one more group (partition 3, not 2), and
    at every event at most 2 groups -- group 1 included -- are unavailable (availability-bound,
    ROLL-AVAIL-001); the update then completes, replacing group 1 too."""
    sc, name, r, size = scenario, "uh", 4, 2
    with recorded(sc) as tl:
        sc.create(_probed_rollout_lws(name, r, size, mu=2))
        sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
        old = leader_revision(sc, name)
        _unready(sc, f"{name}-1-1")
        try:
            sc.wait_lws(
                name,
                lambda o: (o.get("status") or {}).get("readyReplicas") == r - 1,
                "readyReplicas 3 (group 1 unready)",
            )
        except WaitTimeout:
            counted = _unready_group_counted_ready(sc, name, 1, f"{name}-1-1")
            if counted is None:
                raise
            raise AssertionError(counted) from None
        bump_annotation(sc, name, "1")
        sc.wait_lws(name, sc.settled(r), "update done: Available, all groups updated", timeout=90)
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, r, size, lambda g: new), f"all pods Ready at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-FAULT-003"):
        steps = from_revision(events, new)
        if lost := ready_again_when_the_update_moved(events, f"{name}-1-1", steps, r):
            raise InfraError(lost)
        moved = [s.partition for s in steps if s.partition < r]
        assert moved and moved[0] == 3, f"first partition step {moved[:1]}, want 3 (group 1 already unready): {steps}"
        by_group = facts.revisions_by_group(events)
        assert all(by_group.get(g) == [old, new] for g in range(r)), f"each group updated once: {by_group}"


@pytest.mark.requirement("ROLL-STATUS-001")
def test_updated_group_that_never_gets_ready_counts_as_updated(scenario: Scenario, claim: Claims) -> None:
    """R=3, size 2, maxUnavailable 1: the new worker template selects no node, so group 2, the
    first one updated, comes back with its leader Ready and its workers Pending, and the rollout
    holds there. status.updatedReplicas counts groups updated "ready or not" (1) and readyReplicas
    those Ready "updated or not" (2, the old groups 0 and 1)."""
    sc, name, r, size = scenario, "uw", 3, 2
    sc.create(rollout_lws(name, r, size, mu=1))
    sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
    old = leader_revision(sc, name)
    sc.patch_lws(
        name,
        {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"nodeSelector": workloads.NOWHERE}}}}},
    )

    def group_2_stuck(pods: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        live = {p["metadata"]["name"]: p for p in P.live(pods)}
        leader, worker = live.get(f"{name}-2"), live.get(f"{name}-2-1")
        if leader is None or worker is None or leader["metadata"]["labels"].get(P.REVISION_LABEL) == old:
            return None
        return pods if P.pod_ready(leader) and (worker.get("status") or {}).get("phase") == "Pending" else None

    sc.wait_pods(group_2_stuck, f"group 2 at the new revision: {name}-2 Ready, {name}-2-1 Pending (no node)")
    with claim("ROLL-STATUS-001"):
        sc.wait_lws(
            name,
            lambda o: (
                sc.current(o)
                and {k: (o.get("status") or {}).get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas")}
                == {"replicas": r, "readyReplicas": r - 1, "updatedReplicas": 1}
            ),
            "status replicas 3, readyReplicas 2 (groups 0, 1), updatedReplicas 1 (group 2, not Ready)",
        )
