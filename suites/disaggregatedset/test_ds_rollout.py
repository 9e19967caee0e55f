"""Coordinated rolling updates of a DisaggregatedSet, checked at every watch event (KEP-766).

The recorder watches the DisaggregatedSet, its LWSs and their pods; `observe.disagg` replays the
timeline and checks the KEP's properties per role at every event: surge (old + new <= replicas +
maxSurge), availability (ready groups >= replicas - maxUnavailable), the stability check (no LWS
rescaled twice without the new revision seen ready in between), the coordinated drain and the
decoupled steps (no step rescales both old and new). Each distinct violation is its own failure of
its requirement. The KEP's own example is also compared with the KEP's step table. The evidence
(timeline JSON, the LWS picture and a per-role DisaggregatedSet picture) is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ds_helpers as D
import pytest

from lws_conformance import images, workloads
from lws_conformance.claims import Claims
from lws_conformance.errors import Failures
from lws_conformance.observe import artifact_dir, check, disagg, disagg_picture, failures, record
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
CLAIMED = {
    "ds-surge": "ROLL-DSSURGE-001",
    "ds-availability": "ROLL-DSAVAIL-001",
    "ds-stability": "ROLL-DSSTABLE-001",
    "ds-drain": "ROLL-DSDRAIN-001",
    "ds-decoupled": "ROLL-DSSTEP-001",
}
KEP_TABLE = disagg.KEP_766_EXAMPLE_1
ROLLOUT_SECONDS = 180  # a 7-step rollout of 5 + 2 groups takes ~30 s here; scaled by timeouts.scale


def _proves_invariants[F: Callable[..., object]](fn: F) -> F:
    """Mark a test as proving every invariant `_verify` claims."""
    for rid in CLAIMED.values():
        fn = pytest.mark.requirement(rid)(fn)
    return fn


def _proves_rollout[F: Callable[..., object]](fn: F) -> F:
    """Mark a test as proving the revision requirement and every invariant `_verify` claims."""
    return pytest.mark.requirement("ROLL-DSREV-001")(_proves_invariants(fn))


def _roll_one_role(
    sc: Scenario, name: str, roles: list[Obj], role: str, stem: str, claim: Claims, tmp_path: Path
) -> list[Any]:
    """Create set `name`, wait for every role ready, change `role`'s image, wait for the rollout
    and check every invariant; the recorded events."""
    want = {r["name"]: r["spec"]["replicas"] for r in roles}
    with record(sc.api, sc.namespace, disaggregated=True) as tl:
        sc.create(D.dset(name, roles))
        old = D.wait_roles(sc, name, want, f"every role of {name} ready ({want})")
        D.set_image(sc, name, role, images.ref("workload-update"))
        _rolled(sc, name, want, old[role]["metadata"]["labels"][D.REVISION], claim)
    return _verify(tl, tmp_path, name, stem, claim)


def _rolled(
    sc: Scenario, name: str, want: dict[str, int], old: str, claim: Claims, rid: str = "ROLL-DSREV-001"
) -> dict[str, Obj]:
    """Wait for the rollout to finish; `rid` (ROLL-DSREV-001): every role on one new revision, old gone."""
    with claim(rid):

        def done(objs: list[Obj]) -> dict[str, Obj] | None:
            mine = D.children(objs, name)
            revs = {o["metadata"]["labels"][D.REVISION] for o in mine}
            return D.wait_roles_check(mine, want) if old not in revs else None

        by_role: dict[str, Obj] = D.wait_lws(
            sc, done, f"every role of {name} on one new revision, old LWSs gone", ROLLOUT_SECONDS
        )
        return by_role


def _verify(tl: Any, tmp_path: Path, name: str, stem: str, claim: Claims) -> list[Any]:
    """Check every DisaggregatedSet invariant; each violation is its own failure of its requirement."""
    saved = check(tl, artifact_dir(tmp_path), stem, only=[])
    events = saved.events
    found = disagg.check(events, name)
    svg = disagg_picture.save(artifact_dir(tmp_path) / f"{stem}.ds.svg", events, name, found)
    for invariant, rid in CLAIMED.items():
        with claim(rid):
            mine = [v for v in found if v.invariant == invariant]
            if mine:
                raise failures(mine, f"{saved.paths}\nDisaggregatedSet picture: {svg}")
    return events


@_proves_rollout
@pytest.mark.requirement("ROLL-DSSTEP-002")
def test_kep_example_two_role_rollout(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """5 prefill + 2 decode, maxSurge 2, maxUnavailable 1 on both: the KEP's own example."""
    roles = [D.rollout(D.role("prefill", 5), 2, 1), D.rollout(D.role("decode", 2), 2, 1)]
    events = _roll_one_role(scenario, "kep", roles, "prefill", "ds-kep-example", claim, tmp_path)
    with claim("ROLL-DSSTEP-002"):
        rows = disagg.observed_rows(events, "kep", ["prefill", "decode"])
        walk = [r for _, r in rows]
        if why := disagg.table_divergences(rows, KEP_TABLE):
            raise Failures([f"KEP-766 Example 1 not followed: {w}; observed {walk}" for w in why])


