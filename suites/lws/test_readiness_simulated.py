"""A group's readiness from its pods' readiness probes, with the kubelet's reports written by the test.

test_readiness_probes.py makes a real kubelet's exec probe fail in one pod and pass again, and
reads not-run on the local cluster (kwok runs no probe). Here the same LWS (every container with
that readinessProbe) runs on kwok, and the test writes what the kubelet writes when the probe
starts failing and when it passes again (`lws_conformance.chaos.kubelet.readiness`: every
container's `ready`, the pod's Ready and ContainersReady with reason ContainersNotReady, the pod
still Running, nothing restarted); the checks are that test's own (`probe_flips`). Where it ran
reads "simulated kubelet"; on real kubelets it reads not-run (the kubelet overwrites pod status).
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import Claims, Scenario, kubelet

from .probe_support import probe_flips

pytestmark = pytest.mark.cluster


@pytest.mark.requirement("LWS-PROBE-001")
@pytest.mark.requirement("LWS-PROBE-002")
@pytest.mark.parametrize("unready", ["worker", "leader"])
def test_simulated_failing_readiness_probe_keeps_the_group_out_of_ready_replicas(
    scenario: Scenario, claim: Claims, unready: str
) -> None:
    """Group 1 of 2: one worker's (or the leader's) probe reported failing, then passing again."""
    sc, name = scenario, f"sprobe-{unready[0]}"
    sc.require_simulated_kubelet("reports a readiness probe failing and passing again")
    target = f"{name}-1" if unready == "leader" else f"{name}-1-2"

    def set_ready(ready: bool) -> None:
        kubelet.report(sc.api, sc.namespace, target, lambda pod: kubelet.readiness(pod, ready))

    probe_flips(sc, claim, name, target, set_ready)
