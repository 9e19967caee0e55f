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

from lws_conformance import images
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


def _proves_rollout[F: Callable[..., object]](fn: F) -> F:
    """Mark a test as proving the revision requirement and every invariant `_verify` claims."""
    for rid in ("ROLL-DSREV-001", *CLAIMED.values()):
        fn = pytest.mark.requirement(rid)(fn)
    return fn


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


def _rolled(sc: Scenario, name: str, want: dict[str, int], old: str, claim: Claims) -> dict[str, Obj]:
    """Wait for the rollout to finish; ROLL-DSREV-001: every role on one new revision, old gone."""
    with claim("ROLL-DSREV-001"):

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
