"""A Kueue-managed LWS keeps its group size (Kueue leaderworkerset_webhook.go ValidateUpdate@v0.19.2,
feature gate LWSImmutableGroupSize, Beta and on by default from v0.19.1 and v0.18.5).

Why: Kueue admits each group's Workload for the size it had; it never recomputes the Workload's
podSets, so a larger size would ungate more pods than the reserved quota covers (the quota bypass
the v0.19.1 changelog names). Kueue now refuses the size change; replicas stay mutable, and an LWS
Kueue does not manage keeps every update. On older Kueue versions the requirement is
not-applicable (catalogue `since`).
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import ClusterHandle, Scenario, admission, workloads

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
SIZE_PATH = "spec.leaderWorkerTemplate.size"


@pytest.mark.requirement("KUEUE-VALID-004")
def test_group_size_of_a_managed_lws_is_immutable(scenario: Scenario, lwsc_cluster: ClusterHandle, unique: str) -> None:
    """Managed (queue-name label): size 2 -> 3 and 2 -> 1 refused naming the field, the LWS keeps
    size 2, replicas 1 -> 2 accepted. Unmanaged (no label): size 2 -> 3 accepted."""
    gpu = lwsc_cluster.topology.gpu_resource
    K.plain_queue(scenario, unique, {"cpu": "100", "memory": "100Gi", gpu: "8"})
    scenario.create(workloads.lws("gs", replicas=1, size=2, queue=K.QUEUE))
    scenario.wait_pods(K.all_ready(1, 2), "the group Ready", selector=K.selector("gs"))
    for size in (3, 1):
        out = admission.answer(lambda s=size: scenario.patch_lws("gs", {"spec": {"leaderWorkerTemplate": {"size": s}}}))
        admission.assert_refused(out, (SIZE_PATH,))
    assert scenario.lws("gs")["spec"]["leaderWorkerTemplate"]["size"] == 2
    scenario.patch_lws("gs", {"spec": {"replicas": 2}})
    assert scenario.lws("gs")["spec"]["replicas"] == 2

    scenario.create(workloads.lws("gu", replicas=1, size=2))
    scenario.patch_lws("gu", {"spec": {"leaderWorkerTemplate": {"size": 3}}})
    assert scenario.lws("gu")["spec"]["leaderWorkerTemplate"]["size"] == 3
