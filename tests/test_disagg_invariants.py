"""The DisaggregatedSet rollout invariants (lws_conformance.observe.disagg) on synthetic timelines.

`Sim` plays a DisaggregatedSet controller the way LWS v0.9.0 writes (one reconcile: scale the new
revision up role by role, then the old one down, then wait for readiness), one pod per group. A
good rollout passes every invariant; each broken controller below fails exactly the invariant
written for it, which is how every check of suites/disaggregatedset is proven able to fail. Each
distinct violation is reported once: a stretch of consecutive failing checks is one, a new one
after the property held again is another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.observe import disagg, disagg_picture
from lws_conformance.observe.timeline import DS_NAME, DS_REVISION, DS_ROLE, GROUP_INDEX, NAME, Event

Obj = dict[str, Any]
ROLES = ("prefill", "decode")
KEP_TABLE = disagg.KEP_766_EXAMPLE_1
V090_TRAJECTORY = [  # what the v0.9.0 planner computes for it (force drain scales new up too)
    (5, 2, 0, 0),
    (5, 2, 2, 1),
    (4, 2, 2, 1),
    (3, 2, 4, 2),
    (2, 1, 4, 2),
    (2, 1, 5, 2),
    (0, 0, 5, 2),
]


class Sim:
    def __init__(self, replicas: dict[str, int], surge: int | None = None, unavail: int | None = None) -> None:
        self.events: list[Event] = []
        self.replicas = dict(replicas)
        self.spec: dict[tuple[str, str], int] = {}
        self.ready: dict[tuple[str, str], int] = {}
        roles = []
        for r, n in replicas.items():
            role: Obj = {"name": r, "replicas": n, "template": "t"}
            if surge is not None:
                role["maxSurge"], role["maxUnavailable"] = surge, unavail or 0
            roles.append(role)
        self.emit("DisaggregatedSet", "ADDED", {"name": "ds", "roles": roles})

    def emit(self, kind: str, etype: str, obj: Obj) -> None:
        n = len(self.events) + 1
        self.events.append(Event(n - 1, n * 0.01, 0.0, kind, etype, {**obj, "rv": str(n)}))

    def _lws(self, role: str, rev: str, etype: str = "MODIFIED") -> None:
        labels = {DS_NAME: "ds", DS_ROLE: role, DS_REVISION: rev}
        spec = {"replicas": self.spec[(role, rev)], "size": 1}
        self.emit(
            "LeaderWorkerSet",
            etype,
            {
                "name": f"ds-{rev}-{role}",
                "labels": labels,
                "spec": spec,
                "status": {"readyReplicas": self.ready[(role, rev)]},
            },
        )

    def _pod(self, role: str, rev: str, g: int, etype: str, ready: bool) -> None:
        labels = {DS_NAME: "ds", DS_ROLE: role, DS_REVISION: rev, NAME: f"ds-{rev}-{role}", GROUP_INDEX: str(g)}
        self.emit("Pod", etype, {"name": f"ds-{rev}-{role}-{g}", "labels": labels, "ready": ready})

    def create(self, rev: str, replicas: dict[str, int], ready: bool = True) -> None:
        for role, n in replicas.items():
            self.spec[(role, rev)], self.ready[(role, rev)] = 0, 0
            self._lws(role, rev, "ADDED")
            self.scale(role, rev, n)
        if ready:
            self.settle(rev)

    def scale(self, role: str, rev: str, n: int) -> None:
        before = self.spec[(role, rev)]
        if n == before:
            return
        self.spec[(role, rev)] = n
        self._lws(role, rev)
        for g in range(n, before):  # scale down: pods go, readiness follows
            self._pod(role, rev, g, "DELETED", False)
        self.ready[(role, rev)] = min(self.ready[(role, rev)], n)
        for g in range(before, n):
            self._pod(role, rev, g, "ADDED", False)
        self._lws(role, rev)

    def settle(self, rev: str) -> None:
        for (role, r), n in self.spec.items():
            if r == rev and self.ready[(role, r)] < n:
                for g in range(self.ready[(role, r)], n):
                    self._pod(role, r, g, "MODIFIED", True)
                self.ready[(role, r)] = n
                self._lws(role, r)

    def delete(self, rev: str) -> None:
        for role in [r for (r, v) in self.spec if v == rev]:
            self.emit(
                "LeaderWorkerSet",
                "DELETED",
                {
                    "name": f"ds-{rev}-{role}",
                    "labels": {DS_NAME: "ds", DS_ROLE: role, DS_REVISION: rev},
                    "spec": {"replicas": 0},
                },
            )

    def walk(
        self,
        rows: list[tuple[int, ...]],
        *,
        wait: bool = True,
        new_first: bool = True,
        no_wait_after: tuple[int, ...] = (),
    ) -> None:
        """Roll from revision a to b through `rows` ((old..., new...) per role in ROLES order);
        after each row the new revision gets ready, unless `wait` is False or the row's index is
        in `no_wait_after` (the next row's writes follow at once)."""
        k = len(self.replicas)
        self.create("b", dict.fromkeys(self.replicas, 0))
        for i_row, row in enumerate(rows[1:], 1):
            ups = [(r, "b", row[k + i]) for i, r in enumerate(self.replicas)]
            downs = [(r, "a", row[i]) for i, r in enumerate(self.replicas)]
            for role, rev, n in ups + downs if new_first else downs + ups:
                self.scale(role, rev, n)
            if wait and i_row not in no_wait_after:
                self.settle("b")
        self.settle("b")
        self.delete("a")


def rollout(
    rows: list[tuple[int, ...]],
    replicas: dict[str, int],
    surge: int | None = None,
    unavail: int | None = None,
    **kw: Any,
) -> list[Event]:
    sim = Sim(replicas, surge, unavail)
    sim.create("a", replicas)
    sim.walk(rows, **kw)
    return sim.events


GOOD_2x2 = [(2, 2, 0, 0), (2, 2, 1, 1), (1, 1, 1, 1), (1, 1, 2, 2), (0, 0, 2, 2)]


def names(vs: list[Any]) -> set[str]:
    return {v.invariant for v in vs}


def test_good_rollout_passes_every_invariant() -> None:
    assert disagg.check(rollout(GOOD_2x2, {"prefill": 2, "decode": 2}), "ds") == []


def test_limits_follow_the_controller_defaults_and_scaling() -> None:
    assert disagg.limits({"replicas": 5}) == disagg.Limits(5, 1, 0)
    assert disagg.limits({"replicas": 5, "maxSurge": 2, "maxUnavailable": 1}) == disagg.Limits(5, 2, 1)
    assert disagg.limits({"replicas": 5, "maxSurge": "30%", "maxUnavailable": "30%"}) == disagg.Limits(5, 2, 1)
    assert disagg.limits({"replicas": 5, "maxSurge": 0, "maxUnavailable": 0}) == disagg.Limits(5, 1, 0)


def test_v090_force_drain_breaks_surge_the_decoupled_steps_and_the_kep_table() -> None:
    """The v0.9.0 planner's force-drain step scales new up before old down: prefill 4 + 4 > 5 + 2,
    one step writes both revisions, and the walk skips the table's step 3."""
    events = rollout(V090_TRAJECTORY, {"prefill": 5, "decode": 2}, surge=2, unavail=1)
    found = disagg.check(events, "ds")
    assert [v.invariant for v in found] == ["ds-surge", "ds-decoupled"], [v.describe() for v in found]
    assert found[0].message.startswith("role prefill: old + new replicas 8 > replicas 5 + maxSurge 2")
    assert found[1].message == (
        "one step rescaled both old and new revisions, the new revision not ready in between: replicas "
        "(old prefill, old decode, new prefill, new decode) (4, 2, 2, 1) -> (4, 2, 4, 1) -> (4, 2, 4, 2) -> "
        "(3, 2, 4, 2) (new ds-b-prefill 2 -> 4, new ds-b-decode 1 -> 2, old ds-a-prefill 4 -> 3)"
    )
    assert found[1].objects == (
        "LeaderWorkerSet/ds-b-prefill",
        "LeaderWorkerSet/ds-b-decode",
        "LeaderWorkerSet/ds-a-prefill",
    )
    why = disagg.table_divergences(disagg.observed_rows(events, "ds", ROLES), KEP_TABLE)
    assert len(why) == 1 and why[0].startswith("from step 2 (4, 2, 2, 1) the replicas went through (4, 2, 4, 1),")
    assert why[0].endswith("to step 4 (3, 2, 4, 2), not through step 3 (3, 2, 2, 1)")


def test_kep_table_walked_by_a_decoupled_controller_passes() -> None:
    events = rollout(KEP_TABLE, {"prefill": 5, "decode": 2}, surge=2, unavail=1)
    assert disagg.check(events, "ds") == []
    assert disagg.table_divergences(disagg.observed_rows(events, "ds", ROLES), KEP_TABLE) == []


def test_kep_table_walked_with_a_step_writing_both_revisions_breaks_only_the_decoupled_steps() -> None:
    """Every row of the table, but step 5's old scale-down follows step 4's new scale-up with no
    wait for the new revision: one step writes both, the walk still matches the table."""
    events = rollout(KEP_TABLE, {"prefill": 5, "decode": 2}, surge=2, unavail=1, no_wait_after=(4,))
    found = disagg.check(events, "ds")
    assert [v.invariant for v in found] == ["ds-decoupled"], [v.describe() for v in found]
    assert "(3, 2, 2, 1) -> (3, 2, 4, 1) -> (3, 2, 4, 2) -> (2, 2, 4, 2) -> (2, 1, 4, 2)" in found[0].message
    assert disagg.table_divergences(disagg.observed_rows(events, "ds", ROLES), KEP_TABLE) == []


def test_decoupled_walk_off_the_kep_table_breaks_only_the_table() -> None:
    """Old prefill 5 -> 3 in one decoupled step: every invariant holds, the table's step 2 is skipped."""
    rows = [(5, 2, 0, 0), (5, 2, 2, 1), (3, 2, 2, 1), (3, 2, 4, 2), (2, 1, 4, 2), (2, 1, 5, 2), (0, 0, 5, 2)]
    events = rollout(rows, {"prefill": 5, "decode": 2}, surge=2, unavail=1)
    assert disagg.check(events, "ds") == []
    why = disagg.table_divergences(disagg.observed_rows(events, "ds", ROLES), KEP_TABLE)
    assert len(why) == 1 and why[0].startswith("from step 1 (5, 2, 2, 1) straight to step 3 (3, 2, 2, 1) at event #")
    assert why[0].endswith(", not through step 2 (4, 2, 2, 1)")


def test_every_divergence_from_the_table_is_reported() -> None:
    """Two separate detours, each rejoining the table, and a walk that ends early: three."""
    t = KEP_TABLE
    observed = [(0, t[0]), (1, (5, 2, 1, 3)), (2, t[1]), (3, t[2]), (4, (4, 2, 4, 1)), (5, t[4]), (6, t[5])]
    why = disagg.table_divergences(observed, t)
    assert why == [
        "from step 0 (5, 2, 0, 0) the replicas went through (5, 2, 1, 3) (from event #1) to step 1 (5, 2, 2, 1), "
        "neither a step nor on the way between them",
        "from step 2 (4, 2, 2, 1) the replicas went through (4, 2, 4, 1) (from event #4) to step 4 (3, 2, 4, 2), "
        "not through step 3 (3, 2, 2, 1)",
        "the rollout stopped at step 5 (2, 1, 4, 2); the table continues to (0, 0, 5, 2)",
    ]


def test_rollout_stopping_early_does_not_follow_the_table() -> None:
    why = disagg.table_divergences([(0, KEP_TABLE[0]), (1, KEP_TABLE[1])], KEP_TABLE)
    assert why == ["the rollout stopped at step 1 (5, 2, 2, 1); the table continues to (0, 0, 5, 2)"]


def test_no_stability_wait_is_caught() -> None:
    events = rollout(GOOD_2x2, {"prefill": 2, "decode": 2}, wait=False)
    assert "ds-stability" in names(disagg.check(events, "ds"))


def test_scale_down_before_up_is_caught_as_unavailability() -> None:
    rows = [(2, 2, 0, 0), (1, 1, 0, 0), (1, 1, 1, 1), (0, 0, 1, 1), (0, 0, 2, 2)]
    events = rollout(rows, {"prefill": 2, "decode": 2}, new_first=False)
    assert "ds-availability" in names(disagg.check(events, "ds", only=["ds-availability"]))


def test_half_drain_is_caught() -> None:
    """Old decode at 0 while old prefill still has a replica, and new prefill moves meanwhile."""
    rows = [(2, 2, 0, 0), (2, 2, 1, 1), (1, 0, 1, 1), (1, 0, 2, 2), (0, 0, 2, 2)]
    events = rollout(rows, {"prefill": 2, "decode": 2}, surge=2, unavail=2)
    found = disagg.check(events, "ds", only=["ds-drain"])
    assert found and "half drained" in found[0].message


def test_deleting_an_old_lws_before_its_siblings_drain_is_caught() -> None:
    sim = Sim({"prefill": 1, "decode": 1})
    sim.create("a", {"prefill": 1, "decode": 1})
    sim.create("b", {"prefill": 1, "decode": 1})
    sim.scale("decode", "a", 0)
    sim.emit(
        "LeaderWorkerSet",
        "DELETED",
        {
            "name": "ds-a-decode",
            "labels": {DS_NAME: "ds", DS_ROLE: "decode", DS_REVISION: "a"},
            "spec": {"replicas": 0},
        },
    )
    found = disagg.check(sim.events, "ds", only=["ds-drain"])
    assert found and "deleted while" in found[0].message


def test_surge_over_the_limit_is_caught_once_per_role() -> None:
    """Both roles over the limit from the new scale-up to the old scale-down: one violation each,
    however many events the stretch lasts."""
    rows = [(2, 2, 0, 0), (2, 2, 2, 2), (0, 0, 2, 2)]
    found = disagg.check(rollout(rows, {"prefill": 2, "decode": 2}), "ds", only=["ds-surge"])
    assert [v.message.split(" (")[0] for v in found] == [
        "role prefill: old + new replicas 4 > replicas 2 + maxSurge 1",
        "role decode: old + new replicas 4 > replicas 2 + maxSurge 1",
    ]


def test_surge_over_the_limit_again_after_it_held_is_another_violation() -> None:
    sim = Sim({"prefill": 2, "decode": 1})
    sim.create("a", {"prefill": 2, "decode": 1})
    sim.create("b", {"prefill": 0, "decode": 0})
    sim.scale("prefill", "b", 2)  # 2 + 2 > 2 + 1
    sim.scale("prefill", "a", 1)  # 1 + 2: held again
    sim.settle("b")
    sim.scale("prefill", "b", 3)  # 1 + 3: over again
    sim.scale("prefill", "a", 0)
    sim.scale("prefill", "b", 2)
    sim.scale("decode", "b", 1)
    sim.scale("decode", "a", 0)
    sim.settle("b")
    found = disagg.check(sim.events, "ds", only=["ds-surge"])
    assert [v.message.split(" (")[0] for v in found] == [
        "role prefill: old + new replicas 4 > replicas 2 + maxSurge 1",
        "role prefill: old + new replicas 4 > replicas 2 + maxSurge 1",
    ]
    assert found[0].index < found[1].index


def test_rescaling_without_the_stability_wait_is_one_violation_per_lws_until_the_new_revision_is_ready() -> None:
    """Old prefill rescaled 3 -> 2 -> 1 -> 0 with the new revision never ready in between: one
    stretch for that LWS (its second and third rescale); after readiness a new one is another."""
    sim = Sim({"prefill": 3, "decode": 1})
    sim.create("a", {"prefill": 3, "decode": 1})
    sim.create("b", {"prefill": 0, "decode": 0})
    sim.scale("prefill", "b", 1)
    sim.scale("prefill", "a", 2)
    sim.scale("prefill", "a", 1)  # no wait: violation
    sim.scale("prefill", "a", 0)  # still no wait: the same stretch
    sim.settle("b")
    sim.scale("prefill", "b", 3)
    sim.scale("prefill", "b", 2)  # no wait again, after the revision was ready: another violation
    sim.settle("b")
    found = disagg.check(sim.events, "ds", only=["ds-stability"])
    assert [v.message.split(" before")[0] for v in found] == [
        "ds-a-prefill rescaled 2 -> 1",
        "ds-b-prefill rescaled 3 -> 2",
    ]


@pytest.mark.parametrize("violated", [False, True])
def test_picture_shows_every_role(tmp_path: Path, violated: bool) -> None:
    events = rollout(V090_TRAJECTORY, {"prefill": 5, "decode": 2}, surge=2, unavail=1)
    found = disagg.check(events, "ds") if violated else []
    svg = disagg_picture.save(tmp_path / "ds.svg", events, "ds", found).read_text()
    assert ">prefill<" in svg and ">decode<" in svg and "revision a" in svg and "revision b" in svg
    assert ("ds-surge" in svg) is violated and ("ds-decoupled" in svg) is violated
    assert svg.count('stroke="#c00"') == len(found)  # one red line per violation


def test_every_disaggregatedset_requirement_is_not_applicable_before_v090() -> None:
    from lws_conformance import catalogue

    reqs = [r for r in catalogue.default().values() if r.area == "disaggregatedset"]
    assert len(reqs) >= 20
    for r in reqs:
        assert catalogue.not_applicable(r, {"lws": "v0.8.0", "kueue": "v0.17.0"}), r.id
        # a rule of v0.10.0 (placement policies) or merged to main after it (LWS-DSVALID-005)
        newer = not catalogue.reached("v0.9.0", r.since["lws"])
        assert (catalogue.not_applicable(r, {"lws": "v0.9.0", "kueue": "v0.17.0"}) is None) is not newer, r.id
        assert catalogue.not_applicable(r, {"lws": "v0.10.0+main.11@060ab4d", "kueue": "v0.17.0"}) is None, r.id


DATA = Path(__file__).parent / "data"


def test_recorded_v090_kep_rollout_shows_the_force_drain_only() -> None:
    """Recorded on the local cluster (LWS v0.9.0): the KEP's example breaks surge once and the
    decoupled steps once, both at the force-drain step, and the KEP table there; stability,
    availability and the drain hold."""
    from lws_conformance.observe import Timeline

    events = Timeline.load(DATA / "ds-kep-v0.9.0.timeline.json").ordered()
    found = disagg.check(events, "kep")
    assert [(v.invariant, v.message.split(" (")[0]) for v in found] == [
        ("ds-surge", "role prefill: old + new replicas 8 > replicas 5 + maxSurge 2"),
        (
            "ds-decoupled",
            "one step rescaled both old and new revisions, the new revision not ready in between: replicas",
        ),
    ]
    assert "(4, 2, 2, 1) -> (4, 2, 4, 1) -> (4, 2, 4, 2) -> (3, 2, 4, 2)" in found[1].message
    rows = disagg.observed_rows(events, "kep", ROLES)
    assert disagg.table_divergences(rows, KEP_TABLE) == [
        "from step 2 (4, 2, 2, 1) the replicas went through (4, 2, 4, 1), (4, 2, 4, 2) (from event #79) to step 4 "
        "(3, 2, 4, 2), not through step 3 (3, 2, 2, 1)"
    ]
    assert [r for _, r in rows] == [
        (5, 2, 0, 0), (5, 2, 2, 0), (5, 2, 2, 1), (4, 2, 2, 1), (4, 2, 4, 1), (4, 2, 4, 2),
        (3, 2, 4, 2), (2, 2, 4, 2), (2, 1, 4, 2), (2, 1, 5, 2), (0, 1, 5, 2), (0, 0, 5, 2),
    ]  # fmt: skip


def test_recorded_v090_three_role_rollout_holds_every_invariant() -> None:
    from lws_conformance.observe import Timeline

    events = Timeline.load(DATA / "ds-three-roles-v0.9.0.timeline.json").ordered()
    assert disagg.check(events, "tri") == []
    rows = disagg.observed_rows(events, "tri", ["prefill", "decode", "router"])
    assert rows[0][1] == (3, 2, 1, 0, 0, 0) and rows[-1][1] == (0, 0, 0, 3, 2, 1)


def _service(sim: Sim, role: str, rev: str, etype: str) -> None:
    labels = {DS_NAME: "ds", DS_ROLE: role, DS_REVISION: rev}
    sim.emit("Service", etype, {"name": f"ds-{rev}-{role}-prv", "labels": labels})


def _two_revisions() -> Sim:
    sim = Sim({"prefill": 1, "decode": 1})
    sim.create("a", {"prefill": 1, "decode": 1})
    for role in ROLES:
        _service(sim, role, "a", "ADDED")
    sim.create("b", {"prefill": 1, "decode": 1})
    return sim


def test_deleting_the_services_of_a_revision_that_still_serves_in_every_role_is_caught() -> None:
    """As under a mutant of the Service cleanup: the old revision's Services go at the rollout's
    start, while both of its roles still have a ready replica. One violation per Service."""
    sim = _two_revisions()
    for role in ROLES:
        _service(sim, role, "a", "DELETED")
    found = disagg.check(sim.events, "ds", only=["ds-services-kept"])
    assert [v.objects for v in found] == [("Service/ds-a-prefill-prv",), ("Service/ds-a-decode-prv",)]
    assert "still has a ready replica" in found[0].message


def test_services_deleted_once_a_role_of_their_revision_has_no_ready_replica_pass() -> None:
    sim = _two_revisions()
    sim.scale("decode", "a", 0)
    for role in ROLES:
        _service(sim, role, "a", "DELETED")
    assert disagg.check(sim.events, "ds", only=["ds-services-kept"]) == []


def test_services_of_a_revision_without_a_role_of_the_spec_may_go() -> None:
    """A role added to the set: the old revision has no LWS of it, so it no longer serves whole."""
    sim = _two_revisions()
    sim.emit(
        "DisaggregatedSet",
        "MODIFIED",
        {"name": "ds", "roles": [{"name": r, "replicas": 1, "template": "t"} for r in (*ROLES, "router")]},
    )
    _service(sim, "prefill", "a", "DELETED")
    assert disagg.check(sim.events, "ds", only=["ds-services-kept"]) == []


def test_services_garbage_collected_with_their_set_pass() -> None:
    sim = _two_revisions()
    sim.emit("DisaggregatedSet", "DELETED", {"name": "ds"})
    _service(sim, "prefill", "a", "DELETED")
    assert disagg.check(sim.events, "ds", only=["ds-services-kept"]) == []
