"""LWS's pod webhooks act on LWS pods only (LWS v0.9.0 pkg/webhooks/pod_webhook.go Default and
validate: "if pod is not part of leaderworkerset, skip"; the deployed webhooks also select pods by
the leaderworkerset.sigs.k8s.io/name label).

Why: the pod webhooks see every pod of the cluster. A pod of another workload that requests TPUs
must not get an LWS slice's TPU variables, LWS labels or a refusal; only the label decides what is
an LWS pod.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, admission, images, to_dict, workloads

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
LWS_PREFIX = "leaderworkerset.sigs.k8s.io/"


def _plain_pod() -> Obj:
    container = {
        "name": "tpu",
        "image": images.ref("agnhost"),
        "env": [{"name": "USER_VAR", "value": "kept"}],
        "resources": {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain", "labels": {"app": "not-an-lws"}},
        "spec": {"containers": [container], "nodeSelector": workloads.NOWHERE},
    }


def _lws_keys(meta: Obj) -> list[str]:
    keys = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    return sorted(k for k in keys if k.startswith(LWS_PREFIX))


@pytest.mark.requirement("LWS-PODWH-001")
def test_a_pod_of_no_lws_is_left_alone(scenario: Scenario, claim: Claims) -> None:
    """A bare pod requesting 4 google.com/tpu (never scheduled): stored with its one user variable
    and no LWS key; a label added to it afterwards is accepted."""
    sent = _plain_pod()
    out = admission.answer(lambda: scenario.core.create_namespaced_pod(scenario.namespace, sent))
    assert out.kind == "accepted", f"a pod of no LWS was not created: {out.describe()}"
    stored = to_dict(scenario.api, out.obj)
    with claim("LWS-PODWH-001"):
        env = [e["name"] for e in stored["spec"]["containers"][0].get("env") or []]
        assert env == ["USER_VAR"], f"pod {sent['metadata']['name']} of no LWS was stored with env {env}"
    with claim("LWS-PODWH-001"):
        keys = _lws_keys(stored["metadata"])
        assert not keys, f"pod {sent['metadata']['name']} of no LWS got LWS labels or annotations {keys}"
    with claim("LWS-PODWH-001"):
        got = [(c["name"], c["image"], c.get("resources")) for c in stored["spec"]["containers"]]
        want = [(c["name"], c["image"], c.get("resources")) for c in sent["spec"]["containers"]]
        assert got == want, f"pod {sent['metadata']['name']} of no LWS was stored with containers {got}, not {want}"
    with claim("LWS-PODWH-001"):
        patch = {"metadata": {"labels": {"lwsc-updated": "yes"}}}
        upd = admission.answer(lambda: scenario.core.patch_namespaced_pod("plain", scenario.namespace, patch))
        assert upd.kind == "accepted", f"a label update of pod plain (no LWS) was not accepted: {upd.describe()}"
