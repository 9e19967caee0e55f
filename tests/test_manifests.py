from __future__ import annotations

import base64

from lws_conformance.install.manifests import rewrite, split

DOCS = [
    {"kind": "Namespace", "metadata": {"name": "lws-system"}},
    {"kind": "Deployment", "metadata": {"name": "lws-controller-manager"}},
    {"kind": "APIService", "metadata": {"name": "v1beta1.visibility.kueue.x-k8s.io"}},
    {
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "leaderworkersets.leaderworkerset.x-k8s.io"},
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "service": {"name": "lws-webhook-service", "namespace": "lws-system", "path": "/convert"}
                    }
                },
            }
        },
    },
    {
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "lws-mutating-webhook-configuration"},
        "webhooks": [
            {
                "name": "mpod.kb.io",
                "objectSelector": {"matchExpressions": [{"key": "x"}]},
                "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/mutate--v1-pod"}},
            }
        ],
    },
]


def test_service_references_become_loopback_urls_with_our_ca() -> None:
    out = rewrite([dict(d) for d in DOCS], 16010, b"CA")
    kinds = [d["kind"] for d in out]
    assert kinds == ["CustomResourceDefinition", "MutatingWebhookConfiguration"]
    crds, hooks = split(out)
    conv = crds[0]["spec"]["conversion"]["webhook"]["clientConfig"]
    assert conv == {"url": "https://127.0.0.1:16010/convert", "caBundle": base64.b64encode(b"CA").decode()}
    hook = hooks[0]["webhooks"][0]
    assert hook["clientConfig"]["url"] == "https://127.0.0.1:16010/mutate--v1-pod"
    assert "service" not in hook["clientConfig"]
    assert hook["objectSelector"], "kustomize's selectors must survive the rewrite"
