"""A PriorityClass named in an LWS's pod templates gives its group Workloads their priority.

Kueue's docs: a job that specifies only a PriorityClass has that class used for the Workload's
priority; the Workload API: the priority value is populated from the referenced PriorityClass
(priorityClassRef, group scheduling.k8s.io for a pod PriorityClass). Kueue takes the class name of
the first pod set that has one (jobframework extractPriorityFromPodSets), so any valid name counts,
one character included. PriorityClasses are cluster-scoped and a one-character name cannot be
made per test, so the test runs on its worker's private cluster, which runs one test at a time,
and deletes the class.

Why this matters: a serving LWS given a high pod priority must also be queued and admitted ahead
of lower-priority work; a group Workload left at the default priority waits its turn behind them
and is the first to be preempted.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from lws_conformance.testing import RUN_LABEL, Scenario, workloads

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
CLASS = "p"  # the shortest valid PriorityClass name
VALUE = 1000
REPLICAS, SIZE = 2, 2


@pytest.mark.requirement("KUEUE-PRIO-004")
def test_pod_priority_class_sets_the_group_workloads_priority(private_scenario: Scenario, unique: str) -> None:
    """PriorityClass `p` (value 1000) on the private cluster; an LWS of 2 groups of 2 whose leader
    and worker templates name it, queued to a ClusterQueue with room for both: each group's
    Workload has spec.priority 1000 and priorityClassRef scheduling.k8s.io/PriorityClass `p`."""
    sc = private_scenario
    scheduling = client.SchedulingV1Api(sc.api)
    meta = {"name": CLASS, "labels": {RUN_LABEL: sc.objects.run_id}}
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta, "value": VALUE}
    scheduling.create_priority_class(body)  # type: ignore[arg-type]  # dicts accepted
    try:
        K.plain_queue(sc, unique, {"cpu": "10", "memory": "10Gi"})
        obj = workloads.lws("pc", replicas=REPLICAS, size=SIZE, queue=K.QUEUE)
        for role in ("leaderTemplate", "workerTemplate"):
            obj["spec"]["leaderWorkerTemplate"][role]["spec"]["priorityClassName"] = CLASS
        sc.create(obj)
        uid = K.lws_uid(sc, "pc")
        want = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": CLASS}

        def prioritised(ws: list[Obj]) -> list[Obj] | None:
            ok = [w for w in ws if w["spec"].get("priority") == VALUE and w["spec"].get("priorityClassRef") == want]
            return ws if len(ws) == REPLICAS and len(ok) == REPLICAS else None

        K.wait_workloads(
            sc,
            uid,
            prioritised,
            f"both group Workloads with spec.priority {VALUE} and priorityClassRef {want}",
        )
    finally:
        scheduling.delete_priority_class(CLASS)
