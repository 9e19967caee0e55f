"""Self-healing, revisions and deletion (LWS pkg/controllers, pkg/utils/revision/revision_utils.go@v0.9.0).

Why: operators and chaos delete things by hand; LWS must rebuild what it owns (leader
StatefulSet, shared Service, worker StatefulSets), keep exactly one ControllerRevision at rest,
and deleting an LWS, with either propagation policy, must leave nothing running or orphaned.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Scenario,
    to_dict,
    workloads,
)
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PREFIX = "leaderworkerset.sigs.k8s.io/"


def _up(sc: Scenario, name: str, replicas: int, size: int, restart: str | None = None) -> list[Obj]:
    obj = workloads.lws(name, replicas=replicas, size=size)
    if restart:
        obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = restart
    sc.create(obj)
    pods: list[Obj] = sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, replicas, size)), "all pods Ready")
    return pods


def _named(objs: list[Obj], name: str) -> Obj | None:
    for o in objs:
        if o["metadata"]["name"] == name and not o["metadata"].get("deletionTimestamp"):
            return o
    return None


def _replaced(name: str, old_uid: str) -> Any:
    """Predicate: a live object `name` exists with a UID other than `old_uid`."""

    def check(objs: list[Obj]) -> Obj | None:
        o = _named(objs, name)
        return o if o and o["metadata"]["uid"] != old_uid else None

    return check


def _sts(sc: Scenario, name: str) -> Obj:
    return to_dict(sc.api, sc.apps.read_namespaced_stateful_set(name, sc.namespace))


def _owner_kinds(obj: Obj) -> set[str]:
    return {r["kind"] for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")}


def _owner_uids(obj: Obj) -> set[str]:
    return {r["uid"] for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")}


@pytest.mark.requirement("LWS-HEAL-001")
def test_deleted_leader_statefulset_is_recreated(scenario: Scenario) -> None:
    """Deleting the leader StatefulSet: LWS creates a new one and every group comes back under it."""
    sc, name = scenario, "hl"
    _up(sc, name, replicas=2, size=2)
    lws_uid = sc.lws(name)["metadata"]["uid"]
    old = _sts(sc, name)["metadata"]["uid"]

    sc.apps.delete_namespaced_stateful_set(name, sc.namespace)
    new = sc.wait_statefulsets(_replaced(name, old), f"leader StatefulSet {name} recreated with a new UID")
    assert _owner_uids(new) == {lws_uid}, f"new leader StatefulSet not controlled by the LWS: {new['metadata']}"
    new_uid = new["metadata"]["uid"]

    def leaders_under_new_sts(pods: list[Obj]) -> list[Obj] | None:
        ready = P.ready_exactly(P.expected_pod_names(name, 2, 2))(pods)
        leaders = [p for p in ready or [] if p["metadata"]["name"] in {f"{name}-0", f"{name}-1"}]
        return ready if len(leaders) == 2 and all(_owner_uids(p) == {new_uid} for p in leaders) else None

    sc.wait_pods(leaders_under_new_sts, "both groups Ready with leaders owned by the new StatefulSet")
    sc.wait_lws(
        name,
        lambda o: P.condition(o, "Available") == "True" and (o.get("status") or {}).get("readyReplicas") == 2,
        "Available with 2 ready groups",
    )


@pytest.mark.requirement("LWS-HEAL-002")
def test_deleted_shared_service_is_recreated(scenario: Scenario) -> None:
    """Deleting the shared headless Service: LWS recreates it with the same shape and owner."""
    sc, name = scenario, "hs"
    _up(sc, name, replicas=1, size=2)
    lws_uid = sc.lws(name)["metadata"]["uid"]
    old = sc.wait_services(lambda ss: _named(ss, name), f"Service {name}")

    sc.core.delete_namespaced_service(name, sc.namespace)
    svc = sc.wait_services(_replaced(name, old["metadata"]["uid"]), f"Service {name} recreated with a new UID")
    spec = svc["spec"]
    assert spec.get("clusterIP") == "None", spec
    assert spec.get("selector") == {f"{PREFIX}name": name}, spec
    assert spec.get("publishNotReadyAddresses") is True, spec
    assert _owner_uids(svc) == {lws_uid}, svc["metadata"]


@pytest.mark.requirement("LWS-HEAL-003")
@pytest.mark.parametrize("restart", ["None", "Default"])
def test_deleted_worker_statefulset_is_recreated(scenario: Scenario, restart: str) -> None:
    """Deleting a worker StatefulSet: it comes back owned by the same leader pod, and its workers
    return.

    The requirement's "owned by the same leader pod" is promised under the restart policies that
    leave a group alone when its pods go: None, and Default (deprecated, rewritten to None by the
    webhook, so a manifest still using it must behave the same). Under RecreateGroupOnPodRestart
    and RecreateGroupAfterStart a deleted worker pod is a group-restart trigger (pod_controller.go
    handleRestartPolicy@v0.9.0), so the worker pods the garbage collector deletes may recreate the whole group with a
    new leader (v0.9.0's stale-StatefulSet check, lws#805, usually prevents it; lws#998 is the race):
    "the same leader pod" is not promised there, and the restart-policy suite covers them."""
    sc, name = scenario, "hw"
    pods = _up(sc, name, replicas=1, size=3, restart=restart)
    leader = next(p for p in pods if p["metadata"]["name"] == f"{name}-0")
    old = _sts(sc, f"{name}-0")["metadata"]["uid"]

    sc.apps.delete_namespaced_stateful_set(f"{name}-0", sc.namespace)
    sts = sc.wait_statefulsets(_replaced(f"{name}-0", old), f"worker StatefulSet {name}-0 recreated")
    assert _owner_uids(sts) == {leader["metadata"]["uid"]}, f"not owned by leader pod {name}-0: {sts['metadata']}"
    assert sts["spec"]["replicas"] == 2, sts["spec"]

    def workers_back(ps: list[Obj]) -> list[Obj] | None:
        ready = P.ready_exactly(P.expected_pod_names(name, 1, 3))(ps)
        workers = [p for p in ready or [] if p["metadata"]["name"] != f"{name}-0"]
        return ready if len(workers) == 2 and all(_owner_uids(p) == {sts["metadata"]["uid"]} for p in workers) else None

    back = sc.wait_pods(workers_back, "workers Ready under the new worker StatefulSet")
    now = next(p for p in back if p["metadata"]["name"] == f"{name}-0")
    assert now["metadata"]["uid"] == leader["metadata"]["uid"], "the leader was recreated"


@pytest.mark.requirement("LWS-DELETE-003")
def test_one_controller_revision_at_rest(scenario: Scenario) -> None:
    """At rest an LWS owns exactly one ControllerRevision, carrying its name and the leader
    StatefulSet's template-revision-hash; scaling (not a template change) adds none."""
    sc, name = scenario, "rv"
    _up(sc, name, replicas=1, size=2)
    lws = sc.lws(name)
    for replicas in (1, 2):
        if replicas != lws["spec"]["replicas"]:
            sc.patch_lws(name, {"spec": {"replicas": replicas}})
            sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, replicas, 2)), f"{replicas} groups Ready")
        # StatefulSets keep their own ControllerRevisions (owned by the StatefulSet); LWS's are
        # the ones the LWS controls.
        revs = [r for r in sc.revisions() if _owner_kinds(r) == {"LeaderWorkerSet"}]
        assert len(revs) == 1, f"replicas {replicas}: {len(revs)} revisions: {[r['metadata']['name'] for r in revs]}"
        rev = revs[0]
        leader_hash = _sts(sc, name)["metadata"]["labels"][f"{PREFIX}template-revision-hash"]
        labels = rev["metadata"].get("labels") or {}
        assert labels.get(f"{PREFIX}name") == name, labels
        assert labels.get(f"{PREFIX}template-revision-hash") == leader_hash, (labels, leader_hash)
        assert _owner_uids(rev) == {lws["metadata"]["uid"]}, rev["metadata"]


