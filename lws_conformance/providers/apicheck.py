"""Does a kubeconfig's cluster answer as a Kubernetes API server that accepts its credentials?

Asked once, before a command does any work, through the Kubernetes client's own request path:
its TLS settings, client certificates, tokens and exec plugins, and the kubeconfig's `proxy-url`
or the proxy environment (a raw socket would go around a proxy the client uses). Each refusal is
one line naming the fix (`UserError`, exit 2): 401/403 name the context and say to refresh the
credentials, 404 says the server is no Kubernetes API server, a TLS failure names the CA the
kubeconfig gives, a proxy failure names the proxy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ..errors import UserError
from . import kubeconfigs

TIMEOUT = (3.0, 10.0)  # (connect, read) seconds of the one request


def check(kubeconfig: Path | str, context: str, server: str) -> str:
    """The server's Kubernetes version (`/version`); a `UserError` saying why it cannot be used.
    `kubeconfig`: a file, or several joined by os.pathsep (merged as `kubeconfigs` says)."""
    where = f"{server} (context {context}, kubeconfig {kubeconfig})"
    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=str(kubeconfig), context=context, client_configuration=cfg)
    except Exception as exc:  # noqa: BLE001  (a kubeconfig the client cannot use, whatever the cause)
        raise UserError(f"the kubeconfig cannot be used for {where}: {_first(exc)}; fix the kubeconfig") from None
    cfg.retries = False  # one attempt: the answer is what this check reports
    api = client.ApiClient(cfg)
    try:
        info = client.VersionApi(api).get_code(_request_timeout=TIMEOUT)
    except Exception as exc:  # noqa: BLE001  (each failure is described below)
        raise UserError(refusal(exc, where, context, _cluster_entry(kubeconfig, context), cfg.proxy)) from None
    finally:
        api.close()
    version = getattr(info, "git_version", None)
    if not version:
        raise UserError(f"{where} answers /version without a gitVersion: not a Kubernetes API server; {_FIX}")
    return str(version)


_FIX = "point the context's cluster `server:` at the cluster's API server"


def refusal(
    exc: BaseException, where: str, context: str, cluster: dict[str, Any] | None = None, proxy: str | None = None
) -> str:
    """One line for a failed request to the API server at `where` (server, context, kubeconfig)."""
    cluster = cluster or {}
    if isinstance(exc, ApiException) and exc.status:
        status = int(exc.status)
        if status == 401:
            return (
                f"the API server {where} refuses the credentials (401 Unauthorized): refresh the credentials of "
                f"context {context} (log in again, or renew its token or client certificate)"
            )
        if status == 403:
            return (
                f"the API server {where} forbids this user (403 Forbidden): refresh the credentials of context "
                f"{context}, or use a context whose user may use this cluster"
            )
        if status == 404:
            return f"{where} answers 404 Not Found for /version: not a Kubernetes API server; {_FIX}"
        return f"the API server {where} answered {status} {exc.reason or ''} for /version".rstrip() + "; is it healthy?"
    reason = _root(exc)
    text = _first(reason)
    if isinstance(reason, urllib3.exceptions.ProxyError) or "ProxyError" in text:
        given = f"proxy-url {proxy} of the kubeconfig" if cluster.get("proxy-url") else f"proxy {proxy} (environment)"
        return f"the {given} did not pass the request on to {where} ({text}); fix the proxy or its address"
    if isinstance(reason, urllib3.exceptions.SSLError) or "SSL" in text or "certificate" in text.lower():
        return f"TLS with the API server {where} failed ({_short_tls(text)}): {_ca(cluster)}"
    if isinstance(exc, (ValueError, TypeError)):
        return f"{where} does not answer /version as Kubernetes does ({text}): not a Kubernetes API server; {_FIX}"
    return f"cannot reach the API server {where}: {_short_os(text)}; is the cluster up?"


def midway(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one line) for a request that failed after the up-front `check` passed (a
    credential that expired meanwhile, a permission the user lacks, a server gone): 2 when the
    user can fix it (401, 403), else 3; None when `exc` is no API or connection failure."""
    if isinstance(exc, ApiException) and exc.status in (401, 403):
        verb = "refuses the credentials" if exc.status == 401 else "forbids this user"
        why = f"the API server {verb} ({exc.status} {exc.reason}) midway"
        return 2, f"{why}: refresh the credentials, or use a context whose user may do this"
    if isinstance(exc, ApiException):
        return 3, f"the API server answered {exc.status} {exc.reason or ''}".rstrip() + " midway; nothing more was done"
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return 3, f"the API server stopped answering midway ({_short_os(_first(_root(exc)))}); nothing more was done"
    return None


def _ca(cluster: dict[str, Any]) -> str:
    if cluster.get("insecure-skip-tls-verify"):
        return "the kubeconfig skips verification, so the server's TLS itself is broken (is it an HTTPS server?)"
    if cluster.get("certificate-authority"):
        return (
            f"the server's certificate is not signed by the CA {cluster['certificate-authority']} "
            "(certificate-authority of the kubeconfig's cluster); give the cluster's CA there"
        )
    if cluster.get("certificate-authority-data"):
        return (
            "the server's certificate is not signed by the CA in certificate-authority-data of the kubeconfig's "
            "cluster; give the cluster's CA there"
        )
    return (
        "the kubeconfig's cluster names no CA (certificate-authority or certificate-authority-data), so the "
        "system CAs were used and do not sign the server's certificate; give the cluster's CA"
    )


def _cluster_entry(kubeconfig: Path | str, context: str) -> dict[str, Any]:
    """The `cluster:` mapping the context names (for the CA and the proxy in messages)."""
    try:
        view = kubeconfigs.read(tuple(Path(p) for p in str(kubeconfig).split(os.pathsep) if p))
    except UserError:
        return {}
    ctx = view.entry("contexts", context)
    found = view.entry("clusters", ((ctx[0].get("context") or {}) if ctx else {}).get("cluster"))
    return dict(found[0].get("cluster") or {}) if found else {}


def _root(exc: BaseException) -> BaseException:
    """The cause urllib3 wrapped (MaxRetryError.reason), else `exc`."""
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, BaseException) else exc


def _first(exc: BaseException | str) -> str:
    text = str(exc).replace("\n", " ").strip()
    return (text or type(exc).__name__)[:200]


def _short_tls(text: str) -> str:
    for marker in ("CERTIFICATE_VERIFY_FAILED", "WRONG_VERSION_NUMBER", "hostname mismatch", "certificate verify"):
        if marker in text:
            start = text.find("[SSL")
            return text[start : text.find(")", start) + 1] if start >= 0 else marker
    return text[:160]


def _short_os(text: str) -> str:
    for marker in ("Connection refused", "timed out", "Name or service not known", "No route to host"):
        if marker in text:
            return marker
    return text[:160]
