"""Kueue's manageJobsWithoutQueueName: true (a profile variant), on a private cluster of its own.

The shared cluster runs Kueue's default (false: KUEUE-UNQUEUED-001); turning it on there would
hold every unlabelled LWS of the other suites. The test's `private_cluster` mark gives it a local
cluster of its own whose Kueue configuration sets it.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, admission, workloads

from . import kueue_helpers as K

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("kueue-manage-unlabelled")]
Obj = dict[str, Any]


@pytest.mark.private_cluster("kueue.manage_jobs_without_queue_name=true")
@pytest.mark.requirement("KUEUE-UNQUEUED-002")
@pytest.mark.requirement("KUEUE-UNQUEUED-003")
@pytest.mark.requirement("KUEUE-UNQUEUED-004")
def test_lws_without_queue_name_is_held_when_kueue_manages_unlabelled_jobs(
    private_scenario: Scenario, unique: str, claim: Claims
) -> None:
    """manageJobsWithoutQueueName true: an LWS without the queue-name label is suspended — every pod
    of every group created but held at Kueue's gate, watched over a window — and never starts,
    since no queue is named that could admit it (002). A second such LWS, deleted while held,
    takes its Workload with it (004). Once the first is assigned a queue (the label added), its
    Workloads name that queue, are admitted and both groups run whole (003)."""
    sc = private_scenario
    replicas, size = 2, 2
    sc.create(workloads.lws("nq", replicas=replicas, size=size))
    sc.create(workloads.lws("gone", replicas=1, size=size))
    with claim("KUEUE-UNQUEUED-002"):
        sc.wait_pods(K.split(replicas, size, ready=0), "every group wholly held by Kueue", selector=K.selector("nq"))

        def escaped(pods: list[Obj]) -> str | None:
            return K.leak(0)(pods) or K.leak(1)(pods)

        leak = sc.observe_pods(escaped, K.OBSERVE_SECONDS, selector=K.selector("nq"))
        assert leak is None, f"an LWS without a queue name started although Kueue manages such jobs: {leak}"

    with claim("KUEUE-UNQUEUED-004"):
        uid = K.lws_uid(sc, "gone")
        name = workloads.lws_workload_name("gone", uid, 0)
        K.wait_workloads(sc, uid, lambda wls: K.by_name(wls).get(name), f"{name} created for the held LWS gone")
        K.delete_lws(sc, "gone")
        K.wait_workloads(sc, uid, lambda wls: name not in K.by_name(wls), f"{name} deleted with the LWS gone")

    with claim("KUEUE-UNQUEUED-003"):
        K.plain_queue(sc, unique, {"cpu": "10", "memory": "10Gi"})
        label = {"metadata": {"labels": {workloads.QUEUE_LABEL: K.QUEUE}}}
        answer = admission.answer(lambda: sc.patch_lws("nq", label))
        assert answer.obj is not None, f"adding queue-name {K.QUEUE} to the held LWS nq refused: {answer.describe()}"
        uid = K.lws_uid(sc, "nq")
        names = {workloads.lws_workload_name("nq", uid, i) for i in range(replicas)}

        def admitted_in_queue(wls: list[Obj]) -> list[Obj] | None:
            got = [wl for n, wl in K.by_name(wls).items() if n in names]
            ok = len(got) == replicas and all(K.admitted(wl) and wl["spec"].get("queueName") == K.QUEUE for wl in got)
            return got if ok else None

        K.wait_workloads(sc, uid, admitted_in_queue, f"the Workloads {sorted(names)} in queue {K.QUEUE}, admitted")
        sc.wait_pods(K.all_ready(replicas, size), "both groups of nq whole and Ready", selector=K.selector("nq"))
