"""LocalQueue defaulting: a LocalQueue named `default` takes the LWSs of its namespace that name no
queue (Kueue's "Setup default LocalQueue" page; KEP-2936; on by default since v0.12, GA in v0.17).

Why: a namespace administrator relies on it to put every workload of the namespace under quota; an
LWS that slipped past it would run outside any queue, and an LWS that named its own queue must not
be moved into `default`. The default queue is per test namespace, so no other test's unlabelled LWS
is captured.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
DEFAULT = "default"


def _lq_active(name: str) -> Any:
    def check(objs: list[Obj]) -> Obj | None:
        return next((o for o in objs if o["metadata"]["name"] == name and P.condition(o, "Active") == "True"), None)

    return check


@pytest.mark.requirement("KUEUE-DEFAULTQ-001")
@pytest.mark.requirement("KUEUE-DEFAULTQ-002")
def test_lws_without_queue_name_joins_the_default_local_queue(scenario: Scenario, unique: str, claim: Claims) -> None:
    """LocalQueues `default` and `lq` on one ClusterQueue. LWS `dq` (label team=a, no queue name, 2
    groups of 2) is stored with queue-name default next to team=a and admitted group by group
    through it; LWS `own` (label lq) keeps lq."""
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi"}, queue=DEFAULT)
    scenario.create(workloads.local_queue(K.QUEUE, f"{unique}-cq"))
    for lq in (DEFAULT, K.QUEUE):
        # Kueue's webhook defaults from its queue cache; Active is written once the queue is in it.
        scenario.wait_objects(
            "LocalQueue", _lq_active(lq), "Active=True", what=f"LocalQueue {lq} in {scenario.namespace}"
        )
    replicas, size = 2, 2
    sent = workloads.lws("dq", replicas=replicas, size=size)
    sent["metadata"]["labels"] = {"team": "a"}
    stored = scenario.create(sent)
    labels = stored["metadata"].get("labels") or {}
    with claim("KUEUE-DEFAULTQ-001"):
        queue = labels.get(workloads.QUEUE_LABEL)
        assert queue == DEFAULT, f"LWS dq was stored with labels {labels}, no queue {DEFAULT}"
    with claim("KUEUE-DEFAULTQ-002"):
        lost = {k: v for k, v in sent["metadata"]["labels"].items() if labels.get(k) != v}
        assert not lost, f"LWS dq lost labels it was created with when it was defaulted to {DEFAULT}: {lost}"

    uid = K.lws_uid(scenario, "dq")
    expected = {workloads.lws_workload_name("dq", uid, i) for i in range(replicas)}
    with claim("KUEUE-DEFAULTQ-001"):
        wls = K.wait_workloads(
            scenario,
            uid,
            lambda ws: K.by_name(ws) if set(K.by_name(ws)) == expected and all(map(K.admitted, ws)) else None,
            f"exactly the Workloads {sorted(expected)}, all Admitted",
        )
        queues = {n: wl["spec"].get("queueName") for n, wl in wls.items()}
        assert set(queues.values()) == {DEFAULT}, f"the group Workloads of dq are in queues {queues}"
        pods = scenario.wait_pods(K.all_ready(replicas, size), "every pod of dq Ready", selector=K.selector("dq"))
        gated = [p["metadata"]["name"] for p in pods if p["spec"].get("schedulingGates")]
        assert not gated, f"pods of dq kept a scheduling gate: {gated}"

    with claim("KUEUE-DEFAULTQ-001"):
        own = scenario.create(workloads.lws("own", replicas=1, size=2, queue=K.QUEUE))
        label = (own["metadata"].get("labels") or {}).get(workloads.QUEUE_LABEL)
        assert label == K.QUEUE, f"LWS own, created with queue-name {K.QUEUE}, was stored with {label!r}"
