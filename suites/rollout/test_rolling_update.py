"""Group rolling updates, watched event by event (leaderworkerset_controller.go
rollingUpdateParameters, updateConditions@v0.9.0).

Why: a rolling update of multi-host inference groups must never mix revisions inside a group,
never take down more groups than maxUnavailable (plus available surge) allows, never create more
than replicas + maxSurge groups, must go from the highest index down, respect the partition, and
must finish clean (no surge groups, one ControllerRevision, status and conditions settled). Final
states cannot show any of that, so every test records every watch event of its namespace
(`lws_conformance.observe`) and checks the invariants after each event; on a violation the
assertion names the event and points at the saved timeline JSON and SVG picture.

On top of the invariants, each case asserts the documented partition/replica sequence
(rollingUpdateParameters@v0.9.0): the (replicas, partition) the controller writes when it detects the new revision, the
first partition step, the surge peak, and that each group's leader was replaced exactly once.

Rollouts are triggered by a template change (an annotation on the worker template, or an env var
on the leader template); kwok makes new pods Ready at once, so a rollout takes seconds.

Each invariant proves its own requirement (rollout_claims.py); the test-specific assertions claim
their own requirement (`claim` fixture), so one failure never hides or reds another requirement.
Faults during an update (controller restart, lws#225; every old group unhealthy, lws#567) are in
test_rollout_faults.py.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    Event,
    Scenario,
    Timeline,
    WaitTimeout,
    artifact_dir,
    facts,
)
from lws_conformance.testing import predicates as P

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import (
    BUMP,
    LBL,
    bump_annotation,
    from_revision,
    held_update,
    leader_revision,
    moved_below,
    one_revision,
    pods_at,
    reconcile_window,
    recorded,
    release_partition,
    rollout_lws,
    set_partition,
)

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------


def _bump_env(sc: Scenario, name: str, value: str) -> None:
    """A leader-template env var change (merge patch replaces the containers list, so send it whole)."""
    containers = copy.deepcopy(sc.lws(name)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"])
    for c in containers:
        c["env"] = [e for e in c.get("env") or [] if e.get("name") != "LWSC_BUMP"] + [
            {"name": "LWSC_BUMP", "value": value}
        ]
    sc.patch_lws(name, {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": containers}}}}})


def _since_generation(events: list[Event], generation: int) -> list[Event]:
    """The LWS snapshots (observe.timeline) from the first one at `generation` (the template
    change) on."""
    lws = [ev for ev in events if ev.kind == "LeaderWorkerSet" and ev.type != "DELETED"]
    first = next((i for i, ev in enumerate(lws) if ev.obj.get("generation") == generation), len(lws))
    return lws[first:]


def _update_in_progress_gaps(lws_events: list[Event]) -> list[str]:
    """ROLL-COND-001: statuses written for the new template while groups were outdated
    (updatedReplicas < replicas - partition) that did not say UpdateInProgress=True. Before
    v0.9.0 there is no status.observedGeneration; a status after the template change that shows
    outdated groups was written after it (before the change every group was updated)."""
    gaps = []
    for ev in lws_events:
        spec, st = ev.obj["spec"], ev.obj["status"]
        if st.get("observedGeneration") not in (None, ev.obj.get("generation")):
            continue
        conds = st.get("conditions") or {}
        if st["updatedReplicas"] < spec["replicas"] - spec["partition"] and conds.get("UpdateInProgress") != "True":
            gaps.append(f"seq {ev.seq}: updatedReplicas {st['updatedReplicas']}, conditions {conds}")
    return gaps


# -- the matrix ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    replicas: int
    size: int
    mu: int | str
    ms: int | str
    peak: int  # most groups live at once during the update (documented)
    first_partition: int  # first partition step after the new revision is detected (documented)
    trigger: str = "annotation"


# Chosen for coverage per second (the cluster is shared; a group step costs 1-4 s there). Left
# out, with their numbers checked against rollingUpdateParameters by tests/test_invariants.py instead: R=4 default
# (same code paths as r3-default, r4-ms1), R=3 mu=50%/ms=50% (Burst 5), and mu=0 with ms=0
# (rejected by validation, the validation suite's job).
CASES = [
    # R=3 default (mu 1, ms 0): P 3 -> 2 -> 1 -> 0, never more than 3 groups.
    Case("r3-default", 3, 2, 1, 0, peak=3, first_partition=2),
    # R=4 ms=1 (documented): replicas 5, P 3, back to 4 replicas.
    Case("r4-ms1", 4, 2, 1, 1, peak=5, first_partition=3),
    # R=2 ms=4 capped at 2 (documented): replicas 3 (unready 2 <= 2 -> 2 + (2 - 1)), P 1;
    # triggered by a leader-template env var.
    Case("r2-ms4-env", 2, 2, 1, 4, peak=3, first_partition=1, trigger="env"),
    # Percentages rounding both ways: mu 40% of 2 -> 0 (down), ms 40% of 2 -> 1 (up), i.e. the
    # e2e "mu=0, ms=1" case: replicas 3, P stays 2 until the surge group is up.
    Case("r2-pct40", 2, 2, "40%", "40%", peak=3, first_partition=2),
    # size 1 (no worker StatefulSets) with mu 10 > R: P 0 at once, all groups replaced together.
    Case("r3-size1-mu10", 3, 1, 10, 0, peak=3, first_partition=0),
    # maxUnavailable 2 (upstream "workerTemplate changed with maxUnavailable=2") and maxUnavailable
    # 2 with maxSurge 2 (upstream "rolling update with maxUnavailable and maxSurge set", the rollout
    # table of lws PR #98): R=4, so the first step takes two groups at once.
    Case("r4-mu2", 4, 2, 2, 0, peak=4, first_partition=2),
    Case("r4-mu2-ms2", 4, 2, 2, 2, peak=6, first_partition=2),
]


# Every case under restartPolicy None and under the API default RecreateGroupOnPodRestart (field
# left out): the update's own deletions of old workers must not restart a group (lws#291).
POLICIES = {"none": "None", "recreate": None}


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@proves_invariants
@pytest.mark.requirement("ROLL-SEQ-001")
@pytest.mark.requirement("ROLL-COND-001")
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-RESTART-001")
@pytest.mark.requirement("ROLL-EVENT-001")
def test_rolling_update_matrix(
    scenario: Scenario, claim: Claims, case: Case, policy: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    sc, name = scenario, "ru"
    # The documented numbers are also derived from the algorithm; both must agree (a typo guard).
    start = facts.documented_update_start(case.replicas, case.replicas, case.mu, case.ms)
    assert start[0] == case.peak and facts.documented_first_step(case.replicas, case.mu, case.ms) == (
        case.first_partition
    ), f"case table disagrees with rollingUpdateParameters: start {start}, first step"

    with recorded(sc) as tl:
        sc.create(rollout_lws(name, case.replicas, case.size, case.mu, case.ms, policy=POLICIES[policy]))
        sc.wait_lws(name, sc.settled(case.replicas), f"Available with {case.replicas} groups")
        old = leader_revision(sc, name)
        (_bump_env if case.trigger == "env" else bump_annotation)(sc, name, "1")
        final = sc.wait_lws(name, sc.settled(case.replicas), "update done: Available, all groups updated")
        new = leader_revision(sc, name)
        assert new != old, "the template change did not create a new revision"
        sc.wait_pods(pods_at(name, case.replicas, case.size, lambda g: new), f"all pods Ready at revision {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    steps = from_revision(events, new)
    with claim("ROLL-COND-001"):
        updating = _since_generation(events, final["metadata"]["generation"])
        gaps = _update_in_progress_gaps(updating)
        assert not gaps, f"statuses with outdated groups but without UpdateInProgress=True: {gaps}"
        assert any((ev.obj["status"].get("conditions") or {}).get("UpdateInProgress") == "True" for ev in updating), (
            "UpdateInProgress=True was never reported for the new template"
        )
        assert P.condition(final, "UpdateInProgress") != "True", f"UpdateInProgress still True at the end: {final}"
    with claim("ROLL-SEQ-001"):
        _documented_sequence(case, events, steps, start, old, new)
    with claim("ROLL-EVENT-001"):
        missing: list[str] = []
        try:
            sc.wait_in_namespace(
                sc.core.list_namespaced_event,
                "Events",
                _lws_events(name, case, old, new, missing),
                "the LWS controller's events of the creation and the update",
                timeout=10,
            )
        except WaitTimeout as exc:
            raise AssertionError(f"{exc}\nlast seen, missing: {missing}") from None
    if policy == "recreate":  # under None there is no group restart to misfire: not claimed
        with claim("ROLL-RESTART-001"):
            _restarted_once(sc, name, case, events, old, new)


COMBINED = "(combined from similar events): "  # client-go's event aggregator, after 10 of one reason


def _lws_events(name: str, case: Case, old: str, new: str, missing: list[str]) -> Any:
    """ROLL-EVENT-001: the Normal events LWS v0.9.0 records on the LWS for a creation and an update
    (leaderworkerset_controller.go / pod_controller.go Eventf calls), each reason with its message.
    Kubernetes events are best-effort: past 10 events of one reason the aggregator keeps only the
    latest message (prefixed), so per-group messages cannot all be required; only the first of
    each kind and one GroupsUpdating step are."""
    want = {
        ("CreatingRevision", f"Creating revision with key {old} for a newly created LeaderWorkerSet"),
        ("CreatingRevision", f"Creating revision with key {new} for updated LWS"),
        ("GroupsProgressing", f"Created leader statefulset {name}"),
    }
    if case.size > 1:
        want.add(("GroupsProgressing", f"Created worker statefulset for leader pod {name}-0"))

    def check(items: list[Obj]) -> list[Obj] | None:
        mine = [
            e
            for e in items
            if (e.get("involvedObject") or {}).get("kind") == "LeaderWorkerSet"
            and e["involvedObject"].get("name") == name
            and e.get("type") == "Normal"
        ]
        seen = {(e.get("reason"), str(e.get("message")).removeprefix(COMBINED)) for e in mine}
        missing[:] = [f"{r}: {m}" for r, m in sorted(want - seen)]
        if not any(
            r == "GroupsUpdating" and re.fullmatch(r"Updating replicas? \d+( to \d+ \(inclusive\))?", m)
            for r, m in seen
        ):
            missing.append("GroupsUpdating: Updating replica(s) ...")
        if case.peak > case.replicas and not any(
            r == "GroupsProgressing" and m.startswith("deleting surge replica") for r, m in seen
        ):
            missing.append("GroupsProgressing: deleting surge replica(s) ...")
        return None if missing else mine

    return check


def _restarted_once(sc: Scenario, name: str, case: Case, events: list[Event], old: str, new: str) -> None:
    """ROLL-RESTART-001 (lws#291): under RecreateGroupOnPodRestart (the default, as the LWS
    reports it) each group's leader is replaced exactly once by an update: old, then new, never
    a second new-revision incarnation (the restart policy reacting to the update's own worker
    deletions)."""
    assert sc.lws(name)["spec"]["leaderWorkerTemplate"].get("restartPolicy") == "RecreateGroupOnPodRestart", (
        "restartPolicy was not defaulted to RecreateGroupOnPodRestart"
    )
    by_group = facts.revisions_by_group(events)
    twice = {g: revs for g in range(case.replicas) if (revs := by_group.get(g)) != [old, new]}
    assert not twice, f"leaders replaced more than once by the update (lws#291), incarnations per group: {twice}"


def _documented_sequence(
    case: Case, events: list[Event], steps: list[facts.StsStep], start: tuple[int, int], old: str, new: str
) -> None:
    """ROLL-SEQ-001: the leader StatefulSet steps, the peak of live groups, one replacement each."""
    assert (steps[0].replicas, steps[0].partition) == start, f"update start (replicas, partition): {steps}"
    # First partition move: rollingUpdatePartition gives S - tailReady - step. tailReady is 0 unless surge
    # groups were already up when the controller reconciled, so the documented value (tailReady 0)
    # is exact without surge and an upper bound with it; the lower bound uses the surge groups the
    # pods show as available at that moment (the controller's cache cannot be ahead of them).
    moved = next((s for s in steps if s.partition != start[1]), None)
    assert moved is not None, f"the partition never moved: {steps}"
    tail = facts.tail_updated_available(events, moved.index)
    assert case.first_partition - tail <= moved.partition <= case.first_partition and (
        moved.partition < case.first_partition or case.first_partition < start[1]
    ), f"first partition step {moved.partition}, documented {case.first_partition} (tailReady <= {tail}): {steps}"
    assert max(s.replicas or 0 for s in steps) == case.peak, f"leader StatefulSet replicas peak: {steps}"
    assert (steps[-1].replicas, steps[-1].partition) == (case.replicas, 0), f"final leader StatefulSet: {steps}"
    peak = facts.peak_live_groups(events, since=steps[0].index)
    assert peak == case.peak, f"{peak} groups live at once during the update, documented {case.peak}"
    by_group = facts.revisions_by_group(events)
    for g in range(case.replicas):
        assert by_group.get(g) == [old, new], f"group {g} leader incarnations {by_group.get(g)} != [old, new]"
    for g in range(case.replicas, case.peak):
        assert by_group.get(g) == [new], f"surge group {g} incarnations {by_group.get(g)} != [new]"


# -- partition -------------------------------------------------------------------------------


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-PART-001")
def test_partition_holds_lower_groups_until_lowered(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=3, spec.partition 1: groups 2 and 1 update, group 0 keeps the old revision (Available with
    updatedReplicas 2) for as long as the partition stays; lowering it to 0 finishes the update."""
    sc, name, r, size, part = scenario, "rp", 3, 2, 1
    with recorded(sc) as tl:
        old, new = held_update(sc, name, r, size, part)
        sc.wait_pods(
            pods_at(name, r, size, lambda g: new if g >= part else old),
            f"groups >= {part} at the new revision, the rest at the old one",
        )
        with claim("ROLL-PART-001"):
            # Held: the partition-1 step is written and the LWS status settled. A controller that
            # went on to update group 0 would show it within one reconcile's latency.
            violation = sc.observe_pods(moved_below(part, old), duration=reconcile_window(request.config))
            assert violation is None, violation
        release_partition(sc, name, r, size, new, "update done after partition 0", f"all pods at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-PART-001"):
        parts = [s.partition for s in from_revision(events, new)]
        # rollingUpdateParameters' deferred max(P, lwsP): 3 at detection, 2, held at 1, 0 after the release.
        assert parts == [3, 2, 1, 0], f"leader StatefulSet partitions {parts}"
        by_group = facts.revisions_by_group(events)
        assert all(by_group.get(g) == [old, new] for g in range(r)), by_group


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-PART-002")
def test_partition_with_surge_keeps_surge_until_released(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=3, maxSurge 1, spec.partition 2 (rollingUpdateParameters; set before the update, avoiding lws#614): the
    update runs with 4 replicas; with group 2 and the surge group 3 updated the surge group stays
    while the partition holds; partition 0 finishes the update and reclaims it (3 replicas)."""
    sc, name, r, size = scenario, "rs", 3, 2
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, r, size, mu=1, ms=1))
        sc.wait_lws(name, sc.settled(r), "Available with 3 groups")
        old = leader_revision(sc, name)
        set_partition(sc, name, 2)
        bump_annotation(sc, name, "1")

        def held(lws: Obj) -> bool:
            st = lws.get("status") or {}
            return (
                P.condition(lws, "Available") == "True"
                and sc.current(lws)
                and st.get("updatedReplicas") == 2
                and st.get("replicas") == 4
            )

        sc.wait_lws(name, held, "Available, updatedReplicas 2 (group 2 + surge group 3), replicas 4")
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, r + 1, size, lambda g: new if g >= 2 else old), "surge group 3 kept, 0-1 old")
        release_partition(sc, name, r, size, new, "update done, surge reclaimed", f"3 groups at {new}, no surge group")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-PART-002"):
        steps = from_revision(events, new)
        assert (steps[0].replicas, steps[0].partition) == (4, 3), f"update start: {steps}"
        assert [s.partition for s in steps if s.partition < 3][:1] == [2], f"first step must be P 2: {steps}"
        assert steps[-1].replicas == 3 and steps[-1].partition == 0, steps
        by_group = facts.revisions_by_group(events)
        assert by_group.get(3) == [new] and by_group.get(0) == [old, new], by_group


# -- size and replicas changes ---------------------------------------------------------------


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-SIZE-001")
def test_size_change_rolls_every_group(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """size 2 -> 3 is a template change: a new revision, every group replaced whole with 3 pods."""
    sc, name, r = scenario, "sz", 2
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, r, 2))
        sc.wait_lws(name, sc.settled(r), "Available with 2 groups of 2")
        old = leader_revision(sc, name)
        sc.patch_lws(name, {"spec": {"leaderWorkerTemplate": {"size": 3}}})
        sc.wait_lws(name, sc.settled(r), "update done")
        new = leader_revision(sc, name)
        with claim("ROLL-SIZE-001"):
            assert new != old, "a size change must create a new revision"
        pods = sc.wait_pods(pods_at(name, r, 3, lambda g: new), "2 groups of 3 pods at the new revision")
    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-SIZE-001"):
        assert {p["metadata"]["annotations"].get(LBL + "size") for p in pods} == {"3"}
        assert facts.revisions_by_group(events) == {0: [old, new], 1: [old, new]}


@pytest.mark.parametrize("direction", ["up", "down"])
@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-SCALE-001")
def test_replicas_changed_mid_rollout(
    scenario: Scenario, claim: Claims, direction: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Replicas change while an update is in progress (held mid-way by spec.partition so the
    change lands mid-rollout on a fast cluster): up 2 -> 4 adds groups 2-3 at the new revision;
    down 4 -> 2 removes the highest (already updated) groups; the update then finishes."""
    sc, name, size = scenario, "rm", 2
    r0, r1, part = (2, 4, 1) if direction == "up" else (4, 2, 2)
    with recorded(sc) as tl:
        old, new = held_update(sc, name, r0, size, part)
        sc.patch_lws(name, {"spec": {"replicas": r1}})
        below = min(part, r1)
        sc.wait_pods(
            pods_at(name, r1, size, lambda g: new if g >= below else old), f"{r1} groups: < {below} old, the rest new"
        )
        release_partition(sc, name, r1, size, new, f"update done with {r1} groups", f"{r1} groups at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-SCALE-001"):
        by_group = facts.revisions_by_group(events)
        for g in range(r0, r1):
            assert by_group.get(g) == [new], f"new group {g} must start at {new}: {by_group}"
        for g in range(min(r0, r1)):
            assert by_group.get(g) == [old, new], f"group {g}: {by_group.get(g)}"


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-SCALE-002")
def test_template_and_replicas_change_at_once(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Template change plus replicas 2 -> 4 in one patch (rollingUpdateParameters Case 2, 4 -> 6 there): scale up
    first (replicas 4, partition 2), new groups 2-3 start at the new revision, then 1 and 0."""
    sc, name, size = scenario, "rt", 2
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, 2, size))
        sc.wait_lws(name, sc.settled(2), "Available with 2 groups")
        old = leader_revision(sc, name)
        sc.patch_lws(
            name,
            {
                "spec": {
                    "replicas": 4,
                    "leaderWorkerTemplate": {"workerTemplate": {"metadata": {"annotations": {BUMP: "1"}}}},
                }
            },
        )
        sc.wait_lws(name, sc.settled(4), "update done with 4 groups")
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, 4, size, lambda g: new), f"4 groups at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    with claim("ROLL-SCALE-002"):
        steps = from_revision(events, new)
        assert (steps[0].replicas, steps[0].partition) == (4, 2), f"update start: {steps}"
        by_group = facts.revisions_by_group(events)
        assert by_group.get(2) == [new] and by_group.get(3) == [new], by_group
        assert all(by_group.get(g) == [old, new] for g in range(2)), by_group


# -- the SHOULD-level observations, with the most chances to show -----------------------------


def _one_update(sc: Scenario, name: str, replicas: int, size: int, mu: int = 1) -> Timeline:
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, replicas, size, mu=mu))
        sc.wait_lws(name, sc.settled(replicas), f"Available with {replicas} groups")
        bump_annotation(sc, name, "1")
        sc.wait_lws(name, sc.settled(replicas), "update done")
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, replicas, size, lambda g: new), f"all pods at {new}")
    return tl


@proves_invariants
def test_group_never_serves_two_revisions_at_once(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """ROLL-ATOM-001 (SHOULD), given many chances: 4 groups of 3 updated at once (maxUnavailable
    4). On LWS v0.9.0 on kwok about 70% of group updates show the window in which the new leader
    is Ready next to the old, still-Ready workers (the StatefulSet controller recreates the leader
    as soon as the old one is gone; the old workers go later, through two garbage-collection
    hops). Upstream accepts that window, so it is a warning with its timeline, never a failure."""
    tl = _one_update(scenario, "ga", 4, 3, mu=4)
    verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)


@proves_invariants
def test_update_in_progress_is_set_with_progressing(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """ROLL-COND-002 (SHOULD): a one-group update, so the first status of the update is seen.
    On LWS v0.9.0 (and main@060ab4d) `setConditions` evaluates `shouldUpdate = shouldUpdate ||
    setCondition(lws, c)`, so once UpdateInProgress changed, Progressing is not set in the same
    write: a known deviation (fixtures/known-deviations.yaml, docs/upstream/ROLL-COND-002.md)."""
    tl = _one_update(scenario, "cp", 1, 2)
    verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
