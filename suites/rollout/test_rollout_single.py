"""replicas 1 with maxSurge: is the update zero-downtime? (kubernetes-sigs/lws#688, open)

Why: many inference deployments run one multi-host replica; maxSurge is how an operator asks for
the new group to come up before the old one goes. lws#688 reports that with replicas 1 the update
takes the only group down anyway. This test records what the installed version does, from the
watch stream: whether a surge group was created and whether, at any event after the update
started, no group was available (and for how long).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lws_conformance.testing import Claims, Scenario, artifact_dir, facts

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import bump_annotation, leader_revision, pods_at, recorded, rollout_lws

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("mu", [1, 0], ids=["mu1", "mu0"])
@proves_invariants
@pytest.mark.requirement("ROLL-SINGLE-001")
def test_single_replica_with_max_surge_keeps_a_group_available(
    scenario: Scenario, claim: Claims, mu: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=1, size 2, maxSurge 1, maxUnavailable 1 or 0: the surge group should be up before group 0
    is replaced, so some group is available at every event of the update."""
    sc, name = scenario, "r1"
    with recorded(sc) as tl:
        sc.create(rollout_lws(name, 1, 2, mu=mu, ms=1))
        sc.wait_lws(name, sc.settled(1), "Available with 1 group")
        start = int(tl.ordered()[-1].rv) if tl.ordered() else 0
        bump_annotation(sc, name, "1")
        sc.wait_lws(name, sc.settled(1), "update done", timeout=90)
        new = leader_revision(sc, name)
        sc.wait_pods(pods_at(name, 1, 2, lambda g: new), f"group 0 Ready at {new}")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-SINGLE-001"):
        surged, down = facts.downtime(events, start)
        assert surged and down == 0, (
            f"replicas 1, maxSurge 1, maxUnavailable {mu}: {surged} surge group(s) created, no group available "
            f"for {down:.3f}s of the update (kubernetes-sigs/lws#688)"
        )
