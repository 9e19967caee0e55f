"""The scale suite's fixture: the sizes of `fixtures/profiles/scale.yaml` (profile key `scale:`).

On a profile whose `scale.groups` is 0 (the default profile, and every other one) each test here
skips as not-applicable at once, like the MultiKueue suite off its profile: the default run keeps
its content and time. `lwsc --name scale run --profile scale --focus "SCALE-GANG or SCALE-ROLL or SCALE-EXCL"`
runs it (`--focus SCALE` would also pick KUEUE-SCALE and LWS-SCALE tests).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lws_conformance.plugin import run_profile
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.scenario import LWS_GROUP, LWS_PLURAL, LWS_VERSION, Scenario

# kueue_helpers (queues, Workload waits) and rollout_claims (the rollout invariants' claims)
for _suite in ("kueue", "rollout"):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / _suite))
from scale_helpers import Scale  # noqa: E402


@pytest.fixture
def scale(request: pytest.FixtureRequest, lwsc_cluster: ClusterHandle) -> Scale:
    raw = run_profile(request.config).raw.get("scale") or {}
    groups, size = int(raw.get("groups") or 0), int(raw.get("group_size") or 0)
    if groups < 1 or size < 1:
        pytest.skip("not run: the profile sets no scale.groups (run with `--profile scale`)")
    # Sizes the topology cannot hold are not skipped: the tests then fail (that is their proof
    # of failure, e.g. --set scale.group_size=11 on 10-node racks: no rack can take a group).
    return Scale(groups, size, raw.get("max_unavailable") or 1, lwsc_cluster.topology)


@pytest.fixture
def drained(scenario: Scenario) -> Iterator[Scenario]:
    """The test's scenario; afterwards every LWS of the namespace is deleted and its pods are
    waited out, so the next whole-capacity test starts on empty racks (the namespace deletion
    alone returns before ~800 pods are gone, and the next test would time their removal)."""
    yield scenario
    scenario.custom.delete_collection_namespaced_custom_object(LWS_GROUP, LWS_VERSION, scenario.namespace, LWS_PLURAL)
    scenario.wait_gone(
        scenario.core.list_namespaced_pod, "every pod of the test deleted", timeout=300, namespace=scenario.namespace
    )
