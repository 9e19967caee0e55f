"""Long LWS names under Kueue: Kueue's LWS integration names each group's pod group and
prebuilt Workload `leaderworkerset-<lws>-<group>-<hash>`, which passes the 63-character label
limit for names over 39 characters; from Kueue v0.18.0 the pods carry those identifiers as
annotations, so names up to 52 characters work (CHANGELOG-0.18.md@v0.18.0, kueue PR 10311). The test
uses 50 characters, as Kueue's own e2e test does: the worker StatefulSet `<lws>-0` then has the
52 characters a StatefulSet's revision label allows.
"""

from __future__ import annotations

import re
from typing import Any

import kueue_helpers as K
import pytest

from lws_conformance import workloads
from lws_conformance.claims import Claims
from lws_conformance.k8s.wait import WaitTimeout
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
NAME = "long-" + "n" * 45  # 50 characters


def _first_create(events: list[Obj]) -> Obj | None:
    """The StatefulSet controller's first answer for a pod of the LWS's StatefulSets: a
    SuccessfulCreate or a FailedCreate event."""
    for e in events:
        obj = e.get("involvedObject") or {}
        ours = obj.get("kind") == "StatefulSet" and str(obj.get("name", "")).startswith(NAME)
        if ours and e.get("reason") in ("SuccessfulCreate", "FailedCreate"):
            return e
    return None


@pytest.mark.requirement("KUEUE-LONGNAME-001")
@pytest.mark.requirement("KUEUE-LONGNAME-002")
def test_a_50_character_lws_name_is_admitted_and_runs(scenario: Scenario, unique: str, claim: Claims) -> None:
    """An LWS named with 50 characters, 1 group of 2, in a queue with room: its pods are created,
    its group's Workload admitted and both pods ungated and Ready (001); each pod carries Kueue's
    pod-group name as an annotation and not as a label (002)."""
    K.plain_queue(scenario, unique, {"cpu": "10", "memory": "10Gi"})
    scenario.create(workloads.lws(NAME, replicas=1, size=2, queue=K.QUEUE))
    with claim("KUEUE-LONGNAME-001"):
        # The StatefulSet controller reports a refused pod only as an event; waiting for it first
        # names the refusal instead of timing out on pods that never appear.
        first = scenario.wait_in_namespace(
            scenario.core.list_namespaced_event,
            "events",
            _first_create,
            f"the StatefulSet controller's first create of a pod of {NAME}",
        )
        assert first["reason"] == "SuccessfulCreate", (
            f"StatefulSet {first['involvedObject']['name']} could not create its pod: {first['message']}"
        )
        uid = K.lws_uid(scenario, NAME)
        name = workloads.lws_workload_name(NAME, uid, 0)
        K.wait_workloads(
            scenario, uid, lambda wls: (wl := K.by_name(wls).get(name)) and K.admitted(wl) and wl, f"{name} admitted"
        )
        try:
            scenario.wait_pods(K.all_ready(1, 2), "both pods of the group Ready", selector=K.selector(NAME))
        except WaitTimeout:
            stuck = K.stuck_without_group_name(
                scenario.pods(K.selector(NAME)), f"{name} admitted, but every pod of its group"
            )
            if stuck is None:
                raise
            raise stuck from None
    with claim("KUEUE-LONGNAME-002"):
        pods = scenario.pods(K.selector(NAME))
        assert pods, f"no pod of {NAME}"
        carried = {
            p["metadata"]["name"]: (
                K.GROUP_NAME in (p["metadata"].get("annotations") or {}),
                K.GROUP_NAME in (p["metadata"].get("labels") or {}),
            )
            for p in pods
        }
        wrong = {pod: how for pod, how in carried.items() if how != (True, False)}
        assert not wrong, f"pods without the {K.GROUP_NAME} annotation or with the label (annotation, label): {wrong}"


@pytest.mark.private_cluster("kueue.feature_gates.ShortWorkloadNames=true")
@pytest.mark.requirement("KUEUE-LONGNAME-003")
@pytest.mark.requirement("KUEUE-LONGNAME-004")
def test_short_workload_names_keep_a_50_character_lws_within_a_label_value(
    private_scenario: Scenario, unique: str, claim: Claims
) -> None:
    """Kueue's ShortWorkloadNames gate on (a private cluster of its own): the Workload of the group
    of an LWS named with 50 characters gets a name of at most 63 characters, where it would
    otherwise be 74: its owner-based prefix `leaderworkerset-<lws>-0` cut short, then a hash (003).
    The group is admitted and runs, its pods carrying that name as a label value (004)."""
    sc = private_scenario
    K.plain_queue(sc, unique, {"cpu": "10", "memory": "10Gi"})
    sc.create(workloads.lws(NAME, replicas=1, size=2, queue=K.QUEUE))
    uid = K.lws_uid(sc, NAME)
    (wl,) = K.wait_workloads(sc, uid, lambda wls: wls if len(wls) == 1 else None, "the group's one Workload created")
    name = wl["metadata"]["name"]
    with claim("KUEUE-LONGNAME-003"):
        assert len(name) <= 63, f"Workload {name} has {len(name)} characters with ShortWorkloadNames on, more than 63"
        prefix, _, suffix = name.rpartition("-")
        owner = f"leaderworkerset-{NAME}-0"
        assert prefix and owner.startswith(prefix) and re.fullmatch("[0-9a-f]+", suffix), (
            f"Workload {name} is not the owner-based prefix {owner!r} cut short and a hash suffix"
        )
    with claim("KUEUE-LONGNAME-004"):
        K.wait_workloads(sc, uid, lambda wls: [w for w in wls if K.admitted(w)], f"{name} admitted")
        sc.wait_pods(K.all_ready(1, 2), "both pods of the group Ready", selector=K.selector(NAME))
