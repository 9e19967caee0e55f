"""What only a real kubelet shows: a group's readiness comes from its pods' real readiness probes.

Every pod runs an exec readiness probe (`cat /tmp/ready`, every second) and writes the file at
start. The test removes the file in one pod through exec, so the kubelet's own probe turns that pod
not Ready (the process keeps running, nothing restarts), then writes it back: the LWS status must
follow ("readyReplicas track the number of groups that are in ready state"; "Before a group has
all its pods ready, the group itself will be in progressing state"). The same scenario with pod
status written by the harness is LWS-STATUS-004/005 on the local cluster. Needs containers that
run (kind, or a vendor's cluster): on the local cluster kwok runs none, so this reads not-run there.
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import Claims, Scenario

from .probe_support import probe_flips, set_probe

pytestmark = pytest.mark.cluster


@pytest.mark.requirement("LWS-PROBE-001")
@pytest.mark.requirement("LWS-PROBE-002")
@pytest.mark.parametrize("unready", ["worker", "leader"])
def test_failing_readiness_probe_keeps_the_group_out_of_ready_replicas(
    scenario: Scenario, claim: Claims, unready: str
) -> None:
    """Group 1 of 2: one worker's (or the leader's) probe made to fail, then to pass again."""
    sc, name = scenario, f"probe-{unready[0]}"
    sc.require_real_kubelet(simulated_by="test_simulated_failing_readiness_probe_keeps_the_group_out_of_ready_replicas")
    target = f"{name}-1" if unready == "leader" else f"{name}-1-2"
    probe_flips(sc, claim, name, target, lambda ready: set_probe(sc, target, ready=ready))
