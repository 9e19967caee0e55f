"""A DisaggregatedSet under Kueue: each role's groups admitted as gangs.

The queue label goes in each role's metadata (KEP-766: role metadata labels are propagated to the
LWS, "useful for Kueue integration"). Quota is in GPUs, one per pod, and covers two of the three
groups (prefill 2 groups of 2, decode 1 group of 2): two groups must run whole, the third must be
wholly held (watched over a window, not sampled), and there is one Workload per group.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import ClusterHandle, Scenario, observe, workloads
from lws_conformance.testing import predicates as P

from . import ds_helpers as D

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
QUEUE = "lq"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
JOB_UID = "kueue.x-k8s.io/job-uid"


def _groups(pods: list[Obj]) -> dict[tuple[str, int], list[Obj]]:
    out: dict[tuple[str, int], list[Obj]] = {}
    for p in P.live(pods):
        labels = p["metadata"]["labels"]
        out.setdefault((labels[LWS_NAME], int(labels[P.GROUP_INDEX])), []).append(p)
    return out


def _split(pods: list[Obj]) -> tuple[list[Any], list[Any]] | None:
    """(whole-ready groups, wholly held groups) once the 3 groups exist and 2 run, 1 is held."""
    groups = _groups(pods)
    up = sorted(
        k for k, g in groups.items() if len(g) == 2 and all(P.pod_ready(p) and P.bound(p) and not P.gated(p) for p in g)
    )
    down = sorted(k for k, g in groups.items() if len(g) == 2 and all(P.held(p) for p in g))
    return (up, down) if len(groups) == 3 and len(up) == 2 and len(down) == 1 else None


def _role(name: str, replicas: int, gpu: str) -> Obj:
    r = D.role(name, replicas, 2, metadata={"labels": {workloads.QUEUE_LABEL: QUEUE}})
    for key in ("leaderTemplate", "workerTemplate"):
        res = r["spec"]["leaderWorkerTemplate"][key]["spec"]["containers"][0]["resources"]
        res["requests"][gpu] = "1"
        res["limits"] = {gpu: "1"}
    return r


@pytest.mark.requirement("KUEUE-DSGANG-001")
def test_each_role_group_admitted_as_a_gang(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    sc, gpu = scenario, lwsc_cluster.topology.gpu_resource
    sc.create(workloads.resource_flavor(f"{unique}-rf"))
    sc.create(workloads.cluster_queue(f"{unique}-cq", f"{unique}-rf", {"cpu": "100", "memory": "100Gi", gpu: "5"}))
    sc.create(workloads.local_queue(QUEUE, f"{unique}-cq"))
    sc.create(D.dset("gang", [_role("prefill", 2, gpu), _role("decode", 1, gpu)]))
    up, (held,) = sc.wait_pods(_split, "two groups whole and Ready, the third wholly held", selector=f"{D.SET}=gang")

    def leak(pods: list[Obj]) -> str | None:
        for p in _groups(pods).get(held, []):
            if not P.held(p):
                return (
                    f"pod {p['metadata']['name']} of held group {held} left the gate (node {p['spec'].get('nodeName')})"
                )
        return None

    escaped = observe(
        sc.api,
        sc.core.list_namespaced_pod,
        leak,
        duration=D.window(),
        namespace=sc.namespace,
        label_selector=f"{D.SET}=gang",
    )
    assert escaped is None, escaped
    lws = {
        o["metadata"]["name"]: o for o in D.children(D.wait_lws(sc, lambda objs: objs or None, "LWSs listed"), "gang")
    }
    for name, o in lws.items():
        uid, replicas = o["metadata"]["uid"], o["spec"]["replicas"]
        assert (o["metadata"].get("labels") or {}).get(workloads.QUEUE_LABEL) == QUEUE, f"{name} lacks the queue label"
        expected = {workloads.lws_workload_name(name, uid, i) for i in range(replicas)}
        wls = sc.list_objects("Workload", selector=f"{JOB_UID}={uid}")
        assert {w["metadata"]["name"] for w in wls} == expected, (
            f"{name}: Workloads {[w['metadata']['name'] for w in wls]}"
        )
        for w in wls:
            podsets = {ps["name"]: ps["count"] for ps in w["spec"]["podSets"]}
            assert podsets == {"leader": 1, "worker": 1}, f"{w['metadata']['name']}: podSets {podsets}"
            index = int(w["metadata"]["name"].rsplit("-", 2)[-2])
            admitted = P.condition(w, "Admitted") == "True"
            assert admitted == ((name, index) in up), (
                f"{w['metadata']['name']} Admitted={admitted}, group running={(name, index) in up}"
            )
