"""Proof that the conformance checks can fail: break a private cluster, watch them go red.

Each proof breaks one thing the documented behaviour depends on (the LWS pod webhook, the LWS
controller, Kueue's pod webhook), runs the same check the suites run, and requires it to fail.
The broken cluster is private to this module (its own name and ports), never the shared one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance import checks
from lws_conformance.k8s.client import api_client
from lws_conformance.k8s.objects import Objects
from lws_conformance.profile import load_profile
from lws_conformance.providers.local import LocalCluster
from lws_conformance.scenario import Scenario

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("failure-proofs")]
PROOF_TIMEOUT = 20.0


@pytest.fixture(scope="module")
def broken() -> Iterator[LocalCluster]:
    cluster = LocalCluster(load_profile("default", ["network.base_port=17300"]), name=f"proof-{os.getpid()}")
    cluster.up(lambda _m: None)
    yield cluster
    cluster.down()


@pytest.fixture
def sc(broken: LocalCluster, run_id: str, request: pytest.FixtureRequest) -> Iterator[Scenario]:
    handle = broken.handle()
    assert handle is not None
    api = api_client(handle.kubeconfig)
    ns = f"proof-{run_id}-{request.node.name[-20:].replace('_', '-')}".lower()
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    objects = Objects(api, run_id, ns)
    yield Scenario(api, handle, ns, objects)
    objects.delete_created()
    client.CoreV1Api(api).delete_namespace(ns)
    api.close()


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


def test_identity_check_goes_red_with_the_lws_controller_stopped(sc: Scenario, broken: LocalCluster) -> None:
    broken.stop_component("lws")
    try:
        # The LWS webhooks live in the controller process (failurePolicy Fail): creation is refused.
        with pytest.raises((AssertionError, ApiException)):
            checks.lws_groups_named_on_gpu_nodes(sc, timeout=PROOF_TIMEOUT)
    finally:
        broken.start_component("lws")


def test_gang_check_goes_red_without_kueues_pod_webhook(sc: Scenario, run_id: str) -> None:
    original = _without_webhook(sc.api, "kueue-mutating-webhook-configuration", "mpod.kb.io")
    try:
        with pytest.raises(AssertionError):
            checks.kueue_admits_one_group_gates_other(sc, f"p{run_id[-8:]}", timeout=PROOF_TIMEOUT)
    finally:
        _restore(sc.api, original)
