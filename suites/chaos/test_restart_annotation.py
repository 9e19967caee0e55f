"""RecreateGroupAfterStart in its annotation form (LWS pod_controller.go handleRestartPolicy@v0.9.0).

Why: LWS v0.8 shipped "recreate the group only once it has started" as the experimental annotation
`leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start` on an LWS with
RecreateGroupOnPodRestart; v0.9 added the restartPolicy value and still reads the annotation. LWSs
written for v0.8 keep the annotation through upgrades: if it stopped being read, a container
restart during a long image pull would tear the whole group down again and again.
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import Scenario

from .restart_support import restart_lws, waits_until_started

pytestmark = pytest.mark.cluster
ANNOTATION = "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start"


@pytest.mark.requirement("CHAOS-RESTART-007")
def test_annotation_form_waits_until_the_group_has_started(scenario: Scenario) -> None:
    """restartPolicy RecreateGroupOnPodRestart plus the annotation: while the workers are Pending
    (held by a scheduling gate) a leader container restart recreates nothing; once every pod runs,
    the recorded restart rebuilds the whole group."""
    sc, name = scenario, "rn"
    sc.require_simulated_kubelet("keeps a container restart in the leader's restartCount")
    obj = restart_lws(name, "RecreateGroupOnPodRestart", replicas=1, size=3)
    obj["metadata"]["annotations"] = {ANNOTATION: "true"}
    waits_until_started(sc, obj, "the annotation form")
