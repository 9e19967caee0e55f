"""startupPolicy LeaderReady during rolling updates, watched event by event
(pod_controller.go Reconcile, rollingUpdateParameters@v0.9.0).

Why: with LeaderReady the workers of a group dial a leader that is already serving; an update
replaces each group whole, so the new group's workers must again wait for the new leader to be
Ready -- not start next to a leader still pulling a multi-GB image.

On kwok a bound pod is Ready at once, so the update itself holds the new leaders: it adds a
scheduling gate to the leader template (the template change that starts the rollout). Each new
leader stays Pending until the test removes the gate from that pod (a pod update, no new revision),
after a window in which nothing of its workers may appear. The order is proven from the watch
stream (resourceVersion order), not from timestamps.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import Claims, Event, Scenario, artifact_dir, history, observe
from lws_conformance.testing import predicates as P

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import LBL, REVISION, leader_revision, pods_at, recorded, rollout_lws

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
HOLD_GATE = "lwsc.x-k8s.io/hold-new-leader"


def _new_leader_held(name: str, g: int, old: str) -> Any:
    """Leader `name-g` of a revision other than `old`, Pending behind the hold gate."""

    def check(pods: list[Obj]) -> Obj | None:
        for p in P.live(pods):
            if (
                p["metadata"]["name"] == f"{name}-{g}"
                and p["metadata"]["labels"].get(REVISION) != old
                and P.gated(p, HOLD_GATE)
                and not p["spec"].get("nodeName")
            ):
                return p
        return None

    return check


def _new_workers(name: str, g: int, revision: str) -> Any:
    """Violation check for `observe`: a worker StatefulSet or worker pod of group g at `revision`."""

    def early(items: list[Obj]) -> str | None:
        bad = [
            f"{o.get('kind', '')}/{o['metadata']['name']}"
            for o in items
            if o["metadata"]["name"].startswith(f"{name}-{g}")
            and (o["metadata"].get("labels") or {}).get(REVISION) == revision
            and (o["metadata"].get("labels") or {}).get(LBL + "worker-index", "w") != "0"
        ]
        return f"written while the new leader {name}-{g} was not Ready: {bad}" if bad else None

    return early


def new_incarnation_order(events: list[Event], name: str, g: int, revision: str) -> list[str]:
    """LeaderReady for the incarnation of group g at `revision`: from the first write of its new
    leader on, nothing of its workers at that revision (the worker StatefulSet, worker pods) may
    be written before the write that made that leader Ready (the old incarnation's objects,
    still being garbage-collected, share the names and are left out by their revision)."""
    start = next(
        (
            i
            for i, e in enumerate(events)
            if e.kind == "Pod"
            and e.obj.get("name") == f"{name}-{g}"
            and (e.obj.get("labels") or {}).get(REVISION) == revision
        ),
        None,
    )
    if start is None:
        return [f"no leader {name}-{g} at revision {revision} was recorded"]
    mine = [
        e
        for e in events[start:]
        if e.kind in ("Pod", "StatefulSet") and (e.obj.get("labels") or {}).get(REVISION) == revision
    ]
    return history.workers_before_leader_ready(mine, name, g)


@proves_invariants
@pytest.mark.requirement("ROLL-STARTUP-001")
def test_leader_ready_holds_workers_of_each_updated_group(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=2, size 3, startupPolicy LeaderReady, maxUnavailable 1. The update gates the new leaders;
    for group 1 then group 0: while the new leader is held, no worker StatefulSet or worker pod
    of the new revision may appear (watched); once it is Ready the workers follow; in the watch
    stream every new-revision worker object is written after its leader's Ready write."""
    sc, name, r, size = scenario, "ls", 2, 3
    obj = rollout_lws(name, r, size)
    obj["spec"]["startupPolicy"] = "LeaderReady"
    # Under LeaderCreated the worker StatefulSet follows the leader's creation within ~0.1 s here;
    # 1.5 s (times timeouts.scale) per held leader is many of those.
    window = 1.5
    with recorded(sc) as tl:
        sc.create(obj)
        sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
        old = leader_revision(sc, name)
        leader_spec = copy.deepcopy(sc.lws(name)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"])
        leader_spec["schedulingGates"] = [{"name": HOLD_GATE}]
        sc.patch_lws(name, {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": leader_spec}}}})
        for g in reversed(range(r)):
            held = sc.wait_pods(_new_leader_held(name, g, old), f"new leader {name}-{g} Pending behind the hold gate")
            new = held["metadata"]["labels"][REVISION]
            with claim("ROLL-STARTUP-001"):  # worker pods need the StatefulSet; the stream checks them too
                early = observe(
                    sc.api,
                    sc.apps.list_namespaced_stateful_set,
                    _new_workers(name, g, new),
                    duration=window,
                    namespace=sc.namespace,
                )
                assert early is None, early
            sc.core.patch_namespaced_pod(
                f"{name}-{g}", sc.namespace, [{"op": "remove", "path": "/spec/schedulingGates"}]
            )
        sc.wait_lws(name, sc.settled(r), "update done")
        sc.wait_pods(pods_at(name, r, size, lambda g: new), f"all pods Ready at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-STARTUP-001"):
        wrong = [w for g in range(r) for w in new_incarnation_order(events, name, g, new)]
        assert not wrong, f"LeaderReady violated during the update, in write order: {wrong}"
