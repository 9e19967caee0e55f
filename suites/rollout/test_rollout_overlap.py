"""Rolling updates that overlap other changes (leaderworkerset_controller.go rollingUpdateParameters@v0.9.0).

Why: operators push a fix while the previous rollout is still going, change the replica count in
the same apply as the template, or create an LWS with its rollout knobs already set; each takes a
different branch of rollingUpdateParameters (Case 1 no StatefulSet yet, Case 2 a new revision,
Case 4 replicas changed mid-update) than a plain update does. Upstream covers them with
integration tests that fake pod readiness ("multiple rolling update with maxSurge set", "rolling
update with replicas scaled up/down and maxSurge set"); here the real controllers run them,
recorded event by event and checked against every rollout invariant
(rollout_claims.py), plus each case's own sequence.

The wide-step cases (maxUnavailable 2, with and without maxSurge 2) are rows of the rolling-update
matrix in test_rolling_update.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, artifact_dir, facts, record, saved
from lws_conformance.testing import predicates as P

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import (
    bump_annotation,
    leader_revision,
    one_revision,
    pods_at,
    recorded,
    release_partition,
    rollout_lws,
    set_partition,
)

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
LBL = "leaderworkerset.sigs.k8s.io/"
REVISION = LBL + "template-revision-hash"


def _revisions_at(pods: list[Obj]) -> dict[int, str]:
    return {
        int(p["metadata"]["labels"][LBL + "group-index"]): str(p["metadata"]["labels"].get(REVISION))
        for p in P.live(pods)
        if p["metadata"]["labels"].get(LBL + "worker-index") == "0"
    }


@proves_invariants
@pytest.mark.requirement("ROLL-MULTI-001")
def test_second_template_change_mid_rollout(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=4, maxSurge 2, held by spec.partition 2 with groups 2-3 and the surge groups 4-5 at
    revision 2: a second template change (revision 3) restarts the update from the top
    (partition back to R, 6 replicas); lowering the partition finishes it with every group at
    revision 3, the groups never updated going straight from 1 to 3, the surge reclaimed and one
    ControllerRevision left."""
    sc, name, r, size, ms, part = scenario, "mt", 4, 2, 2, 2
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, r, size, mu=1, ms=ms))
        sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
        rev1 = leader_revision(sc, name)
        set_partition(sc, name, part)
        bump_annotation(sc, name, "1")

        def held(old: str, seen: set[str]) -> Any:
            """6 groups Ready: 0-1 at `old`, 2-5 at one revision that is neither `old` nor in `seen`."""

            def check(pods: list[Obj]) -> str | None:
                live = P.live(pods)
                if P.names(pods) != P.expected_pod_names(name, r + ms, size) or len(live) != len(pods):
                    return None
                revs = _revisions_at(live)
                top = {revs.get(g) for g in range(part, r + ms)}
                if not all(map(P.pod_ready, live)) or any(revs.get(g) != old for g in range(part)):
                    return None
                return next(iter(top)) if len(top) == 1 and not top & {old, *seen} else None

            return check

        rev2 = sc.wait_pods(held(rev1, set()), f"groups 0-1 at {rev1}, groups 2-5 at revision 2, all Ready")
        bump_annotation(sc, name, "2")
        rev3 = sc.wait_pods(held(rev1, {rev2}), f"groups 0-1 at {rev1}, groups 2-5 at revision 3, all Ready")
        release_partition(
            sc, name, r, size, rev3, "update done after partition 0", f"{r} groups at {rev3}, no surge group"
        )

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-MULTI-001"):
        assert len({rev1, rev2, rev3}) == 3, (rev1, rev2, rev3)
        one_revision(sc, name, rev3)
    with claim("ROLL-MULTI-001"):
        steps = facts.leader_sts_steps(events)
        first3 = next((s for s in steps if s.revision == rev3), None)
        assert first3 is not None, f"the leader StatefulSet never carried {rev3}: {steps}"
        want = facts.documented_update_start(r, r + ms, 1, ms, partition=part)
        assert (first3.replicas, first3.partition) == want, (
            f"second update start (replicas, partition) {(first3.replicas, first3.partition)}, want {want}: {steps}"
        )
        assert (steps[-1].revision, steps[-1].replicas, steps[-1].partition) == (rev3, r, 0), f"final: {steps}"
    with claim("ROLL-MULTI-001"):
        by_group = facts.revisions_by_group(events)
        want_groups = {
            0: [rev1, rev3],
            1: [rev1, rev3],
            2: [rev1, rev2, rev3],
            3: [rev1, rev2, rev3],
            4: [rev2, rev3],
            5: [rev2, rev3],
        }
        wrong = {g: (by_group.get(g), w) for g, w in want_groups.items() if by_group.get(g) != w}
        assert not wrong, f"leader incarnations per group (got, want): {wrong}"


