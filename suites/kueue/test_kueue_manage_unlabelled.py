"""Kueue's manageJobsWithoutQueueName: true (a profile variant), on a private cluster of its own.

The shared cluster runs Kueue's default (false: KUEUE-UNQUEUED-001); turning it on there would
hold every unlabelled LWS of the other suites. The test's `private_cluster` mark gives it a local
cluster of its own whose Kueue configuration sets it.
"""

from __future__ import annotations

import kueue_helpers as K
import pytest

from lws_conformance import workloads
from lws_conformance.scenario import Scenario

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("kueue-manage-unlabelled")]


@pytest.mark.private_cluster("kueue.manage_jobs_without_queue_name=true")
@pytest.mark.requirement("KUEUE-UNQUEUED-002")
def test_lws_without_queue_name_is_held_when_kueue_manages_unlabelled_jobs(private_scenario: Scenario) -> None:
    """manageJobsWithoutQueueName true: an LWS without the queue-name label is suspended — every pod
    of every group created but held at Kueue's gate, watched over a window — and never starts,
    since no queue is named that could admit it."""
    sc = private_scenario
    replicas, size = 2, 2
    sc.create(workloads.lws("nq", replicas=replicas, size=size))
    sc.wait_pods(K.split(replicas, size, ready=0), "every group wholly held by Kueue", selector=K.selector("nq"))

    def escaped(pods: list[dict]) -> str | None:  # type: ignore[type-arg]
        return K.leak(0)(pods) or K.leak(1)(pods)

    leak = sc.observe_pods(escaped, K.OBSERVE_SECONDS, selector=K.selector("nq"))
    assert leak is None, f"an LWS without a queue name started although Kueue manages such jobs: {leak}"
