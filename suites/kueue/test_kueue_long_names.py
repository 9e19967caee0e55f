"""Long LWS names under Kueue: Kueue's LWS integration names each group's pod group and
prebuilt Workload `leaderworkerset-<lws>-<group>-<hash>`, which passes the 63-character label
limit for names over 39 characters; from Kueue v0.18.0 the pods carry those identifiers as
annotations, so names up to 52 characters work (CHANGELOG-0.18.md@v0.18.0, kueue PR 10311). The test
uses 50 characters, as Kueue's own e2e test does: the worker StatefulSet `<lws>-0` then has the
52 characters a StatefulSet's revision label allows.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, WaitTimeout, pod_group_names_wrong, workloads

from . import kueue_helpers as K

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
            # the cause: the API server refusing Kueue's label patch of the pods, as Kueue logs it
            held = [p["metadata"]["name"] for p in scenario.pods(K.selector(NAME))]
            refused = K.label_refusals(
                scenario.controller_log_records("kueue", K.RECONCILER_ERROR), scenario.namespace, held
            )
            raise K.held_for_label(stuck, refused) from None
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
    """Kueue's ShortWorkloadNames gate on (a private cluster of its own), an LWS named with 50
    characters, 2 groups of 2: each group's Workload is named with 63 characters, where it would
    otherwise be 74: its owner-based prefix `leaderworkerset-<lws>-<group>` cut to its first 57
    characters, then "-" and the hash of the whole owner name (`workloads.lws_workload_name`),
    so the two groups differ by the hash alone (003). Both groups are admitted and run, every pod
    carrying its group's Workload name as its pod-group name, a valid label value (004)."""
    sc, replicas = private_scenario, 2
    K.plain_queue(sc, unique, {"cpu": "10", "memory": "10Gi"})
    sc.create(workloads.lws(NAME, replicas=replicas, size=2, queue=K.QUEUE))
    uid = K.lws_uid(sc, NAME)
    wls = K.wait_workloads(
        sc, uid, lambda wls: wls if len(wls) == replicas else None, f"the {replicas} groups' Workloads created"
    )
    stored = sorted(w["metadata"]["name"] for w in wls)
    with claim("KUEUE-LONGNAME-003"):
        wrong = workloads.short_workload_names_wrong(stored, NAME, uid, replicas)
        assert not wrong, f"Workload names {stored} with ShortWorkloadNames on: " + "; ".join(wrong)
    with claim("KUEUE-LONGNAME-004"):
        K.wait_workloads(
            sc, uid, lambda wls: wls if len([w for w in wls if K.admitted(w)]) == replicas else None, "both admitted"
        )
        pods = sc.wait_pods(K.all_ready(replicas, 2), "every pod of both groups Ready", selector=K.selector(NAME))
        short = workloads.SHORT_WORKLOAD_NAME_MAX
        want = {i: workloads.lws_workload_name(NAME, uid, i, short) for i in range(replicas)}
        wrong = pod_group_names_wrong(K.groups_of(pods), want)
        assert not wrong, "; ".join(wrong)
