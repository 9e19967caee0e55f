"""A rolling update waits for the updated groups' readiness, with the kubelet's reports written by the test.

test_rollout_probes.py updates the worker template to one whose readiness probe fails until the
test makes it pass, on real kubelets, and reads not-run on the local cluster (kwok reports every
pod Ready at once). Here the updated template also puts the workers on a `ScriptedNode`, a node
kwok leaves alone whose kubelet is the test: each updated worker is reported running and not Ready
(its probe failing: every container's `ready` false, Ready and ContainersReady False), and Ready
once the test reports its probe passing (`lws_conformance.chaos.kubelet`). The checks are that
test's own (`rollout_waits_for_probes`). Where it ran reads "simulated kubelet"; on real kubelets
it reads not-run.
"""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import LWS_GROUP, LWS_PLURAL, LWS_VERSION, Claims, Scenario, kubelet

from .rollout_probe_support import NEW, _container, rollout_waits_for_probes

pytestmark = pytest.mark.cluster


@pytest.mark.requirement("ROLL-PROBE-001")
@pytest.mark.requirement("ROLL-PROBE-002")
@pytest.mark.destructive  # adds a Node object that no kwok manages
def test_simulated_rollout_waits_for_readiness_probes(scenario: Scenario, claim: Claims, unique: str) -> None:
    sc, name = scenario, "sprobe-roll"
    sc.require_simulated_kubelet("reports the updated workers' readiness probes failing, then passing")
    hostname = sc.cluster.topology.hostname_label
    with kubelet.ScriptedNode(sc.api, f"lwsc-{unique}", sc.namespace, hostname, ready=lambda _pod: False) as node:
        worker_spec = {
            "containers": [_container(NEW)],
            "nodeSelector": {hostname: node.name},
            "tolerations": [{"key": kubelet.UNBACKED, "operator": "Exists", "effect": "NoSchedule"}],
        }

        def pass_probe(pod: str) -> None:
            node.report(pod, lambda p: kubelet.readiness(p, True))

        try:
            rollout_waits_for_probes(sc, claim, name, worker_spec, pass_probe)
            node.check()
        finally:
            try:
                sc.custom.delete_namespaced_custom_object(LWS_GROUP, LWS_VERSION, sc.namespace, LWS_PLURAL, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            node.drain()
