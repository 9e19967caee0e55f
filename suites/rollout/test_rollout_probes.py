"""What only a real kubelet shows: a rolling update waits for the updated groups' real readiness.

Three groups of 2, maxUnavailable 1, maxSurge 0 (the defaults). Every pod has an exec readiness
probe (`cat /tmp/ready`, every second); the old worker template writes the file at start, the new
one does not, so each updated group stays not Ready, by the kubelet's own probe, until the test
writes the file in its worker. While the updated group is not Ready the rollout must not take down
another group (the rollout-strategy page: "Since the last Replica is not ready, Partition will not
change"); once its probe passes, the rollout must move on to the next group, and finish once every
updated group's probe passes. Needs containers that run (kind, or a vendor's cluster): on the
local cluster kwok runs none, so this reads not-run there.
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import Claims, Scenario

from .rollout_probe_support import NEW, _container, _pass_probe, rollout_waits_for_probes

pytestmark = pytest.mark.cluster


@pytest.mark.requirement("ROLL-PROBE-001")
@pytest.mark.requirement("ROLL-PROBE-002")
def test_rollout_waits_for_real_readiness_probes(scenario: Scenario, claim: Claims) -> None:
    sc, name = scenario, "rprobe"
    sc.require_real_kubelet(simulated_by="test_simulated_rollout_waits_for_readiness_probes")
    rollout_waits_for_probes(sc, claim, name, {"containers": [_container(NEW)]}, lambda pod: _pass_probe(sc, pod))
