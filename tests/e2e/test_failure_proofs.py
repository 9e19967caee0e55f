"""Proof that the conformance checks can fail: break a private cluster, watch them go red.

Each proof breaks one thing the documented behaviour depends on (the LWS pod webhook, the LWS
controller, Kueue's pod webhook), runs the same check the suites run, and requires it to fail.
The broken cluster is the xdist worker's private one (`private_cluster`), never the shared one.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance import checks
from lws_conformance.providers.local import LocalCluster
from lws_conformance.scenario import Scenario

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("failure-proofs")]
PROOF_TIMEOUT = 20.0


@pytest.fixture
def sc(private_scenario: Scenario) -> Scenario:
    return private_scenario


def _without_webhook(api: client.ApiClient, config: str, hook: str) -> client.V1MutatingWebhookConfiguration:
    """Remove one webhook from a MutatingWebhookConfiguration; return the original for restoring."""
    adm = client.AdmissionregistrationV1Api(api)
    original = adm.read_mutating_webhook_configuration(config)
    assert any(w.name == hook for w in original.webhooks or []), f"{config} has no {hook}"
    remaining = [w for w in original.webhooks or [] if w.name != hook]
    adm.patch_mutating_webhook_configuration(
        config,
        [{"op": "replace", "path": "/webhooks", "value": [api.sanitize_for_serialization(w) for w in remaining]}],
    )
    return original


def _restore(api: client.ApiClient, original: client.V1MutatingWebhookConfiguration) -> None:
    adm = client.AdmissionregistrationV1Api(api)
    assert original.metadata and original.metadata.name
    current = adm.read_mutating_webhook_configuration(original.metadata.name)
    original.metadata.resource_version = current.metadata.resource_version if current.metadata else None
    adm.replace_mutating_webhook_configuration(original.metadata.name, original)


def test_identity_check_passes_on_the_intact_private_cluster(sc: Scenario) -> None:
    """Control: the proofs below fail because of the break, not because the cluster is unusable."""
    checks.lws_groups_named_on_gpu_nodes(sc, timeout=60)


def test_identity_check_goes_red_without_the_lws_pod_webhook(sc: Scenario) -> None:
    original = _without_webhook(sc.api, "lws-mutating-webhook-configuration", "mpod.kb.io")
    try:
        with pytest.raises(AssertionError):
            checks.lws_groups_named_on_gpu_nodes(sc, timeout=PROOF_TIMEOUT)
    finally:
        _restore(sc.api, original)


def test_identity_check_goes_red_with_the_lws_controller_stopped(sc: Scenario, private_cluster: LocalCluster) -> None:
    private_cluster.stop_component("lws")
    try:
        # The LWS webhooks live in the controller process (failurePolicy Fail): creation is refused.
        with pytest.raises((AssertionError, ApiException)):
            checks.lws_groups_named_on_gpu_nodes(sc, timeout=PROOF_TIMEOUT)
    finally:
        private_cluster.start_component("lws")


def test_gang_check_goes_red_without_kueues_pod_webhook(sc: Scenario, run_id: str) -> None:
    original = _without_webhook(sc.api, "kueue-mutating-webhook-configuration", "mpod.kb.io")
    try:
        with pytest.raises(AssertionError):
            checks.kueue_admits_one_group_gates_other(sc, f"p{run_id[-8:]}", timeout=PROOF_TIMEOUT)
    finally:
        _restore(sc.api, original)
