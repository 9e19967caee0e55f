"""LWS status, conditions and scaling (leaderworkerset_controller.go updateStatus, updateConditions@v0.9.0).

Why these matter: `kubectl get lws`, HPA and every rollout tool read `status` and the conditions,
and HPA drives `/scale`. A count that lags, a condition that never flips or a scale-down that
removes the wrong group are the failures users see first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Claims,
    Scenario,
    artifact_dir,
    history,
    record,
    saved,
    to_dict,
    workloads,
)
from lws_conformance.testing import predicates as P

from . import lws_helpers as L

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def _timeline(tmp_path: Path, name: str) -> Path:
    return artifact_dir(tmp_path) / f"{name}.timeline.json"


def _available(lws: Obj) -> bool:
    return P.condition(lws, "Available") == "True"


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
def test_fresh_lws_is_progressing_then_available(scenario: Scenario, tmp_path: Path) -> None:
    """A new LWS first reports Progressing, then Available, and Progressing flips to False.

    The intermediate state lasts well under a second on kwok, so the order is proven from the
    LWS object's own status writes as the watch delivered them, in resourceVersion order (the
    timeline observer records from before the LWS exists); event timestamps (1 s) cannot order
    writes within one second. The reasons and messages are checked on the final object.
    """
    sc, name = scenario, "st"
    with record(sc.api, sc.namespace, workloads=False) as tl:
        sc.create(workloads.lws(name, replicas=2, size=2))
        lws = sc.wait_lws(name, sc.settled(2), "Available=True with replicas/ready/updated 2")
    events = saved(tl, artifact_dir(tmp_path), name, lws=name)
    conditions = history.lws_condition_history(events, name)
    wrong = history.progressing_then_available(conditions)
    assert not wrong, f"condition history {conditions}: {wrong} (timeline: {_timeline(tmp_path, name)})"

    avail, prog = _cond(lws, "Available"), _cond(lws, "Progressing")
    assert avail and avail["status"] == "True", lws["status"]
    assert (avail["reason"], avail["message"]) == ("AllGroupsReady", "All replicas are ready"), avail
    # A flipped condition keeps its old reason and message (setCondition@v0.9.0).
    assert prog and prog["status"] == "False", lws["status"]
    assert (prog["reason"], prog["message"]) == ("GroupsProgressing", "Replicas are progressing"), prog
    assert _cond(lws, "UpdateInProgress") is None, "UpdateInProgress must not be set on initial creation"


@pytest.mark.requirement("LWS-STATUS-002")
def test_status_counts_follow_groups_and_generation(scenario: Scenario) -> None:
    """replicas / readyReplicas / updatedReplicas count groups, observedGeneration tracks spec edits."""
    sc, name = scenario, "cnt"
    sc.create(workloads.lws(name, replicas=3, size=2))
    sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 3, 2)), "3 groups of 2 pods Ready")
    lws = sc.wait_lws(name, sc.settled(3), "Available with replicas/ready/updated 3")
    assert lws["status"]["observedGeneration"] == lws["metadata"]["generation"] == 1, lws["status"]

    lws = sc.patch_lws(name, {"spec": {"replicas": 2}})
    assert lws["metadata"]["generation"] == 2, lws["metadata"]
    lws = sc.wait_lws(name, sc.settled(2), "observedGeneration 2, Available, replicas/ready/updated 2")
    for c in lws["status"]["conditions"]:
        assert c.get("observedGeneration") == 2, f"condition {c['type']} not refreshed to generation 2"
    leader = to_dict(sc.api, sc.apps.read_namespaced_stateful_set(name, sc.namespace))
    assert leader["status"]["replicas"] == lws["status"]["replicas"] == 2


@pytest.mark.requirement("LWS-STATUS-003")
@pytest.mark.requirement("LWS-STATUS-006")
def test_hpa_pod_selector_selects_exactly_the_leaders(scenario: Scenario, claim: Claims) -> None:
    """status.hpaPodSelector selects the leader pods only (LWS-STATUS-003, the API's promise)
    and is v0.9.0's exact string (LWS-STATUS-006)."""
    sc, name = scenario, "hpa"
    sc.create(workloads.lws(name, replicas=2, size=3))
    sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 2, 3)), "2 groups of 3 pods Ready")
    lws = sc.wait_lws(name, lambda o: (o.get("status") or {}).get("hpaPodSelector"), "hpaPodSelector set")
    selector = lws["status"]["hpaPodSelector"]
    with claim("LWS-STATUS-003"):
        assert P.names(sc.pods(selector)) == {f"{name}-0", f"{name}-1"}, f"{selector!r} selects other pods"
    with claim("LWS-STATUS-006"):
        assert selector == f"{NAME_LABEL}={name},{WORKER_INDEX}=0", selector


