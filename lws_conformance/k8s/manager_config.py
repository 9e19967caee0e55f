"""What an installed controller was configured with, read from the cluster.

LWS's and Kueue's release manifests (and Kueue's Helm chart) keep the manager's Configuration in
the ConfigMap `<component>-manager-config` of the component's namespace (for Kueue
`controller_manager_config.yaml`); the process reads it at start. Where lwsc runs the controllers
itself (the local provider) the cluster handle says what it configured.
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

KUEUE = ("kueue-system", "kueue-manager-config")


def read(api: client.ApiClient, namespace: str, name: str) -> tuple[dict[str, Any] | None, str]:
    """(the Configuration ConfigMap `namespace/name` holds, or None; why it is None)."""
    where = f"ConfigMap {namespace}/{name}"
    try:
        cm = client.CoreV1Api(api).read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        return None, f"{where} is not readable here ({exc.status} {exc.reason})"
    for key, text in sorted((cm.data or {}).items()):
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            return None, f"{where}'s {key} is no YAML ({exc})"
        if isinstance(doc, dict):
            return doc, ""
    return None, f"{where} holds no configuration document"


def kueue_frameworks(api: client.ApiClient) -> tuple[frozenset[str] | None, str]:
    """(the integrations Kueue's Configuration lists, or None; why it is None)."""
    config, why = read(api, *KUEUE)
    if config is None:
        return None, why
    listed = (config.get("integrations") or {}).get("frameworks")
    if not isinstance(listed, list):
        return None, f"ConfigMap {'/'.join(KUEUE)} lists no integrations.frameworks"
    return frozenset(str(f) for f in listed), ""
