"""Configuration files for LWS and Kueue running as local processes.

Both default to webhook :9443, metrics :8443 and health :8081 and would collide, so each gets its
own loopback ports. Internal cert management is off (its rotator only mints `*.svc` names) and the
webhook serves our certificate with the 127.0.0.1 IP SAN. Kueue's VisibilityOnDemand is off: its
aggregated API would point at a Service nobody serves and break discovery for KCM and kubectl.

Kueue's integrations are those of its release configuration
(config/components/manager/controller_manager_config.yaml) for the kinds the suites create:
`batch/job`, `pod` and the LWS one. `pod` is listed, not left implied by the LWS integration: an
implied pod integration serves LWS pods only and its reconciler skips plain Pods
(pod_controller.go `Skip`), which the release configuration manages (KUEUE-PLAINPOD).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

KUEUE_METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")  # hard-coded in kueue's main.go
FRAMEWORKS = ("batch/job", "pod", "leaderworkerset.x-k8s.io/leaderworkerset")


def lws_config(webhook_port: int, metrics_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": 500, "burst": 500},
    }


def kueue_config(
    webhook_port: int,
    metrics_port: int,
    health_port: int,
    cert_dir: Path,
    manage_unlabelled: bool = False,
    pods_ready: tuple[int, int | None] | None = None,
    feature_gates: dict[str, bool] | None = None,
) -> dict[str, Any]:
    """`pods_ready`: (timeout, backoffBaseSeconds) of waitForPodsReady, the backoff None for Kueue's
    own; `pods_ready` None leaves waitForPodsReady out of the configuration (Kueue's default).
    `feature_gates` are set on top of the harness's own (VisibilityOnDemand off)."""
    config: dict[str, Any] = {
        "manageJobsWithoutQueueName": manage_unlabelled,
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "clientConnection": {"qps": 200, "burst": 400},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": {"VisibilityOnDemand": False, **(feature_gates or {})},
    }
    if pods_ready:
        timeout, backoff = pods_ready
        config["waitForPodsReady"] = {"timeout": f"{timeout}s"}
        if backoff is not None:
            config["waitForPodsReady"]["requeuingStrategy"] = {"backoffBaseSeconds": backoff}
    return config


def write(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
