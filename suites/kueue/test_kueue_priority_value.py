"""A WorkloadPriorityClass whose value changes: the group Workloads that already use it take the
new value (Kueue pkg/controller/core/workloadpriorityclass_controller.go at v0.17.0).

Why this matters: an administrator raises a class's value to let every job of that class go first
(or preempt); a group Workload left at the old value keeps its old place in the queue and its old
power to preempt or be preempted.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import ClusterHandle, Scenario, workloads

from . import kueue_helpers as K
from . import resource_helpers as R

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
SIZE = 2
BEFORE, AFTER = 100, 5000


@pytest.mark.requirement("KUEUE-PRIO-003")
def test_priority_class_value_change_reaches_existing_group_workloads(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str
) -> None:
    """Quota for one group of a 2-group LWS of class `<unique>-p` (value 100): one group admitted,
    one pending. The class's value set to 5000: both group Workloads' spec.priority become 5000."""
    cls = f"{unique}-p"
    scenario.create(workloads.workload_priority_class(cls, BEFORE))
    K.plain_queue(scenario, unique, R.quota(lwsc_cluster, SIZE))
    scenario.create(R.lws("pv", lwsc_cluster, SIZE, K.QUEUE, replicas=2, priority_class=cls))
    (running,), (waiting,) = scenario.wait_pods(
        K.split(2, SIZE, ready=1), "one group whole and Ready, the other wholly held", selector=K.selector("pv")
    )
    uid = K.lws_uid(scenario, "pv")
    names = {workloads.lws_workload_name("pv", uid, i) for i in (running, waiting)}
    K.wait_pending(scenario, uid, workloads.lws_workload_name("pv", uid, waiting))
    K.wait_workloads(
        scenario,
        uid,
        lambda ws: set(K.by_name(ws)) == names and all(w["spec"].get("priority") == BEFORE for w in ws),
        f"{sorted(names)} with spec.priority {BEFORE}",
    )

    scenario.custom.patch_cluster_custom_object(
        workloads.KUEUE_GROUP, workloads.KUEUE_VERSION, "workloadpriorityclasses", cls, {"value": AFTER}
    )

    def updated(ws: list[Obj]) -> dict[str, Any] | None:
        live = K.by_name(ws)
        prio = {n: live[n]["spec"].get("priority") for n in names if n in live}
        return prio if set(prio) == names and set(prio.values()) == {AFTER} else None

    K.wait_workloads(
        scenario,
        uid,
        updated,
        f"both group Workloads (admitted and pending) at spec.priority {AFTER}, the class's new value",
    )