@pytest.mark.parametrize(("r0", "r1"), [pytest.param(2, 4, id="up-2-4"), pytest.param(6, 3, id="down-6-3")])
@proves_invariants
@pytest.mark.requirement("ROLL-SCALE-003")
def test_template_and_replicas_change_with_surge(
    scenario: Scenario, claim: Claims, r0: int, r1: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """maxSurge 2: one patch changes the template and replicas R -> R'. The update runs against
    R': the leader StatefulSet starts as rollingUpdateParameters' Case 2 says ((R', R) when
    growing, (R' + maxSurge, R') when shrinking), never asks for more than R' + maxSurge groups,
    and ends with R' groups at the new revision."""
    sc, name, size, ms = scenario, "rx", 2, 2
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, r0, size, mu=1, ms=ms))
        sc.wait_lws(name, sc.settled(r0), f"Available with {r0} groups")
        old = leader_revision(sc, name)
        sc.patch_lws(
            name,
            {
                "spec": {
                    "replicas": r1,
                    "leaderWorkerTemplate": {
                        "workerTemplate": {"metadata": {"annotations": {"lwsc.x-k8s.io/bump": "1"}}}
                    },
                }
            },
        )
        sc.wait_lws(name, sc.settled(r1), f"update done with {r1} groups")
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, r1, size, lambda g: new), f"{r1} groups at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-SCALE-003"):
        assert new != old, "the template change did not create a new revision"
        steps = [s for s in facts.leader_sts_steps(events) if s.revision == new]
        assert steps, "the leader StatefulSet never carried the new revision"
        want = facts.documented_update_start(r1, r0, 1, ms)
        assert (steps[0].replicas, steps[0].partition) == want, (
            f"update start (replicas, partition) {(steps[0].replicas, steps[0].partition)}, want {want}: {steps}"
        )
        bound = r1 + min(ms, r1)
        over = [s for s in steps if (s.replicas or 0) > bound]
        assert not over, f"leader StatefulSet replicas above R' + maxSurge = {bound}: {over}"
        assert (steps[-1].replicas, steps[-1].partition) == (r1, 0), f"final: {steps}"
    with claim("ROLL-SCALE-003"):
        by_group = facts.revisions_by_group(events)
        for g in range(min(r0, r1)):
            assert by_group.get(g) == [old, new], f"group {g} incarnations {by_group.get(g)}, want [old, new]"
        for g in range(r0, r1):
            assert by_group.get(g) == [new], f"new group {g} incarnations {by_group.get(g)}, want [new]"


@pytest.mark.requirement("ROLL-PART-003")
def test_create_with_partition_and_surge_creates_only_replicas(
    scenario: Scenario, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """lws#614: an LWS created with partition above 0 and maxSurge (no update ever happened)
    creates replicas groups, not replicas + maxSurge ones that are then deleted."""
    sc, name, r, size, ms, part = scenario, "cp", 3, 2, 2, 4
    with record(sc.api, sc.namespace) as tl:
        sc.create(rollout_lws(name, r, size, mu=1, ms=ms, partition=part))
        sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
        rev = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, r, size, lambda g: rev), f"{r} groups Ready")
    events = saved(tl, artifact_dir(tmp_path), request.node.name)
    steps = facts.leader_sts_steps(events)
    peak = facts.peak_live_groups(events)
    over = [s for s in steps if (s.replicas or 0) > r]
    assert not over and peak <= r, (
        f"created with partition {part} and maxSurge {ms}: leader StatefulSet replicas {[s.replicas for s in steps]}, "
        f"{peak} groups live at once, want at most {r}"
    )
