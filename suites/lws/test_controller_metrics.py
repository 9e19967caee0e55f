"""The LWS controller's metrics endpoint (cmd/main.go: secure serving, authn/authz filter).

Why: operators scrape the controller's reconcile and work-queue metrics to see a stuck rollout or
a restart storm; the endpoint is served over TLS and guarded by TokenReview/SubjectAccessReview,
so a scraper needs a ServiceAccount token allowed to `get` the `/metrics` non-resource URL.

The test reads it the way Prometheus would: a ServiceAccount of the test's namespace, a
ClusterRole/Binding granting get on /metrics (named per test, deleted afterwards), a token from
the TokenRequest API, and an HTTPS GET. The serving certificate is self-signed by
controller-runtime at start-up (no CA to verify against), so the check is that the endpoint
speaks TLS and refuses plain HTTP, not who signed it.
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from kubernetes import client

from lws_conformance.testing import Claims, Scenario

pytestmark = pytest.mark.cluster
RUN_LABEL = "lwsc.x-k8s.io/run"


@contextmanager
def _metrics_reader(sc: Scenario, unique: str, run_id: str, allowed: bool) -> Iterator[str]:
    """A ServiceAccount token; with `allowed`, bound to a ClusterRole that may get /metrics."""
    core, rbac = sc.core, client.RbacAuthorizationV1Api(sc.api)
    sa = "metrics-reader" if allowed else "metrics-denied"
    meta = {"name": f"lwsc-metrics-{unique}", "labels": {RUN_LABEL: run_id}}
    core.create_namespaced_service_account(sc.namespace, {"metadata": {"name": sa}})
    if allowed:
        rbac.create_cluster_role({"metadata": meta, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
        rbac.create_cluster_role_binding(
            {
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": meta["name"]},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": sc.namespace}],
            }
        )
    try:
        tok = core.create_namespaced_service_account_token(sa, sc.namespace, {"spec": {"expirationSeconds": 600}})
        yield str(tok.status.token)
    finally:
        if allowed:
            rbac.delete_cluster_role_binding(meta["name"])
            rbac.delete_cluster_role(meta["name"])


def _get(url: str, token: str | None) -> tuple[int, str, str]:
    """(status, body, TLS version) of an HTTPS GET that does not verify the self-signed cert."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    parts = urlsplit(url)
    conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, context=ctx, timeout=15)
    try:
        conn.request("GET", parts.path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        tls = conn.sock.version() if isinstance(conn.sock, ssl.SSLSocket) else None
        return resp.status, resp.read().decode(errors="replace"), str(tls)
    finally:
        conn.close()


def _plain_http_refused(url: str) -> bool:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.request("GET", parts.path)
        return conn.getresponse().status == 400  # Go's TLS server answers plain HTTP with 400
    except (http.client.HTTPException, OSError):
        return True
    finally:
        conn.close()


@pytest.mark.requirement("LWS-METRICS-001")
def test_metrics_endpoint_serves_controller_runtime_metrics_over_tls(
    scenario: Scenario, claim: Claims, unique: str, run_id: str
) -> None:
    """No token: 401; a token without RBAC for /metrics: 403; with it: 200 over TLS, with the
    leaderworkerset controller's controller_runtime reconcile counter; plain HTTP refused."""
    sc = scenario
    url = sc.cluster.endpoints.get("lws-metrics")
    if not url:
        pytest.skip("the provider exposes no LWS metrics endpoint (handle.endpoints['lws-metrics'])")
    with claim("LWS-METRICS-001"):
        assert _get(url, None)[0] == 401, "the metrics endpoint answered a request without a token"
        assert _plain_http_refused(url), f"{url} answered plain HTTP"
        with _metrics_reader(sc, unique, run_id, allowed=False) as token:
            status, body, _ = _get(url, token)
            assert status == 403, f"a token without get on /metrics got {status}: {body[:200]}"
    with _metrics_reader(sc, unique + "a", run_id, allowed=True) as token, claim("LWS-METRICS-001"):
        status, body, tls = _get(url, token)
        assert status == 200, f"GET {url} with an authorized token: {status} {body[:300]}"
        assert tls.startswith("TLSv1."), f"not served over TLS: {tls!r}"
        lines = [ln for ln in body.splitlines() if ln.startswith("controller_runtime_reconcile_total{")]
        assert any('controller="leaderworkerset"' in ln for ln in lines), (
            f"no controller_runtime_reconcile_total for the leaderworkerset controller: {lines[:10]}"
        )
