"""LocalQueue defaulting: a LocalQueue named `default` takes the LWSs of its namespace that name no
queue (Kueue's "Setup default LocalQueue" page; KEP-2936; on by default since v0.12, GA in v0.17).

Why: a namespace administrator relies on it to put every workload of the namespace under quota; an
LWS that slipped past it would run outside any queue, and an LWS that named its own queue must not
be moved into `default`. The default queue is per test namespace, so no other test's unlabelled LWS
is captured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    ClusterHandle,
    Scenario,
    artifact_dir,
    history,
    record,
    saved,
    workloads,
)
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K
from .kueue_helpers import gpu_quota

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
DEFAULT = "default"


def _lq_active(name: str) -> Any:
    def check(objs: list[Obj]) -> Obj | None:
        return next((o for o in objs if o["metadata"]["name"] == name and P.condition(o, "Active") == "True"), None)

    return check


@pytest.mark.requirement("KUEUE-DEFAULTQ-001")
@pytest.mark.requirement("KUEUE-DEFAULTQ-002")
def test_lws_without_queue_name_joins_the_default_local_queue(
    scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str, claim: Claims, tmp_path: Path
) -> None:
    """LocalQueues `default` and `lq` on one ClusterQueue with GPU quota for one group of 2 and one
    pod more. LWS `dq` (label team=a, no queue name, 2 groups of 2, 1 GPU a pod) is stored with
    queue-name default next to team=a; one group is admitted through it and the other stays wholly
    gated (it could start one pod, and must start none) until the quota is raised, then both run.
    In the watch stream no pod of dq leaves the gate before its group's Workload is Admitted: a
    group that started before admission would end in the same state. LWS `own` (label lq) keeps
    lq."""
    sc, t = scenario, lwsc_cluster.topology
    replicas, size = 2, 2
    K.plain_queue(sc, unique, gpu_quota(t, size + 1), queue=DEFAULT)
    sc.create(workloads.local_queue(K.QUEUE, f"{unique}-cq"))
    for lq in (DEFAULT, K.QUEUE):
        # Kueue's webhook defaults from its queue cache; Active is written once the queue is in it.
        sc.wait_objects("LocalQueue", _lq_active(lq), "Active=True", what=f"LocalQueue {lq} in {sc.namespace}")
    sent = workloads.lws("dq", replicas=replicas, size=size, gpus=1, gpu_resource=t.gpu_resource)
    sent["metadata"]["labels"] = {"team": "a"}
    with record(sc.api, sc.namespace) as tl:
        stored = sc.create(sent)
        labels = stored["metadata"].get("labels") or {}
        with claim("KUEUE-DEFAULTQ-001"):
            queue = labels.get(workloads.QUEUE_LABEL)
            assert queue == DEFAULT, f"LWS dq was stored with labels {labels}, no queue {DEFAULT}"
        with claim("KUEUE-DEFAULTQ-002"):
            lost = {k: v for k, v in sent["metadata"]["labels"].items() if labels.get(k) != v}
            assert not lost, f"LWS dq lost labels it was created with when it was defaulted to {DEFAULT}: {lost}"

        uid = K.lws_uid(sc, "dq")
        expected = {workloads.lws_workload_name("dq", uid, i) for i in range(replicas)}
        with claim("KUEUE-DEFAULTQ-001"):
            (running,), (waiting,) = sc.wait_pods(
                K.split(replicas, size, ready=1),
                "one group whole and Ready, the other wholly held (quota for one group and one pod)",
                selector=K.selector("dq"),
            )
            pending = K.wait_pending(sc, uid, workloads.lws_workload_name("dq", uid, waiting))
            assert not (pending.get("status") or {}).get("admission"), "a waiting Workload must carry no admission"
            escaped = sc.observe_pods(K.leak(waiting), K.OBSERVE_SECONDS, selector=K.selector("dq"))
            assert escaped is None, escaped

            K.set_quota(sc, unique, gpu_quota(t, replicas * size))
            wls = K.wait_workloads(
                sc,
                uid,
                lambda ws: K.by_name(ws) if set(K.by_name(ws)) == expected and all(map(K.admitted, ws)) else None,
                f"exactly the Workloads {sorted(expected)}, all Admitted",
            )
            queues = {n: wl["spec"].get("queueName") for n, wl in wls.items()}
            assert set(queues.values()) == {DEFAULT}, f"the group Workloads of dq are in queues {queues}"
            pods = sc.wait_pods(K.all_ready(replicas, size), "every pod of dq Ready", selector=K.selector("dq"))
            gated = [p["metadata"]["name"] for p in pods if p["spec"].get("schedulingGates")]
            assert not gated, f"pods of dq kept a scheduling gate: {gated}"
    with claim("KUEUE-DEFAULTQ-001"):
        events = saved(tl, artifact_dir(tmp_path), "default-queue", lws="dq")
        wrong = history.released_before_admission(
            events, "dq", range(replicas), lambda g: workloads.lws_workload_name("dq", uid, g)
        )
        timeline = artifact_dir(tmp_path) / "default-queue.timeline.json"
        assert not wrong, f"groups of dq not gated until admitted: {wrong} (timeline: {timeline})"

    with claim("KUEUE-DEFAULTQ-001"):
        own = sc.create(workloads.lws("own", replicas=1, size=2, queue=K.QUEUE))
        label = (own["metadata"].get("labels") or {}).get(workloads.QUEUE_LABEL)
        assert label == K.QUEUE, f"LWS own, created with queue-name {K.QUEUE}, was stored with {label!r}"
