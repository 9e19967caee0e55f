"""The in-cluster runner's RBAC on the real apiserver (RBAC enforced): `lwsc gen`'s ServiceAccount,
with a token from the TokenRequest API, may do exactly what the non-destructive suites need, and a
focused `lwsc run --kubeconfig` with that token passes; secrets, node writes, RBAC objects,
impersonation and exec are forbidden (real 403s, not just absent rules)."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance import incluster
from lws_conformance.k8s.client import api_client
from lws_conformance.providers.base import ClusterHandle

pytestmark = pytest.mark.cluster
FORBIDDEN = [  # (group, resource, verb, namespaced)
    ("", "secrets", "list", False),
    ("", "secrets", "get", True),
    ("", "nodes", "delete", False),
    ("", "nodes", "patch", False),
    ("", "nodes/status", "patch", False),
    ("", "pods/exec", "create", True),
    ("", "serviceaccounts/token", "create", True),
    ("rbac.authorization.k8s.io", "clusterroles", "create", False),
    ("rbac.authorization.k8s.io", "clusterroles", "escalate", False),
    ("rbac.authorization.k8s.io", "clusterrolebindings", "create", False),
    ("", "users", "impersonate", False),
    ("", "serviceaccounts", "impersonate", True),
    ("apps", "deployments", "delete", True),
]


@pytest.fixture
def sa_kubeconfig(k8s: client.ApiClient, lwsc_cluster: ClusterHandle, run_id: str, tmp_path: Path) -> Iterator[Path]:
    """`lwsc gen`'s Namespace, ServiceAccount, ClusterRole and binding (named per run), and a
    kubeconfig holding a TokenRequest token of that ServiceAccount."""
    suffix = f"{run_id}-{secrets.token_hex(2)}"  # per test: a namespace being deleted cannot be reused
    ns, name = f"lwsc-rbac-{suffix}", f"{incluster.NAME}-{suffix}"
    docs = {d["kind"]: d for d in incluster.manifests("unused", ns)}
    role, binding = docs["ClusterRole"], docs["ClusterRoleBinding"]
    role["metadata"]["name"] = binding["metadata"]["name"] = binding["roleRef"]["name"] = name
    core, rbac = client.CoreV1Api(k8s), client.RbacAuthorizationV1Api(k8s)
    core.create_namespace(docs["Namespace"])
    try:
        core.create_namespaced_service_account(ns, docs["ServiceAccount"])
        rbac.create_cluster_role(role)
        rbac.create_cluster_role_binding(binding)
        _wait_authorized(k8s, f"system:serviceaccount:{ns}:{incluster.NAME}")
        spec = client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        request = client.AuthenticationV1TokenRequest(spec=spec)
        token = core.create_namespaced_service_account_token(incluster.NAME, ns, request)
        admin = yaml.safe_load(Path(lwsc_cluster.kubeconfig).read_text())
        cluster = dict(admin["clusters"][0])
        doc = {
            "apiVersion": "v1", "kind": "Config", "clusters": [cluster],
            "users": [{"name": "sa", "user": {"token": token.status.token}}],
            "contexts": [{"name": "sa", "context": {"cluster": cluster["name"], "user": "sa"}}],
            "current-context": "sa",
        }
        out = tmp_path / "sa.kubeconfig"
        out.touch(mode=0o600)
        out.write_text(yaml.safe_dump(doc))
        yield out
    finally:
        for delete in (lambda: rbac.delete_cluster_role_binding(name), lambda: rbac.delete_cluster_role(name)):
            with contextlib.suppress(ApiException):
                delete()
        core.delete_namespace(ns)


def _wait_authorized(k8s: client.ApiClient, user: str, timeout: float = 15) -> None:
    """The apiserver's RBAC authorizer learns a new binding from its own informer, a moment after
    the create returns (a CI run once saw the first `list nodes` refused with 403). Its decisions
    are not watchable, so ask it (SubjectAccessReview) until it allows what the binding grants."""
    deadline, tick = time.monotonic() + timeout, threading.Event()
    while not _review(k8s, user, "", "nodes", "list", None):
        assert time.monotonic() < deadline, f"RBAC for {user} not in effect after {timeout:.0f}s"
        tick.wait(0.1)


def _review(k8s: client.ApiClient, user: str, group: str, resource: str, verb: str, ns: str | None) -> bool:
    res, _, sub = resource.partition("/")
    attrs = client.V1ResourceAttributes(group=group, resource=res, subresource=sub or None, verb=verb, namespace=ns)
    spec = client.V1SubjectAccessReviewSpec(user=user, resource_attributes=attrs)
    review = client.AuthorizationV1Api(k8s).create_subject_access_review(client.V1SubjectAccessReview(spec=spec))
    return bool(review.status.allowed)


def test_generated_role_allows_exactly_what_the_suites_need(k8s: client.ApiClient, sa_kubeconfig: Path) -> None:
    sa = api_client(sa_kubeconfig)
    try:
        review = client.AuthenticationV1Api(sa).create_self_subject_review(client.V1SelfSubjectReview())
        user = review.status.user_info.username
        assert user.startswith("system:serviceaccount:lwsc-rbac-"), user
        client.CoreV1Api(sa).list_node()  # allowed: a real call under RBAC
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(sa).list_secret_for_all_namespaces()
        assert denied.value.status == 403
        with pytest.raises(ApiException) as denied:
            client.CoreV1Api(sa).delete_node("lwsc-no-such-node")  # authorization comes before existence
        assert denied.value.status == 403
    finally:
        sa.close()
    for group, resources, verbs in incluster.RULES:
        for resource in resources:
            for verb in verbs:
                assert _review(k8s, user, group, resource, verb, "default"), (group, resource, verb)
    for group, resource, verb, namespaced in FORBIDDEN:
        assert not _review(k8s, user, group, resource, verb, "default" if namespaced else None), (resource, verb)


def test_focused_run_passes_with_the_service_account_token(sa_kubeconfig: Path, tmp_path: Path) -> None:
    """The existing-cluster path (preflight, suites, cleanup, archive) with only the SA's rights."""
    proc = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "run", "--kubeconfig", str(sa_kubeconfig),
         "--reports", str(tmp_path / "reports"), "--focus", "LWS-NAME or KUEUE-GANG-001", "-n", "1"],
        capture_output=True, text=True, timeout=900, env={**os.environ},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (archive,) = (tmp_path / "reports").glob("*.tar.gz")
    verify = subprocess.run([sys.executable, "-m", "lws_conformance.cli", "verify", str(archive)], capture_output=True)
    assert verify.returncode == 0, verify.stdout
