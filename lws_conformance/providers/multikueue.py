"""MultiKueue on local clusters: one manager and N worker clusters side by side, wired together.

Each cluster is a whole `LocalCluster` (its own etcd, apiserver, KCM, scheduler, kwok, LWS and
Kueue) on its own port block: the manager on the profile's `network.base_port`, each worker on a
block claimed with `claim_port_range`. The manager then gets, as Kueue's "Setup MultiKueue" page
describes, per worker a kubeconfig Secret in kueue-system (inline certificate data: MultiKueue
refuses file paths) and a MultiKueueCluster, one MultiKueueConfig listing them and one
AdmissionCheck (controllerName kueue.x-k8s.io/multikueue). ClusterQueues are per test (suites).
`multikueue.json` in the manager's state directory tells suites where the workers are.
"""

from __future__ import annotations

import base64
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..install import pki
from ..k8s.client import api_client
from ..k8s.wait import wait_for
from ..toolchain import ensure_binaries
from ..toolchain.gobuild import Progress
from .base import ClusterHandle
from .components import state_root
from .local import LocalCluster
from .ports import claim_port_range, release_port_range

ADMISSION_CHECK = "multikueue"
CONFIG = "multikueue"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
INFO_FILE = "multikueue.json"


def workers_of(profile_raw: dict[str, Any]) -> int:
    """The profile's `multikueue.workers` (0: no MultiKueue)."""
    n = (profile_raw.get("multikueue") or {}).get("workers", 0)
    return int(n or 0)


def worker_name(manager: str, index: int) -> str:
    return f"{manager}-mkw{index}"


def inline_kubeconfig(p: pki.Pki, server: str) -> str:
    """An admin kubeconfig with the certificates inline (what a MultiKueueCluster Secret needs)."""

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: worker\n  cluster:\n    server: {server}\n"
        f"    certificate-authority-data: {b64(p.ca_crt)}\n"
        f"users:\n- name: admin\n  user:\n    client-certificate-data: {b64(p.admin_crt)}\n"
        f"    client-key-data: {b64(p.admin_key)}\n"
        "contexts:\n- name: worker\n  context:\n    cluster: worker\n    user: admin\n"
        "current-context: worker\n"
    )


