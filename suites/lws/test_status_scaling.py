"""LWS status, conditions and scaling (lws-behaviour.md §2.4, §4.2, §4.5).

Why these matter: `kubectl get lws`, HPA and every rollout tool read `status` and the conditions,
and HPA drives `/scale`. A count that lags, a condition that never flips or a scale-down that
removes the wrong group are the failures users see first.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance import workloads
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.client import to_dict
from lws_conformance.k8s.wait import wait_for
from lws_conformance.scenario import LWS_GROUP, LWS_PLURAL, LWS_VERSION, Scenario

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def _available(lws: Obj) -> bool:
    return P.condition(lws, "Available") == "True"


def _ready_exactly(expected: set[str]) -> Any:
    def check(pods: list[Obj]) -> list[Obj] | None:
        live = P.live(pods)
        return live if P.names(pods) == expected and all(P.pod_ready(p) for p in live) else None

    return check


def _cond(lws: Obj, ctype: str) -> Obj | None:
    for c in (lws.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def _sts_names(sc: Scenario, expected: set[str]) -> Any:
    def check(objs: list[Obj]) -> list[Obj] | None:
        live = [o for o in objs if not o["metadata"].get("deletionTimestamp")]
        return live if {o["metadata"]["name"] for o in live} == expected else None

    return check


def _scale(sc: Scenario, name: str, replicas: int | None = None) -> Obj:
    if replicas is None:
        out = sc.custom.get_namespaced_custom_object_scale(LWS_GROUP, LWS_VERSION, sc.namespace, LWS_PLURAL, name)
    else:
        out = sc.custom.patch_namespaced_custom_object_scale(
            LWS_GROUP, LWS_VERSION, sc.namespace, LWS_PLURAL, name, {"spec": {"replicas": replicas}}
        )
    return to_dict(sc.api, out)


@pytest.mark.requirement("LWS-STATUS-001")
def test_fresh_lws_is_progressing_then_available(scenario: Scenario) -> None:
    """A new LWS first reports Progressing, then Available, and Progressing flips to False.

    The intermediate state lasts well under a second on kwok, so the order is proven from the
    controller's condition-change events (one per change, with microsecond eventTime), and the
    final state from the object itself.
    """
    sc, name = scenario, "st"
    sc.create(workloads.lws(name, replicas=2, size=2))
    lws = sc.wait_lws(name, P.lws_settled(2), "Available=True with replicas/ready/updated 2")

    avail, prog = _cond(lws, "Available"), _cond(lws, "Progressing")
    assert avail and avail["status"] == "True", lws["status"]
    assert (avail["reason"], avail["message"]) == ("AllGroupsReady", "All replicas are ready"), avail
    # A flipped condition keeps its old reason and message (§4.5).
    assert prog and prog["status"] == "False", lws["status"]
    assert (prog["reason"], prog["message"]) == ("GroupsProgressing", "Replicas are progressing"), prog
    assert _cond(lws, "UpdateInProgress") is None, "UpdateInProgress must not be set on initial creation"

    progressing = "Replicas are progressing, with 0 groups ready of total 2 groups"
    ready = "All replicas are ready, with 2 groups ready of total 2 groups"

    def both_events(evs: list[Obj]) -> tuple[Obj, Obj] | None:
        mine = sorted(
            (e for e in evs if e.get("involvedObject", {}).get("kind") == "LeaderWorkerSet"),
            key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "",
        )
        first = [e for e in mine if e.get("message") == progressing]
        last = [e for e in mine if e.get("message") == ready]
        return (first[0], last[0]) if first and last else None

    first, last = wait_for(
        sc.api,
        sc.core.list_namespaced_event,
        both_events,
        what=f"events of LeaderWorkerSet {sc.namespace}/{name}",
        condition=f"{progressing!r} and {ready!r}",
        timeout=30,
        diagnose=sc.diagnose,
        namespace=sc.namespace,
        field_selector=f"involvedObject.name={name}",
    )
    assert first["reason"] == "GroupsProgressing" and last["reason"] == "AllGroupsReady", (first, last)
    t_first = first.get("eventTime") or first.get("firstTimestamp")
    t_last = last.get("eventTime") or last.get("firstTimestamp")
    # eventTime has microseconds (events.k8s.io, v0.9.0+); older core events only seconds.
    assert t_first and t_last and t_first <= t_last, f"Progressing event ({t_first}) after Available ({t_last})"


@pytest.mark.requirement("LWS-STATUS-002")
def test_status_counts_follow_groups_and_generation(scenario: Scenario) -> None:
    """replicas / readyReplicas / updatedReplicas count groups, observedGeneration tracks spec edits."""
    sc, name = scenario, "cnt"
    sc.create(workloads.lws(name, replicas=3, size=2))
    sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 3, 2)), "3 groups of 2 pods Ready")
    lws = sc.wait_lws(name, P.lws_settled(3), "Available with replicas/ready/updated 3")
    assert lws["status"]["observedGeneration"] == lws["metadata"]["generation"] == 1, lws["status"]

    lws = sc.patch_lws(name, {"spec": {"replicas": 2}})
    assert lws["metadata"]["generation"] == 2, lws["metadata"]
    lws = sc.wait_lws(name, P.lws_settled(2), "observedGeneration 2, Available, replicas/ready/updated 2")
    for c in lws["status"]["conditions"]:
        assert c.get("observedGeneration") == 2, f"condition {c['type']} not refreshed to generation 2"
    leader = to_dict(sc.api, sc.apps.read_namespaced_stateful_set(name, sc.namespace))
    assert leader["status"]["replicas"] == lws["status"]["replicas"] == 2


@pytest.mark.requirement("LWS-STATUS-003")
def test_hpa_pod_selector_selects_exactly_the_leaders(scenario: Scenario) -> None:
    """status.hpaPodSelector is the documented string and selects the leader pods only."""
    sc, name = scenario, "hpa"
    sc.create(workloads.lws(name, replicas=2, size=3))
    sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 2, 3)), "2 groups of 3 pods Ready")
    lws = sc.wait_lws(name, lambda o: (o.get("status") or {}).get("hpaPodSelector"), "hpaPodSelector set")
    selector = lws["status"]["hpaPodSelector"]
    assert selector == f"{NAME_LABEL}={name},{WORKER_INDEX}=0", selector
    assert P.names(sc.pods(selector)) == {f"{name}-0", f"{name}-1"}


@pytest.mark.requirement("LWS-SCALE-001")
def test_scale_subresource_removes_highest_groups_whole(scenario: Scenario) -> None:
    """/scale reports spec/status replicas and the HPA selector; scaling down removes the highest
    indices with their worker StatefulSets and pods, leaves lower groups untouched, and scaling up
    adds whole groups back."""
    sc, name = scenario, "sc"
    sc.create(workloads.lws(name, replicas=3, size=2))
    before = sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 3, 2)), "3 groups of 2 pods Ready")
    lws = sc.wait_lws(name, P.lws_settled(3), "Available with 3 groups")

    scale = _scale(sc, name)
    assert scale["spec"]["replicas"] == 3 and scale["status"]["replicas"] == 3, scale
    assert scale["status"]["selector"] == lws["status"]["hpaPodSelector"], (scale["status"], lws["status"])

    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in before}
    _scale(sc, name, 1)
    kept = sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 1, 2)), f"only group 0 ({name}-0, {name}-0-1)")
    for p in kept:
        assert p["metadata"]["uid"] == uids[p["metadata"]["name"]], f"{p['metadata']['name']} was recreated"
    sc.wait_statefulsets(_sts_names(sc, {name, f"{name}-0"}), f"StatefulSets {name}, {name}-0 only")
    sc.wait_lws(name, P.lws_settled(1), "Available with 1 group")
    assert _scale(sc, name)["status"]["replicas"] == 1

    _scale(sc, name, 2)
    sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 2, 2)), "groups 0 and 1 Ready")
    sc.wait_statefulsets(_sts_names(sc, {name, f"{name}-0", f"{name}-1"}), "leader + 2 worker StatefulSets")
    sc.wait_lws(name, P.lws_settled(2), "Available with 2 groups")


@pytest.mark.requirement("LWS-SCALE-002")
def test_scale_to_zero_and_back(scenario: Scenario) -> None:
    """replicas 0 is Available at once with nothing running; 0 -> 2 -> 0 adds and removes whole groups."""
    sc, name = scenario, "zero"
    sc.create(workloads.lws(name, replicas=0, size=2))
    lws = sc.wait_lws(name, P.lws_settled(0), "Available with replicas 0")
    assert _cond(lws, "Available") and sc.pods() == [], "replicas 0 must run no pods"

    _scale(sc, name, 2)
    sc.wait_pods(_ready_exactly(P.expected_pod_names(name, 2, 2)), "2 groups of 2 pods Ready")
    sc.wait_lws(name, P.lws_settled(2), "Available with 2 groups")

    _scale(sc, name, 0)
    sc.wait_gone(sc.core.list_namespaced_pod, "no pods", namespace=sc.namespace)
    sc.wait_statefulsets(_sts_names(sc, {name}), f"only the leader StatefulSet {name}")
    sc.wait_lws(name, P.lws_settled(0), "Available with replicas 0 again")
    assert to_dict(sc.api, sc.apps.read_namespaced_stateful_set(name, sc.namespace))["spec"]["replicas"] == 0
