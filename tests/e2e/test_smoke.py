"""End-to-end smoke test against a real cluster (the local one, brought up on demand).

Two checks: plain LWS identity on fake GPU nodes, and Kueue gang admission
leaving a whole group gated when quota covers only one group. These are harness self-tests of the
bring-up; the catalogued requirements they touch are proven by suites/ (LWS-NAME-*, KUEUE-GANG-*).
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.providers import nodes
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster


def test_lws_groups_come_up_named_on_fake_gpu_nodes(scenario: Scenario) -> None:
    lws_groups_named_on_gpu_nodes(scenario)


def test_kueue_admits_one_whole_group_and_gates_the_other(scenario: Scenario, unique: str) -> None:
    kueue_admits_one_group_gates_other(scenario, unique)


def lws_groups_named_on_gpu_nodes(sc: Scenario, name: str = "sm", timeout: float = 90) -> None:
    """LWS replicas 2 x size 3 reaches Available with pods L-0, L-0-1, L-0-2, L-1, ... on GPU nodes."""
    topo = sc.cluster.topology
    sc.create(workloads.lws(name, replicas=2, size=3, gpus=1, gpu_resource=topo.gpu_resource))
    expected = P.expected_pod_names(name, 2, 3)
    pods = sc.wait_pods(
        lambda ps: ps if P.names(ps) == expected and all(P.pod_ready(p) for p in P.live(ps)) else None,
        f"exactly {sorted(expected)} Running and Ready",
        timeout=timeout,
    )
    lws = sc.wait_lws(name, lambda o: P.condition(o, "Available") == "True", "Available=True", timeout=timeout)
    assert lws["status"]["readyReplicas"] == 2, lws["status"]
    fake = {n for n, _b, _r in nodes.node_names(topo)} if sc.cluster.provider == "local" else None
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        assert node_name, f"pod {pod['metadata']['name']} is not bound"
        node = sc.core.read_node(node_name)
        allocatable = (node.status.allocatable if node.status else None) or {}
        assert allocatable.get(topo.gpu_resource), f"{node_name} has no {topo.gpu_resource}"
        if fake is not None:
            assert node_name in fake, f"{node_name} is not one of the harness's fake nodes"


def kueue_admits_one_group_gates_other(
    sc: Scenario, unique: str, name: str = "gang", timeout: float = 90, window: float = 5
) -> None:
    """With quota for exactly one group, one group runs whole and the other stays wholly gated."""
    topo = sc.cluster.topology
    size = 3
    sc.create(workloads.resource_flavor(unique))
    sc.create(workloads.cluster_queue(unique, unique, {"cpu": "10", "memory": "10Gi", topo.gpu_resource: str(size)}))
    sc.create(workloads.local_queue("lq", unique))
    sc.create(workloads.lws(name, replicas=2, size=size, gpus=1, gpu_resource=topo.gpu_resource, queue="lq"))

    def one_admitted_one_gated(ps: list[dict[str, Any]]) -> tuple[str, str] | None:
        groups = P.by_group(ps)
        if sorted(groups) != ["0", "1"] or any(len(g) != size for g in groups.values()):
            return None
        ready = [i for i, g in groups.items() if all(P.pod_ready(p) for p in g)]
        gated = [i for i, g in groups.items() if all(P.gated(p) and not p["spec"].get("nodeName") for p in g)]
        return (ready[0], gated[0]) if len(ready) == 1 and len(gated) == 1 else None

    _admitted, waiting = sc.wait_pods(one_admitted_one_gated, "one group Ready, the other wholly gated", timeout)

    def waiting_group_leaked(ps: list[dict[str, Any]]) -> str | None:
        for p in P.by_group(ps).get(waiting, []):
            if not P.gated(p) or p["spec"].get("nodeName"):
                return f"pod {p['metadata']['name']} of group {waiting} left the admission gate"
        return None

    leak = sc.observe_pods(waiting_group_leaked, duration=window)
    assert leak is None, leak
