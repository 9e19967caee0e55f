"""The MultiKueue suite's types (see conftest.py for the fixture that builds them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lws_conformance.profile import Profile
from lws_conformance.providers.local import LocalCluster
from lws_conformance.testing import Objects, Scenario, workloads

QUEUE = "lq"


@dataclass
class Worker:
    name: str  # its MultiKueueCluster name on the manager
    api: client.ApiClient
    objects: Objects

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)


@dataclass
class MultiKueue:
    manager: Scenario
    workers: list[Worker]
    admission_check: str
    info: dict[str, Any]
    profile: Profile  # the run's: each worker runs it on its own ports

    def local_cluster(self, worker: str) -> LocalCluster:
        """The worker's LocalCluster (fault hooks: stop/start one of its processes)."""
        w = next(w for w in self.info["workers"] if w["name"] == worker)
        return LocalCluster(self.profile.with_overrides([f"network.base_port={w['base_port']}"]), name=w["cluster"])

    def queues(self, unique: str, manager_quota: dict[str, str], worker_quota: dict[str, str]) -> str:
        """Manager: ResourceFlavor + ClusterQueue using the MultiKueue AdmissionCheck + LocalQueue;
        every worker: the same names with `worker_quota`. Returns the LocalQueue name."""
        self.manager.create(workloads.resource_flavor(f"{unique}-rf"))
        cq = workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", manager_quota)
        cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": self.admission_check}]}
        self.manager.create(cq)
        self.manager.create(workloads.local_queue(QUEUE, f"{unique}-cq"))
        for w in self.workers:
            w.objects.create(workloads.resource_flavor(f"{unique}-rf"))
            w.objects.create(workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", worker_quota))
            w.objects.create(workloads.local_queue(QUEUE, f"{unique}-cq"))
        return QUEUE
