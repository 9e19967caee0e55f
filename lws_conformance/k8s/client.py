"""Client factory. Nothing global: every client is built from a kubeconfig path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config
from urllib3.util.retry import Retry

# A restarted kube-apiserver refuses connections for a few seconds (~2-8 s here): requests that
# never reached it are retried, with backoff, for ~35 s in all; reads of idempotent methods
# (GET, PUT, DELETE, ...) a few times; a POST/PATCH whose connection broke mid-request is never
# replayed. Without this, any call during a restart ended a test as `error`.
RETRIES = Retry(total=None, connect=12, read=3, redirect=0, status=0, other=0, backoff_factor=0.25, backoff_max=4)


def api_client(kubeconfig: Path | str, context: str | None = None) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), context=context, client_configuration=cfg)
    cfg.retries = RETRIES
    return client.ApiClient(configuration=cfg)


# Answers a moment of patience cures: 429 (e.g. "storage is (re)initializing" while a CRD is
# re-applied by an in-place upgrade, with Retry-After) and 500/503/504 from a restarting server.
TRANSIENT_STATUS = (429, 500, 503, 504)


def retry_after(exc: BaseException) -> float | None:
    """Seconds to wait before retrying the call that raised `exc` (its Retry-After, 1 s by
    default, at most 5 s), or None when `exc` is not a transient API answer."""
    if not isinstance(exc, client.ApiException) or exc.status not in TRANSIENT_STATUS:
        return None
    header = (exc.headers or {}).get("Retry-After") or "1"
    try:
        return min(5.0, max(0.1, float(header)))
    except ValueError:
        return 1.0


def to_dict(api: client.ApiClient, obj: Any) -> dict[str, Any]:
    """Typed model or dict -> plain dict with API field names (camelCase)."""
    if isinstance(obj, dict):
        return obj
    out: dict[str, Any] = api.sanitize_for_serialization(obj)
    return out
