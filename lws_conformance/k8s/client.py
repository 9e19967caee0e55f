"""Client factory. Nothing global: every client is built from a kubeconfig path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config


def api_client(kubeconfig: Path | str, context: str | None = None) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(config_file=str(kubeconfig), context=context)
    return api


def to_dict(api: client.ApiClient, obj: Any) -> dict[str, Any]:
    """Typed model or dict -> plain dict with API field names (camelCase)."""
    if isinstance(obj, dict):
        return obj
    out: dict[str, Any] = api.sanitize_for_serialization(obj)
    return out
