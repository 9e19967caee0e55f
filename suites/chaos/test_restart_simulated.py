"""Restart policies under a kubelet's own reports, on the local cluster (kwok: no container runs).

The real-kubelet tests of these promises (test_restart_policy.py, test_experiments.py) make a
process exit, an init container fail or the runtime kill a container, and read not-run on the local
cluster. Here the test writes exactly what the kubelet reports for the same events on the
pods/status subresource (`lws_conformance.chaos.kubelet`): a container's exit (state terminated,
the pod not Ready) then its restart (restartCount + 1, the exit in lastState); an init container's
failure while its pod is Pending (Initialized False) then its restart. LWS reads nothing else of a
restart (pod_controller.go handleRestartPolicy and pod_utils.go ContainerRestarted@v0.9.0), so its
reaction is the one real kubelets get. A Pending pod needs a node kwok leaves alone: the workers of
the init-container test run on a `ScriptedNode`, whose kubelet is the test. Where these tests ran
reads "simulated kubelet"; on real kubelets they read not-run (the kubelet overwrites pod status).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Scenario,
    images,
    kubelet,
    steady_state_violations,
)
from lws_conformance.testing import predicates as P

from .restart_support import (
    PFX,
    RECOVERY,
    WINDOW,
    group_uids,
    recreate_group_events,
    restart_lws,
    steady,
    wait_group_recreated,
)

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
OWN_EXIT, KILLED = 3, 137  # a process exiting by itself (test_restart_policy's EXIT_CODE); SIGKILL
INIT = "init"


def _main(pod: Obj) -> str:
    return str(pod["spec"]["containers"][0]["name"])


def _exit_and_restart(sc: Scenario, pod: str, code: int) -> None:
    """The kubelet's two reports for a container whose process ended with `code`: exited (not
    Ready), then restarted (restartCount + 1, the exit in lastState, Ready again)."""
    exited = kubelet.report(sc.api, sc.namespace, pod, lambda p: kubelet.container_exited(p, _main(p), code))
    assert not P.pod_ready(exited), f"{pod} still Ready after its container exited: {exited['status']}"
    restarted = kubelet.report(sc.api, sc.namespace, pod, lambda p: kubelet.container_restarted(p, _main(p)))
    st = restarted["status"]["containerStatuses"][0]
    assert st["restartCount"] == 1 and st["lastState"]["terminated"]["exitCode"] == code, st


def _restarts(pods: list[Obj]) -> dict[str, tuple[str, int]]:
    """pod name -> (UID, restarts of its containers)."""
    return {
        p["metadata"]["name"]: (
            p["metadata"]["uid"],
            sum(int(c.get("restartCount") or 0) for c in (p.get("status") or {}).get("containerStatuses") or []),
        )
        for p in P.live(pods)
    }


# -- a container that exits (its own process, or killed through the runtime) ----------------------
@pytest.mark.parametrize(
    "code",
    [
        pytest.param(OWN_EXIT, id="own-exit", marks=pytest.mark.requirement("CHAOS-RESTART-008")),
        pytest.param(KILLED, id="runtime-kill", marks=pytest.mark.requirement("CHAOS-EXP-007")),
    ],
)
def test_simulated_container_exit_recreates_its_group(scenario: Scenario, code: int) -> None:
    """Under RecreateGroupOnPodRestart, worker sx-1-1's container is reported exited (code 3: its
    own process; 137: killed through the runtime) and restarted by the kubelet: LWS recreates all of
    group 1 under the same names and group index, while group 0 keeps its pods and containers."""
    sc, name, group = scenario, "sx", 1
    sc.require_simulated_kubelet("reports a container's exit and restart")
    lws = sc.create(restart_lws(name, "RecreateGroupOnPodRestart", replicas=2, size=2))
    before = steady(sc, lws)
    kept = {n: v for n, v in _restarts(sc.pods(f"{PFX}name={name}")).items() if n in group_uids(before, name, 0)}
    _exit_and_restart(sc, f"{name}-{group}-1", code)
    wait_group_recreated(sc, lws, group, before, timeout=RECOVERY)
    now = _restarts(sc.pods(f"{PFX}name={name}"))
    assert {n: now.get(n) for n in kept} == kept, (
        f"group 0 was touched by group 1's recreation: (UID, restarts) before {kept}, after "
        f"{ {n: now.get(n) for n in kept} }"
    )


@pytest.mark.requirement("CHAOS-RESTART-009")
def test_simulated_container_exit_under_none_restarts_only_itself(scenario: Scenario) -> None:
    """Under restartPolicy None the same reports (exit code 3, then the restart) leave every pod
    in place: sx-0-1 keeps its UID with restartCount 1, nothing is recreated, every group is
    Ready again, and no RecreateGroup event is emitted."""
    sc, name = scenario, "sxn"
    sc.require_simulated_kubelet("reports a container's exit and restart")
    lws = sc.create(restart_lws(name, "None", replicas=2, size=2))
    before = steady(sc, lws)
    target = f"{name}-0-1"
    _exit_and_restart(sc, target, OWN_EXIT)

    def changed(ps: list[Obj]) -> list[str] | None:
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in ps}
        return sorted(n for n in set(uids) | set(before) if uids.get(n) != before.get(n)) or None

    moved = sc.observe_pods(changed, duration=WINDOW, selector=f"{PFX}name={name}")
    assert moved is None, f"restartPolicy None recreated pods after {target}'s container exited: {moved}"
    pods = sc.wait_pods(
        lambda ps: ps if not steady_state_violations(lws, P.live(ps)) else None,
        f"every group Ready again after {target}'s restart",
        selector=f"{PFX}name={name}",
    )
    assert _restarts(pods)[target] == (before[target], 1), f"{target} (UID, restarts): {_restarts(pods)[target]}"
    assert not recreate_group_events(sc), "RecreateGroup event under restartPolicy None"


# -- an init container that fails at start-up (its pod Pending, on a node the test is the kubelet of) --
def _init_lws(name: str, node: str, hostname_label: str) -> Obj:
    """Two groups of 2 under RecreateGroupOnPodRestart; the workers have an init container and
    run on `node` (a ScriptedNode: only they tolerate it)."""
    obj = restart_lws(name, "RecreateGroupOnPodRestart", replicas=2, size=2)
    spec = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["terminationGracePeriodSeconds"] = 1
    spec["initContainers"] = [{"name": INIT, "image": images.ref("agnhost"), "command": ["/bin/sh", "-c", "true"]}]
    spec["nodeSelector"] = {hostname_label: node}
    spec["tolerations"] = [{"key": kubelet.UNBACKED, "operator": "Exists", "effect": "NoSchedule"}]
    return obj


def _drain(sc: Scenario, name: str, node: kubelet.ScriptedNode) -> None:
    """Delete the LWS and wait until its pods on `node` are gone (the scripted kubelet removes them)."""
    try:
        sc.custom.delete_namespaced_custom_object(LWS_GROUP, LWS_VERSION, sc.namespace, LWS_PLURAL, name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    node.drain()


@pytest.mark.requirement("CHAOS-RESTART-010")
@pytest.mark.destructive  # adds a Node object that no kwok manages
def test_simulated_init_container_restart_recreates_its_group(scenario: Scenario, unique: str) -> None:
    """Under RecreateGroupOnPodRestart, worker si-1-1 (Pending) is reported with its init container
    failed (exit 1) and then restarted by the kubelet (restartCount 1, the failure in lastState,
    Initialized False): LWS recreates all of group 1 (leader and worker, new UIDs, same names and
    group index) while group 0, Ready, keeps its pods. The recreated worker's init container
    then succeeds and the LWS is steady."""
    sc, name, group = scenario, "si", 1
    sc.require_simulated_kubelet("reports an init container's failure and restart")
    target = f"{name}-{group}-1"
    held: dict[str, str | None] = {"uid": None}  # the first si-1-1 only: its replacement starts

    def hold(pod: Obj) -> bool:
        return pod["metadata"]["name"] == target and held["uid"] in (None, pod["metadata"]["uid"])

    with kubelet.ScriptedNode(
        sc.api, f"lwsc-{unique}", sc.namespace, sc.cluster.topology.hostname_label, hold=hold
    ) as node:
        try:
            lws = sc.create(_init_lws(name, node.name, sc.cluster.topology.hostname_label))

            def first_up(ps: list[Obj]) -> dict[str, Obj] | None:
                live = {p["metadata"]["name"]: p for p in P.live(ps)}
                ready = [live.get(n) for n in (f"{name}-0", f"{name}-0-1", f"{name}-{group}")]
                pending = live.get(target)
                if not all(p and P.pod_ready(p) for p in ready) or not pending:
                    return None
                return live if pending["spec"].get("nodeName") == node.name else None

            seen = sc.wait_pods(
                first_up,
                f"group 0 Ready, leader {name}-{group} Ready, {target} bound to {node.name}",
                selector=f"{PFX}name={name}",
            )
            held["uid"] = seen[target]["metadata"]["uid"]
            failed = node.report(target, lambda p: kubelet.init_failed(p, INIT, exit_code=1))
            assert failed["status"]["phase"] == "Pending", failed["status"]
            restarted = node.report(target, lambda p: kubelet.init_restarted(p, INIT))
            init = restarted["status"]["initContainerStatuses"][0]
            assert init["restartCount"] == 1, restarted["status"]
            assert restarted["status"]["phase"] == "Pending", restarted["status"]
            uids = {n: p["metadata"]["uid"] for n, p in seen.items()}
            after = wait_group_recreated(sc, lws, group, uids, timeout=RECOVERY)
            assert group_uids(after, name, 0) == group_uids(uids, name, 0), (
                "group 0 was touched by group 1's recreation"
            )
            node.check()
        finally:
            _drain(sc, name, node)


# -- the old pods of a recreated group terminate gracefully (on a node the test is the kubelet of) --
GRACE, PRE_STOP = 30, 5  # the pods' terminationGracePeriodSeconds and their preStop hook's sleep (as on kind)


@pytest.mark.requirement("CHAOS-GRACE-001")
@pytest.mark.destructive  # adds a Node object that no kwok manages
def test_simulated_recreated_group_pods_terminate_gracefully(scenario: Scenario, unique: str) -> None:
    """A group of 2 on a ScriptedNode, its containers with a 5 s preStop sleep hook and a 30 s grace
    period; its worker's container is reported exited and restarted, so LWS deletes the leader to
    recreate the group. Every old pod must be seen terminating with its own grace period
    (deletionGracePeriodSeconds 30, not 0) and be removed only by its kubelet, once its preStop
    hook ran, never force-deleted before."""
    sc, name = scenario, "sg"
    sc.require_simulated_kubelet("reports a container's exit and restart, and runs the preStop hooks")
    hostname = sc.cluster.topology.hostname_label
    with kubelet.ScriptedNode(sc.api, f"lwsc-{unique}", sc.namespace, hostname) as node:
        try:
            obj = restart_lws(name, "RecreateGroupOnPodRestart", replicas=1, size=2)
            for key in ("leaderTemplate", "workerTemplate"):
                spec = obj["spec"]["leaderWorkerTemplate"][key]["spec"]
                spec["terminationGracePeriodSeconds"] = GRACE
                spec["nodeSelector"] = {hostname: node.name}
                spec["tolerations"] = [{"key": kubelet.UNBACKED, "operator": "Exists", "effect": "NoSchedule"}]
                for c in spec["containers"]:
                    c["lifecycle"] = {"preStop": {"sleep": {"seconds": PRE_STOP}}}
            lws = sc.create(obj)
            before = steady(sc, lws)
            _exit_and_restart(sc, f"{name}-0-1", KILLED)
            wait_group_recreated(sc, lws, 0, before, timeout=RECOVERY + 2 * PRE_STOP)
            node.check()
            wrong = []
            for pod, uid in sorted(before.items()):
                if uid in node.vanished:
                    wrong.append(f"{pod}: removed by someone else than its kubelet, before its preStop hook ran")
                elif uid not in node.terminations:
                    wrong.append(f"{pod}: never seen terminating (deleted without a grace period?)")
                elif node.terminations[uid] != GRACE:
                    wrong.append(
                        f"{pod}: deleted with deletionGracePeriodSeconds {node.terminations[uid]}, not its own {GRACE}"
                    )
            assert not wrong, "\n".join(wrong)
        finally:
            _drain(sc, name, node)
