"""What an installed Kueue was configured with, read from the cluster.

Kueue's release manifests and its Helm chart keep the manager's Configuration in the ConfigMap
`kueue-manager-config` of `kueue-system`, under `controller_manager_config.yaml`; the process reads
it at start. Where lwsc runs Kueue itself (the local provider) the handle says what it configured.
"""

from __future__ import annotations

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

NAMESPACE, CONFIGMAP, KEY = "kueue-system", "kueue-manager-config", "controller_manager_config.yaml"


def frameworks(api: client.ApiClient) -> tuple[frozenset[str] | None, str]:
    """(the integrations Kueue's Configuration lists, or None; why it is None)."""
    where = f"ConfigMap {NAMESPACE}/{CONFIGMAP}"
    try:
        cm = client.CoreV1Api(api).read_namespaced_config_map(CONFIGMAP, NAMESPACE)
    except ApiException as exc:
        return None, f"{where} is not readable here ({exc.status} {exc.reason})"
    text = (cm.data or {}).get(KEY)
    if not text:
        return None, f"{where} has no {KEY}"
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        return None, f"{where}'s {KEY} is no YAML ({exc})"
    listed = ((config.get("integrations") or {}).get("frameworks")) if isinstance(config, dict) else None
    if not isinstance(listed, list):
        return None, f"{where}'s {KEY} lists no integrations.frameworks"
    return frozenset(str(f) for f in listed), ""