@dataclass
class MultiKueueClusters(LocalCluster):
    """The manager is this LocalCluster itself; the workers are LocalClusters named <name>-mkw<i>."""

    workers: int = 1

    @property
    def info_file(self) -> Path:
        return self.dir / INFO_FILE

    def worker_clusters(self) -> list[LocalCluster]:
        """Workers of the running set (ports from multikueue.json), or fresh ones on claimed ports."""
        if self.info_file.is_file():
            info = json.loads(self.info_file.read_text())
            return [
                LocalCluster(replace(self.profile, base_port=w["base_port"]), name=w["cluster"])
                for w in info["workers"]
            ]
        return []

    def running(self) -> bool:
        workers = self.worker_clusters()
        return len(workers) == self.workers and super().running() and all(w.running() for w in workers)

    def up(self, progress: Progress) -> ClusterHandle:
        if self.running():
            progress(f"MultiKueue '{self.name}' is already up")
            return super().up(progress)
        self.down()
        ensure_binaries(self.profile, progress)
        started = time.monotonic()
        bases = [claim_port_range() for _ in range(self.workers)]
        workers = [
            LocalCluster(replace(self.profile, base_port=b), name=worker_name(self.name, i + 1))
            for i, b in enumerate(bases)
        ]
        try:
            with ThreadPoolExecutor(max_workers=self.workers + 1) as pool:
                futures = [pool.submit(LocalCluster.up, c, progress) for c in (self, *workers)]
                handle = futures[0].result()
                for f in futures[1:]:
                    f.result()
            self._write_info(workers)
            progress("wiring MultiKueue: worker Secrets, MultiKueueClusters, MultiKueueConfig, AdmissionCheck")
            self._wire(workers)
        except BaseException:
            for w in workers:
                w.down(keep_logs=True)
            super().down(keep_logs=True)
            raise
        finally:
            for b in bases:
                release_port_range(b)
        progress(
            f"MultiKueue '{self.name}' (manager + {self.workers} workers) ready in {time.monotonic() - started:.1f}s"
        )
        return handle

    def down(self, keep_logs: bool = False) -> None:
        for w in self.worker_clusters() or stale_workers(self.name, self.profile):
            w.down(keep_logs)
        super().down(keep_logs)

    def _write_info(self, workers: list[LocalCluster]) -> None:
        info = {
            "admission_check": ADMISSION_CHECK,
            "workers": [
                {
                    "name": w.name,
                    "cluster": w.name,
                    "base_port": w.profile.base_port,
                    "kubeconfig": str(w.kubeconfig),
                    "handle": str(w.handle_file),
                }
                for w in workers
            ],
        }
        self.info_file.write_text(json.dumps(info, indent=2))

    def _wire(self, workers: list[LocalCluster]) -> None:
        api = api_client(self.kubeconfig)
        try:
            core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
            for w in workers:
                server = f"https://127.0.0.1:{w.port('kube-apiserver')}"
                secret = client.V1Secret(
                    metadata=client.V1ObjectMeta(name=f"{w.name}-kubeconfig", namespace="kueue-system"),
                    string_data={"kubeconfig": inline_kubeconfig(pki.Pki.at(w.dir / "pki"), server)},
                )
                _ignore_exists(lambda s=secret: core.create_namespaced_secret("kueue-system", s))
                _create(custom, "multikueueclusters", _mk_cluster(w.name))
            _create(
                custom,
                "multikueueconfigs",
                _kueue_obj("MultiKueueConfig", CONFIG, {"clusters": [w.name for w in workers]}),
            )
            ac_spec = {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": KUEUE[0], "kind": "MultiKueueConfig", "name": CONFIG},
            }
            _create(custom, "admissionchecks", _kueue_obj("AdmissionCheck", ADMISSION_CHECK, ac_spec))
            self._wait_active(api, custom, "multikueueclusters", {w.name for w in workers})
            self._wait_active(api, custom, "admissionchecks", {ADMISSION_CHECK})
        finally:
            api.close()

    def _wait_active(
        self, api: client.ApiClient, custom: client.CustomObjectsApi, plural: str, names: set[str]
    ) -> None:
        def active(objs: list[dict[str, Any]]) -> bool:
            ok = {
                o["metadata"]["name"]
                for o in objs
                for c in (o.get("status") or {}).get("conditions") or []
                if c["type"] == "Active" and c["status"] == "True"
            }
            return names <= ok

        wait_for(
            api,
            custom.list_cluster_custom_object,
            active,
            what=f"{plural} {sorted(names)} on the manager",
            condition="Active=True",
            timeout=max(10.0, self.profile.ready_seconds / 2),
            diagnose=lambda: f"manager Kueue log: {self.log('kueue')}",
            group=KUEUE[0],
            version=KUEUE[1],
            plural=plural,
        )


def stale_workers(manager: str, profile: Any) -> list[LocalCluster]:
    """Worker state directories left without a multikueue.json (a failed start-up)."""
    out = []
    for d in sorted(state_root().glob(f"{manager}-mkw*")):
        if d.is_dir():
            out.append(LocalCluster(profile, name=d.name))
    return out


def _kueue_obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{KUEUE[0]}/{KUEUE[1]}", "kind": kind, "metadata": {"name": name}, "spec": spec}


def _mk_cluster(name: str) -> dict[str, Any]:
    source = {"kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}}
    return _kueue_obj("MultiKueueCluster", name, {"clusterSource": source})


def _create(custom: client.CustomObjectsApi, plural: str, body: dict[str, Any]) -> None:
    _ignore_exists(lambda: custom.create_cluster_custom_object(KUEUE[0], KUEUE[1], plural, body))


def _ignore_exists(action: Any) -> None:
    try:
        action()
    except ApiException as exc:
        if exc.status != 409:
            raise
