"""The LWS's own labels and annotations on its StatefulSets (LWS metadata.go mergeMetadata@v0.10.0,
lws PR #896).

Why: cost allocation, policy engines and GitOps tools select StatefulSets by the team/app labels the
user put on the LWS; before v0.10.0 the StatefulSets carried only the controller's labels. The
controller's own keys must still win over a user value of the same key, or the controller would
lose track of its StatefulSets. Not-applicable before v0.10.0 (catalogue `since`).
"""

from __future__ import annotations

import pytest

from lws_conformance.testing import Scenario, workloads

pytestmark = pytest.mark.cluster
PREFIX = "leaderworkerset.sigs.k8s.io/"


@pytest.mark.requirement("LWS-LABEL-002")
def test_lws_metadata_is_copied_to_its_statefulsets(scenario: Scenario) -> None:
    sc, name, replicas, size = scenario, "md", 2, 2
    obj = workloads.lws(name, replicas=replicas, size=size)
    obj["metadata"]["labels"] = {"team": "inference"}
    obj["metadata"]["annotations"] = {"owner": "platform", PREFIX + "replicas": "user-value"}
    sc.create(obj)
    sc.wait_lws(name, sc.settled(replicas), f"Available with {replicas} groups")
    stss = {s["metadata"]["name"]: s for s in sc.statefulsets()}
    assert set(stss) == {name, *(f"{name}-{g}" for g in range(replicas))}, sorted(stss)
    wrong = {}
    for sname, sts in stss.items():
        labels, annotations = sts["metadata"].get("labels") or {}, sts["metadata"].get("annotations") or {}
        if labels.get("team") != "inference" or annotations.get("owner") != "platform":
            wrong[sname] = (labels, annotations)
        if labels.get(PREFIX + "name") != name:
            wrong[sname] = (labels, annotations)
    leader = stss[name]["metadata"].get("annotations") or {}
    assert not wrong, f"StatefulSets without the LWS's labels/annotations (or their own name label): {wrong}"
    assert leader.get(PREFIX + "replicas") == str(replicas), (
        f"the leader StatefulSet's replicas annotation {leader.get(PREFIX + 'replicas')!r}: the controller's value "
        f"{replicas} must win over the LWS's"
    )
