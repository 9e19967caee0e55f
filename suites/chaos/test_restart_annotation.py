"""RecreateGroupAfterStart in its annotation form (LWS pod_controller.go handleRestartPolicy@v0.9.0).

Why: LWS v0.8 shipped "recreate the group only once it has started" as the experimental annotation
`leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start` on an LWS with
RecreateGroupOnPodRestart; v0.9 added the restartPolicy value and still reads the annotation. LWSs
written for v0.8 keep the annotation through upgrades: if it stopped being read, a container
restart during a long image pull would tear the whole group down again and again.
"""

from __future__ import annotations

import pytest
from test_restart_policy import HOLD_GATE, RECOVERY, WINDOW, _apply_fault, _lws, _recreate_group_events

from lws_conformance.k8s import predicates as P
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
ANNOTATION = "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start"


@pytest.mark.requirement("CHAOS-RESTART-007")
def test_annotation_form_waits_until_the_group_has_started(scenario: Scenario) -> None:
    """restartPolicy RecreateGroupOnPodRestart plus the annotation: while the workers are Pending
    (held by a scheduling gate) a leader container restart recreates nothing; once every pod runs,
    the recorded restart rebuilds the whole group."""
    sc, name = scenario, "rn"
    sc.require_simulated_kubelet("keeps a container restart in the leader's restartCount")
    obj = _lws(name, "RecreateGroupOnPodRestart", replicas=1, size=3)
    obj["metadata"]["annotations"] = {ANNOTATION: "true"}
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    lws = sc.create(obj)
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart", lws["spec"]
    workers = [f"{name}-0-1", f"{name}-0-2"]
    pods = sc.wait_pods(
        lambda ps: (
            ps
            if P.names(ps) == {f"{name}-0", *workers}
            and all(P.pod_ready(p) for p in P.live(ps) if p["metadata"]["name"] == f"{name}-0")
            and all(P.gated(p, HOLD_GATE) for p in P.live(ps) if p["metadata"]["name"] in workers)
            else None
        ),
        f"leader {name}-0 Ready, workers {workers} Pending behind {HOLD_GATE}",
    )
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in P.live(pods)}
    _apply_fault(sc, "restart", name, 0, 0)
    changed = sc.observe_pods(
        lambda ps: (
            {p["metadata"]["name"] for p in ps if before.get(p["metadata"]["name"]) != p["metadata"]["uid"]}
            or (None if len(P.live(ps)) == len(before) else "a pod was deleted")
        ),
        duration=WINDOW,
    )
    assert changed is None, f"the annotation form recreated a group that had not started: {changed}"
    for w in workers:
        sc.core.patch_namespaced_pod(w, sc.namespace, [{"op": "remove", "path": "/spec/schedulingGates"}])
    sc.wait_pods(
        lambda ps: (
            ps
            if {p["metadata"]["name"] for p in P.live(ps)} == set(before)
            and not {p["metadata"]["uid"] for p in P.live(ps)} & set(before.values())
            else None
        ),
        f"every pod of group 0 ({sorted(before)}) recreated once the group had started",
        timeout=RECOVERY,
    )
    assert any(e["note"].endswith("to recreate group 0") for e in _recreate_group_events(sc)), "no RecreateGroup event"
