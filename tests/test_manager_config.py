"""Reading a controller's Configuration from its manager ConfigMap (k8s/manager_config.py), with a
stub API: the integrations Kueue lists, and each reason it cannot be known."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance.k8s import manager_config

RELEASE = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks:
  - batch/job
  - pod
"""


def _stub(monkeypatch: pytest.MonkeyPatch, data: dict[str, str] | None = None, status: int | None = None) -> None:
    class Core:
        def __init__(self, _api: Any) -> None:
            pass

        def read_namespaced_config_map(self, name: str, namespace: str) -> Any:
            assert (namespace, name) == manager_config.KUEUE
            if status is not None:
                raise ApiException(status=status, reason="Forbidden")
            return SimpleNamespace(data=data)

    monkeypatch.setattr(client, "CoreV1Api", Core)


def test_the_release_configuration_lists_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    _stub(monkeypatch, {"controller_manager_config.yaml": RELEASE})
    assert manager_config.kueue_frameworks(None) == (frozenset({"batch/job", "pod"}), "")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "status", "why"),
    [
        (None, 403, "is not readable here (403 Forbidden)"),
        ({}, None, "holds no configuration document"),
        ({"controller_manager_config.yaml": "a: [b"}, None, "is no YAML"),
        ({"controller_manager_config.yaml": "kind: Configuration\n"}, None, "lists no integrations.frameworks"),
    ],
)
def test_unknown_is_said_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, data: dict[str, str] | None, status: int | None, why: str
) -> None:
    _stub(monkeypatch, data, status)
    listed, reason = manager_config.kueue_frameworks(None)  # type: ignore[arg-type]
    assert listed is None and why in reason and "kueue-system/kueue-manager-config" in reason, reason