@pytest.mark.requirement("LWS-SCALE-001")
def test_scale_subresource_removes_highest_groups_whole(scenario: Scenario) -> None:
    """/scale reports spec/status replicas and the HPA selector; scaling down removes the highest
    indices with their worker StatefulSets and pods, leaves lower groups untouched, and scaling up
    adds whole groups back."""
    sc, name = scenario, "sc"
    sc.create(workloads.lws(name, replicas=3, size=2))
    before = sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 3, 2)), "3 groups of 2 pods Ready")
    lws = sc.wait_lws(name, sc.settled(3), "Available with 3 groups")

    scale = _scale(sc, name)
    assert scale["spec"]["replicas"] == 3 and scale["status"]["replicas"] == 3, scale
    assert scale["status"]["selector"] == lws["status"]["hpaPodSelector"], (scale["status"], lws["status"])

    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in before}
    _scale(sc, name, 1)
    kept = sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 1, 2)), f"only group 0 ({name}-0, {name}-0-1)")
    for p in kept:
        assert p["metadata"]["uid"] == uids[p["metadata"]["name"]], f"{p['metadata']['name']} was recreated"
    sc.wait_statefulsets(_sts_names(sc, {name, f"{name}-0"}), f"StatefulSets {name}, {name}-0 only")
    sc.wait_lws(name, sc.settled(1), "Available with 1 group")
    assert _scale(sc, name)["status"]["replicas"] == 1

    _scale(sc, name, 2)
    sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 2, 2)), "groups 0 and 1 Ready")
    sc.wait_statefulsets(_sts_names(sc, {name, f"{name}-0", f"{name}-1"}), "leader + 2 worker StatefulSets")
    sc.wait_lws(name, sc.settled(2), "Available with 2 groups")


@pytest.mark.requirement("LWS-SCALE-002")
def test_scale_to_zero_and_back(scenario: Scenario) -> None:
    """replicas 0 is Available at once with nothing running; 0 -> 2 -> 0 adds and removes whole groups."""
    sc, name = scenario, "zero"
    sc.create(workloads.lws(name, replicas=0, size=2))
    lws = sc.wait_lws(name, sc.settled(0), "Available with replicas 0")
    assert _cond(lws, "Available") and sc.pods() == [], "replicas 0 must run no pods"

    _scale(sc, name, 2)
    sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 2, 2)), "2 groups of 2 pods Ready")
    sc.wait_lws(name, sc.settled(2), "Available with 2 groups")

    _scale(sc, name, 0)
    sc.wait_gone(sc.core.list_namespaced_pod, "no pods", namespace=sc.namespace)
    sc.wait_statefulsets(_sts_names(sc, {name}), f"only the leader StatefulSet {name}")
    sc.wait_lws(name, sc.settled(0), "Available with replicas 0 again")
    assert to_dict(sc.api, sc.apps.read_namespaced_stateful_set(name, sc.namespace))["spec"]["replicas"] == 0