OWNED = (
    ("StatefulSets", "list_namespaced_stateful_set", "apps"),
    ("pods", "list_namespaced_pod", "core"),
    ("Services", "list_namespaced_service", "core"),
    ("ControllerRevisions", "list_namespaced_controller_revision", "apps"),
)


def _delete_lws(sc: Scenario, name: str, propagation: str) -> Obj:
    _up(sc, name, replicas=2, size=2)
    assert sc.statefulsets() and sc.services() and sc.revisions(), "precondition: the LWS owns objects"
    resp = sc.custom.delete_namespaced_custom_object(
        LWS_GROUP,
        LWS_VERSION,
        sc.namespace,
        LWS_PLURAL,
        name,
        body=client.V1DeleteOptions(propagation_policy=propagation),
    )
    sc.wait_objects_gone(
        "LeaderWorkerSet",
        f"{name} gone ({propagation} deletion completes)",
        timeout=60,
        what=f"LeaderWorkerSets in {sc.namespace}",
    )
    return to_dict(sc.api, resp)


def _left(sc: Scenario) -> dict[str, list[str]]:
    out = {}
    for what, fn, api in OWNED:
        items = getattr(sc.apps if api == "apps" else sc.core, fn)(sc.namespace).items
        if items:
            out[what] = [to_dict(sc.api, i)["metadata"]["name"] for i in items]
    return out


@pytest.mark.requirement("LWS-DELETE-001")
def test_background_deletion_leaves_nothing_behind(scenario: Scenario) -> None:
    """Background deletion: the LWS goes at once, then GC removes StatefulSets, pods, Services
    and revisions (worker StatefulSets through their leader pods)."""
    sc, name = scenario, "db"
    _delete_lws(sc, name, "Background")
    for what, fn, api in OWNED:
        list_fn = getattr(sc.apps if api == "apps" else sc.core, fn)
        sc.wait_gone(list_fn, f"no {what} left after background deletion of {name}", namespace=sc.namespace)


@pytest.mark.requirement("LWS-DELETE-002")
def test_foreground_deletion_completes_and_leaves_nothing_behind(scenario: Scenario) -> None:
    """Foreground deletion: the LWS waits (foregroundDeletion finalizer) until every dependent is
    gone, then disappears itself; so nothing is left the moment it is gone."""
    sc, name = scenario, "df"
    resp = _delete_lws(sc, name, "Foreground")
    assert "foregroundDeletion" in (resp.get("metadata", {}).get("finalizers") or []), resp.get("metadata")
    assert _left(sc) == {}, "objects outlived a foreground-deleted LWS"
