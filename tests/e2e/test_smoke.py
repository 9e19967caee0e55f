"""End-to-end smoke test against a real cluster (the local one, brought up on demand).

These are the two checks issue #2 names: plain LWS identity on fake GPU nodes, and Kueue gang
admission leaving a whole group gated when quota covers only one group.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.objects import Objects
from lws_conformance.k8s.wait import observe, wait_for
from lws_conformance.providers import nodes
from lws_conformance.providers.base import ClusterHandle

pytestmark = pytest.mark.cluster
LWS_API = "leaderworkerset.x-k8s.io/v1"


def _diag(k8s: client.ApiClient, namespace: str, cluster: ClusterHandle) -> Any:
    def run() -> str:
        events = client.CoreV1Api(k8s).list_namespaced_event(namespace).items[-10:]
        ev = "; ".join(f"{e.involved_object.kind}/{e.involved_object.name} {e.reason}: {e.message}" for e in events)
        logs = ", ".join(f"{k}: {v}" for k, v in cluster.logs.items() if k in ("lws", "kueue"))
        return f"recent events: {ev or 'none'}\ncontroller logs: {logs or 'n/a'}"

    return run


@pytest.mark.requirement("LWS-SMOKE-001")
def test_lws_groups_come_up_named_on_fake_gpu_nodes(
    lwsc_cluster: ClusterHandle, k8s: client.ApiClient, namespace: str, objects: Objects
) -> None:
    topo = lwsc_cluster.topology
    objects.create(workloads.lws("sm", replicas=2, size=3, gpus=1, gpu_resource=topo.gpu_resource))
    core = client.CoreV1Api(k8s)
    expected = P.expected_pod_names("sm", 2, 3)

    pods = wait_for(
        k8s,
        core.list_namespaced_pod,
        lambda ps: ps if P.names(ps) == expected and all(P.pod_ready(p) for p in P.live(ps)) else None,
        what=f"pods of LWS {namespace}/sm",
        condition=f"exactly {sorted(expected)} Running and Ready",
        timeout=90,
        diagnose=_diag(k8s, namespace, lwsc_cluster),
        namespace=namespace,
    )
    lws = wait_for(
        k8s,
        client.CustomObjectsApi(k8s).list_namespaced_custom_object,
        lambda objs: [o for o in objs if P.condition(o, "Available") == "True"],
        what=f"LWS {namespace}/sm",
        condition="condition Available=True",
        timeout=60,
        diagnose=_diag(k8s, namespace, lwsc_cluster),
        group="leaderworkerset.x-k8s.io",
        version="v1",
        namespace=namespace,
        plural="leaderworkersets",
    )[0]
    assert lws["status"]["readyReplicas"] == 2

    fake = {name for name, _b, _r in nodes.node_names(topo)} if lwsc_cluster.provider == "local" else None
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        assert node_name, f"pod {pod['metadata']['name']} is not bound"
        node = core.read_node(node_name)
        assert node.status.allocatable.get(topo.gpu_resource), f"{node_name} has no {topo.gpu_resource}"
        if fake is not None:
            assert node_name in fake


@pytest.mark.requirement("KUEUE-SMOKE-001")
def test_kueue_admits_one_whole_group_and_gates_the_other(
    lwsc_cluster: ClusterHandle, k8s: client.ApiClient, namespace: str, objects: Objects, unique: str
) -> None:
    topo = lwsc_cluster.topology
    size = 3
    objects.create(workloads.resource_flavor(unique))
    objects.create(
        workloads.cluster_queue(
            unique,
            unique,
            {
                "cpu": "10",
                "memory": "10Gi",
                topo.gpu_resource: str(size),  # quota for exactly one group
            },
        )
    )
    objects.create(workloads.local_queue("lq", unique))
    objects.create(workloads.lws("gang", replicas=2, size=size, gpus=1, gpu_resource=topo.gpu_resource, queue="lq"))
    core = client.CoreV1Api(k8s)

    def one_admitted_one_gated(ps: list[dict[str, Any]]) -> tuple[str, str] | None:
        groups = P.by_group(ps)
        if sorted(groups) != ["0", "1"] or any(len(g) != size for g in groups.values()):
            return None
        ready = [i for i, g in groups.items() if all(P.pod_ready(p) for p in g)]
        gated = [i for i, g in groups.items() if all(P.gated(p) and not p["spec"].get("nodeName") for p in g)]
        return (ready[0], gated[0]) if len(ready) == 1 and len(gated) == 1 else None

    admitted, waiting = wait_for(
        k8s,
        core.list_namespaced_pod,
        one_admitted_one_gated,
        what=f"pods of LWS {namespace}/gang",
        condition="one group Ready, the other wholly gated",
        timeout=90,
        diagnose=_diag(k8s, namespace, lwsc_cluster),
        namespace=namespace,
    )

    def waiting_group_leaked(ps: list[dict[str, Any]]) -> str | None:
        for p in P.by_group(ps).get(waiting, []):
            if not P.gated(p) or p["spec"].get("nodeName"):
                return f"pod {p['metadata']['name']} of group {waiting} left the admission gate"
        return None

    leak = observe(k8s, core.list_namespaced_pod, waiting_group_leaked, duration=5, namespace=namespace)
    assert leak is None, leak