def _set_ready(sc: Scenario, pod_name: str, ready: bool) -> None:
    """What a kubelet writes when a readiness probe starts failing (or passes again): the Ready and
    ContainersReady conditions and every container's `ready`, on the status subresource; the phase
    stays Running and no container restarts, so no restart policy reacts. kwok's pod-ready stage
    only readies Pending pods, so it leaves the change alone."""
    pod = to_dict(sc.api, sc.core.read_namespaced_pod(pod_name, sc.namespace))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    value = "True" if ready else "False"
    conds = [{"type": t, "status": value, "lastTransitionTime": now} for t in ("Ready", "ContainersReady")]
    statuses = [{**c, "ready": ready} for c in pod["status"].get("containerStatuses") or []]
    assert pod["status"].get("phase") == "Running" and statuses, f"{pod_name} is not a running pod: {pod['status']}"
    body = {"status": {"conditions": conds, "containerStatuses": statuses}}
    sc.core.patch_namespaced_pod_status(pod_name, sc.namespace, body)


def _only_unready(expected: set[str], unready: str, uids: dict[str, str]) -> Any:
    """Predicate: the same pods as before (UIDs), all Ready but `unready`, which is Running and not Ready."""

    def check(pods: list[Obj]) -> list[Obj] | None:
        live = P.live(pods)
        if P.names(pods) != expected or any(p["metadata"]["uid"] != uids[p["metadata"]["name"]] for p in live):
            return None
        ok = all(P.pod_ready(p) != (p["metadata"]["name"] == unready) for p in live)
        target = next(p for p in live if p["metadata"]["name"] == unready)
        return live if ok and target["status"].get("phase") == "Running" else None

    return check


@pytest.mark.requirement("LWS-STATUS-004")
@pytest.mark.requirement("LWS-STATUS-005")
@pytest.mark.parametrize("unready", ["worker", "leader"])
def test_partly_ready_group_is_not_a_ready_group(scenario: Scenario, claim: Claims, unready: str) -> None:
    """Group 1 of 2 made partly Ready: its leader Ready and one worker not ("worker"), or its
    workers Ready and the leader not ("leader"). readyReplicas must not count it and the LWS must
    be Progressing (LWS-STATUS-004); v0.9.0 also says Available=False with its reason, recreating
    nothing (LWS-STATUS-005), all watched for a window while the group stays partly Ready; once
    the pod is Ready again the LWS counts 2 ready groups and is Available."""
    sc, name, size = scenario, "pr", 3
    sc.require_simulated_kubelet("turns a Ready pod not Ready")
    expected = P.expected_pod_names(name, 2, size)
    sc.create(workloads.lws(name, replicas=2, size=size))
    pods = sc.wait_pods(P.ready_exactly(expected), "2 groups of 3 pods Ready")
    sc.wait_lws(name, sc.settled(2), "Available with 2 ready groups")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    target = f"{name}-1" if unready == "leader" else f"{name}-1-2"
    _set_ready(sc, target, False)
    sc.wait_pods(_only_unready(expected, target, uids), f"the same pods, all Ready but {target}")
    with claim("LWS-STATUS-004"):
        sc.wait_lws(name, L.one_ready_group_of_two, "readyReplicas 1 of 2, Progressing=True")
        violation = L.watched(sc, name, L.one_ready_group_of_two)
        assert violation is None, f"with {target} not Ready: {violation}"
    with claim("LWS-STATUS-005"):
        lws = sc.wait_lws(name, L.not_available, "Available=False")
        prog = _cond(lws, "Progressing")
        assert prog and (prog["reason"], prog["message"]) == ("GroupsProgressing", "Replicas are progressing"), prog
        violation = L.watched(sc, name, L.not_available)
        assert violation is None, f"with {target} not Ready: {violation}"
        sc.wait_pods(_only_unready(expected, target, uids), f"{target} still the only unready pod (nothing recreated)")

    _set_ready(sc, target, True)
    sc.wait_pods(P.ready_exactly(expected), "every pod Ready again")
    with claim("LWS-STATUS-004"):
        sc.wait_lws(name, lambda o: (o.get("status") or {}).get("readyReplicas") == 2, "readyReplicas 2 again")
    with claim("LWS-STATUS-005"):
        assert _available(sc.wait_lws(name, sc.settled(2), "Available again with 2 ready groups"))