@_proves_rollout
def test_rollout_without_surge(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """2 prefill + 2 decode, maxSurge 0 and maxUnavailable 1 on both: every new group must wait for
    an old one to go (old + new never above 2 per role). The planner's minimum of old replicas
    decides when the last old groups may go; with no surge room, a step that drains the last old
    group and adds a new one at once shows as a surge and a coupled step."""
    roles = [D.rollout(D.role("prefill", 2), 0, 1), D.rollout(D.role("decode", 2), 0, 1)]
    _roll_one_role(scenario, "nosurge", roles, "decode", "ds-no-surge", claim, tmp_path)


@_proves_rollout
@pytest.mark.requirement("LWS-DSSVC-002")
def test_three_role_rollout(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """Three roles with the default limits (maxSurge 1, maxUnavailable 0); only decode's template
    changes, and all three roles must move to the new revision."""
    sc = scenario
    want = {"prefill": 3, "decode": 2, "router": 1}
    with record(sc.api, sc.namespace, disaggregated=True) as tl:
        sc.create(D.dset("tri", [D.role("prefill", 3, 2), D.role("decode", 2, 1), D.role("router", 1, 1)]))
        old = D.wait_roles(sc, "tri", want, "every role ready")
        old_rev = old["decode"]["metadata"]["labels"][D.REVISION]
        with claim("LWS-DSSVC-002"):
            sc.wait_services(
                lambda objs: len(D.services(objs, "tri", old_rev)) == 3 or None, "the 3 Services of the first revision"
            )
        D.set_image(sc, "tri", "decode", images.ref("workload-update"))
        new = _rolled(sc, "tri", want, old_rev, claim)
    _verify(tl, tmp_path, "tri", "ds-three-roles", claim)
    new_rev = next(iter(new.values()))["metadata"]["labels"][D.REVISION]
    with claim("LWS-DSSVC-002"):
        sc.wait_services(
            lambda objs: (len(D.services(objs, "tri", new_rev)) == 3 and not D.services(objs, "tri", old_rev)) or None,
            f"the 3 Services of revision {new_rev}, none of {old_rev}",
        )


def _surge_1(name: str, replicas: int) -> Obj:
    """A role of `replicas` groups of 1 that rolls with maxSurge 1, maxUnavailable 0."""
    return D.rollout(D.role(name, replicas), 1, 0)


def _change_roles(
    sc: Scenario, name: str, before: list[Obj], after: list[Obj], stem: str, rid: str, claim: Claims, tmp_path: Path
) -> None:
    """Create set `name` with roles `before`, wait for them ready, replace the roles with `after`
    (one update: a new revision of every role), and wait, under `rid`, for exactly `after`'s roles
    ready on one new revision with every LWS of the old revision gone; every invariant is checked."""
    first = {r["name"]: r["spec"]["replicas"] for r in before}
    want = {r["name"]: r["spec"]["replicas"] for r in after}
    with record(sc.api, sc.namespace, disaggregated=True) as tl:
        sc.create(D.dset(name, before))
        old = D.wait_roles(sc, name, first, f"every role of {name} ready ({first})")
        D.patch(sc, name, {"spec": {"roles": after}})
        _rolled(sc, name, want, next(iter(old.values()))["metadata"]["labels"][D.REVISION], claim, rid)
    _verify(tl, tmp_path, name, stem, claim)


@_proves_invariants
@pytest.mark.requirement("ROLL-DSROLE-001")
def test_role_added(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """alpha 2 + beta 3 (maxSurge 1 each), then gamma 2 added: all three roles end on one new
    revision, gamma at 2 ready replicas, the old revision's LWSs gone (upstream e2e "should add
    new role and roll all roles to new revision")."""
    before = [_surge_1("alpha", 2), _surge_1("beta", 3)]
    after = [*before, _surge_1("gamma", 2)]
    _change_roles(scenario, "addr", before, after, "ds-role-added", "ROLL-DSROLE-001", claim, tmp_path)


@_proves_invariants
@pytest.mark.requirement("ROLL-DSROLE-002")
def test_role_removed(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """prefill 3 + decode 2 + encode 1, then encode removed: prefill and decode end on one new
    revision and no LWS of encode is left (upstream e2e "should remove role with progressive
    rollout for remaining roles")."""
    keep = [_surge_1("prefill", 3), _surge_1("decode", 2)]
    before = [*keep, _surge_1("encode", 1)]
    _change_roles(scenario, "rmr", before, keep, "ds-role-removed", "ROLL-DSROLE-002", claim, tmp_path)


@_proves_invariants
@pytest.mark.requirement("ROLL-DSROLE-003")
def test_role_renamed(scenario: Scenario, claim: Claims, tmp_path: Path) -> None:
    """prefill 2 + decode 2 + encode 2, then encode replaced by decode-long in one update (a
    rename): prefill, decode and decode-long end on one new revision at 2 ready replicas each and
    no LWS of encode is left (upstream e2e "should handle role rename (remove old role, add new
    role) progressively")."""
    keep = [_surge_1("prefill", 2), _surge_1("decode", 2)]
    before = [*keep, _surge_1("encode", 2)]
    after = [*keep, _surge_1("decode-long", 2)]
    _change_roles(scenario, "ren", before, after, "ds-role-renamed", "ROLL-DSROLE-003", claim, tmp_path)


def _totals(st: disagg.DsState, revision: str) -> int:
    return sum(disagg.replicas(o) for o in st.of(revision=revision))


@_proves_invariants
@pytest.mark.requirement("ROLL-DSDRAIN-002")
def test_newer_update_drains_the_intermediate_revision_first(
    scenario: Scenario, claim: Claims, tmp_path: Path
) -> None:
    """prefill 3 + decode 2 at revision A; update B makes prefill's pods unschedulable, so B's
    first prefill group never gets Ready and its rollout holds; update C (a new image, the node
    selector gone) then arrives. The old revisions must drain newest first: B reaches 0 replicas
    while A still has some, A never reaches 0 while B has replicas, and the set ends with only C
    (upstream e2e "should drain B (broken intermediate) before A (stable original)")."""
    sc, name = scenario, "abc"
    want = {"prefill": 3, "decode": 2}
    roles = [_surge_1("prefill", 3), _surge_1("decode", 2)]
    spec0 = "/spec/roles/0/spec/leaderWorkerTemplate/workerTemplate/spec"
    with record(sc.api, sc.namespace, disaggregated=True) as tl:
        sc.create(D.dset(name, roles))
        rev_a = D.wait_roles(sc, name, want, f"every role of {name} ready ({want})")["prefill"]["metadata"][
            "labels"
        ][D.REVISION]
        D.json_patch(sc, name, [{"op": "add", "path": f"{spec0}/nodeSelector", "value": workloads.NOWHERE}])

        def b_started(objs: list[Obj]) -> str | None:
            b = [o for o in D.children(objs, name) if o["metadata"]["labels"][D.REVISION] != rev_a]
            started = [o for o in b if o["metadata"]["labels"][D.ROLE] == "prefill" and o["spec"].get("replicas")]
            return started[0]["metadata"]["labels"][D.REVISION] if started else None

        rev_b = D.wait_lws(sc, b_started, "revision B's prefill LWS scaled up (its pods cannot be scheduled)")
        D.json_patch(
            sc,
            name,
            [
                {"op": "remove", "path": f"{spec0}/nodeSelector"},
                {"op": "replace", "path": f"{spec0}/containers/0/image", "value": images.ref("workload-update")},
            ],
        )
        _rolled(sc, name, want, rev_a, claim, "ROLL-DSDRAIN-002")
    events = _verify(tl, tmp_path, name, "ds-newest-first", claim)
    with claim("ROLL-DSDRAIN-002"):
        walk, b_first, a_early = [], None, None
        for st in disagg.replay(events, name):
            a, b = _totals(st, rev_a), _totals(st, rev_b)
            if not walk or walk[-1] != (a, b):
                walk.append((a, b))
            if b == 0 and a > 0 and b_first is None and any(w[1] > 0 for w in walk):
                b_first = st.index
            if a == 0 and b > 0 and a_early is None:
                a_early = st.index
        assert a_early is None, (
            f"revision A {rev_a} drained to 0 at event #{a_early} while B {rev_b} had replicas; (A, B): {walk}"
        )
        assert b_first is not None, (
            f"revision B {rev_b} never drained to 0 while A {rev_a} had replicas; (A, B): {walk}"
        )
