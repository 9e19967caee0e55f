"""The MultiKueue fixture: the manager (the cluster under test) and its worker clusters.

`lwsc --profile multikueue up` leaves `multikueue.json` next to the manager's kubeconfig
(`lws_conformance.providers.multikueue`); without it every test here skips. Each test gets, on
every worker, a namespace with the same name as its manager namespace (MultiKueue creates the
remote objects in the same namespace), and per-test queues on all clusters; all deleted afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import RUN_LABEL, ClusterHandle, Objects, Scenario, api_client, run_profile

from .mk_helpers import MultiKueue, Worker


@pytest.fixture
def multikueue(
    request: pytest.FixtureRequest, lwsc_cluster: ClusterHandle, scenario: Scenario, run_id: str
) -> Iterator[MultiKueue]:
    info_file = Path(lwsc_cluster.kubeconfig).parent / "multikueue.json"
    if not info_file.is_file():
        pytest.skip("not run: the cluster under test is no MultiKueue set (run with `--profile multikueue`)")
    info = json.loads(info_file.read_text())
    workers: list[Worker] = []
    try:
        for w in info["workers"]:
            api = api_client(Path(w["kubeconfig"]))
            workers.append(Worker(w["name"], api, Objects(api, run_id, scenario.namespace)))
            meta = client.V1ObjectMeta(name=scenario.namespace, labels={RUN_LABEL: run_id})
            client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=meta))
        yield MultiKueue(scenario, workers, info["admission_check"], info, run_profile(request.config))
    finally:
        for wk in workers:
            wk.objects.delete_created()
            try:
                wk.core.delete_namespace(scenario.namespace)
            except ApiException as exc:
                if exc.status != 404:
                    raise
            wk.api.close()
