"""Self-healing, revisions and deletion (LWS pkg/controllers, pkg/utils/revision/revision_utils.go@v0.9.0).

Why: operators and chaos delete things by hand; LWS must rebuild what it owns (leader
StatefulSet, shared Service, worker StatefulSets), keep exactly one ControllerRevision at rest,
and deleting an LWS, with either propagation policy, must leave nothing running or orphaned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lws_conformance.testing import (
    LWS_GROUP,
    LWS_PLURAL,
    LWS_VERSION,
    Event,
    Failures,
    InfraError,
    Scenario,
    artifact_dir,
    record,
    saved,
    to_dict,
    workloads,
)
from lws_conformance.testing import predicates as P

from ..rollout.rollout_support import reconcile_window

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


# A finalizer of the test's own: it keeps the predecessor's leader StatefulSet Terminating, as a
# third party's finalizer (a backup or GitOps tool) would.
HOLD = "lws-conformance.test/hold"
SMP = "application/strategic-merge-patch+json"
TEMPLATE_MARK = "lwsc.x-k8s.io/template"
REVISION = f"{PREFIX}template-revision-hash"
# How long (plain seconds, scaled by the waits) the predecessor's StatefulSet stays held after the
# new LWS exists: two of the 5 s requeues with which LWS waits for it (RequeueAfter in
# leaderworkerset_controller.go@v0.9.0 L131-L133), each of which must wait again. A controller
# that does not wait writes on its first reconcile of the new LWS, well under a second here
# (timeouts.reconcile_window_seconds).
HELD_SECONDS = 12.0


def _marked(name: str, mark: str) -> Obj:
    """An LWS of 2 groups of 2 whose leader and worker templates carry annotation TEMPLATE_MARK=`mark`:
    two marks, two templates (and two template-revision-hashes)."""
    obj = workloads.lws(name, replicas=2, size=2)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        lwt[key].setdefault("metadata", {}).setdefault("annotations", {})[TEMPLATE_MARK] = mark
    return obj


def _hold(sc: Scenario, name: str) -> None:
    sc.apps.patch_namespaced_stateful_set(name, sc.namespace, {"metadata": {"finalizers": [HOLD]}}, _content_type=SMP)


def _release(sc: Scenario, name: str) -> None:
    """Drop HOLD from StatefulSet `name` (a no-op on one without it; gone is fine)."""
    try:
        sc.apps.patch_namespaced_stateful_set(
            name, sc.namespace, {"metadata": {"$deleteFromPrimitiveList/finalizers": [HOLD]}}, _content_type=SMP
        )
    except ApiException as exc:
        if exc.status != 404:
            raise


def _with_uid(uid: str) -> Any:
    def check(objs: list[Obj]) -> Obj | None:
        return next((o for o in objs if o["metadata"]["uid"] == uid), None)

    return check


def _terminating(uid: str) -> Any:
    def check(objs: list[Obj]) -> Obj | None:
        o = _with_uid(uid)(objs)
        return o if o and o["metadata"].get("deletionTimestamp") else None

    return check


def _still_held(sc: Scenario, name: str, uid: str, seconds: float) -> None:
    """Watch StatefulSet `name` (`uid`) stay Terminating on HOLD for `seconds` (scaled); else the
    test's precondition is lost: InfraError."""
    lost = sc.observe_objects(
        "StatefulSet",
        lambda ss: None if _terminating(uid)(ss) else f"leader StatefulSet {name} {uid} no longer held",
        seconds,
    )
    if lost:
        raise InfraError(f"the test's precondition did not hold (not an LWS verdict): {lost}")


def _counted(status: Obj) -> bool:
    """Does an LWS status (a timeline snapshot's) count any group, or say Available?"""
    counts = (status.get("replicas"), status.get("readyReplicas"), status.get("updatedReplicas"))
    return any(counts) or (status.get("conditions") or {}).get("Available") == "True"


def _successor_violations(events: list[Event], name: str, old: Obj, new_uid: str, new_key: str) -> list[str]:
    """What the recording shows LWS `name` (UID `new_uid`) doing to, or with, its predecessor's
    Terminating leader StatefulSet (`old`: its uid, its generation once Terminating, its controller
    owner's uid and its revision key), and which ControllerRevisions it controlled; one message per
    broken clause."""
    gone = next(
        (
            i
            for i, e in enumerate(events)
            if e.kind == "StatefulSet" and e.type == "DELETED" and e.obj.get("uid") == old["uid"]
        ),
        None,
    )
    if gone is None:
        raise InfraError(f"the recording never saw the predecessor's leader StatefulSet {name} ({old['uid']}) deleted")
    out: list[str] = []
    status = next(
        (
            e.obj["status"]
            for e in events[:gone]
            if e.kind == "LeaderWorkerSet" and e.obj.get("uid") == new_uid and _counted(e.obj.get("status") or {})
        ),
        None,
    )
    if status is not None:
        out.append(
            f"while its predecessor's leader StatefulSet {name} was Terminating, the new LWS {name} counted groups: "
            f"status replicas {status.get('replicas')}, readyReplicas {status.get('readyReplicas')}, "
            f"updatedReplicas {status.get('updatedReplicas')}, conditions {status.get('conditions')}"
        )
    for e in events:
        if e.kind == "StatefulSet" and e.obj.get("uid") == old["uid"] and e.obj.get("deleting"):
            owner, generation = str(e.obj.get("owner", "")), e.obj.get("generation")
            if not owner.endswith("/" + old["owner"]) or generation != old["generation"]:
                out.append(
                    f"the predecessor's Terminating leader StatefulSet {name} was taken over: controller owner "
                    f"{owner or 'none'} (the predecessor: {old['owner']}, the new LWS: {new_uid}), generation "
                    f"{generation} (was {old['generation']})"
                )
                break
    mine = f"LeaderWorkerSet/{name}/{new_uid}"
    revisions = [
        (i, e)
        for i, e in enumerate(events)
        if e.kind == "ControllerRevision" and e.type == "ADDED" and e.obj.get("owner") == mine
    ]
    early = [e.obj["name"] for i, e in revisions if i < gone]
    if early:
        out.append(
            f"the new LWS {name} created ControllerRevision {', '.join(early)} while its predecessor's leader "
            f"StatefulSet was Terminating"
        )
    wrong = sorted(
        {
            f"{e.obj['name']} ({(e.obj.get('labels') or {}).get(REVISION)})"
            for _, e in revisions
            if (e.obj.get("labels") or {}).get(REVISION) != new_key
        }
    )
    if wrong:
        out.append(
            f"the new LWS {name} controlled ControllerRevision {', '.join(wrong)}, not of its own template "
            f"(its pods: {new_key}; its predecessor's: {old['key']})"
        )
    return out


@pytest.mark.requirement("LWS-DELETE-004")
def test_recreated_lws_waits_for_its_predecessors_terminating_statefulset(
    scenario: Scenario, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """LWS rc is deleted (background) while a finalizer of the test's own holds its leader
    StatefulSet Terminating, and created again, same name, another template. While the old
    StatefulSet is held, the new LWS counts none of the old groups, leaves that StatefulSet as it
    is and creates no ControllerRevision; once it is gone, the new LWS's groups, its
    ControllerRevision and its pods' revision label are all of its own template (lws#732)."""
    sc, name = scenario, "rc"
    sc.create(_marked(name, "first"))
    sc.wait_pods(P.ready_exactly(P.expected_pod_names(name, 2, 2)), "all pods Ready")
    old_lws_uid = sc.lws(name)["metadata"]["uid"]
    sts = _sts(sc, name)
    old = {"uid": sts["metadata"]["uid"], "owner": old_lws_uid, "key": sts["metadata"]["labels"][REVISION]}
    try:
        _hold(sc, name)
        with record(sc.api, sc.namespace, workloads=False) as tl:
            sc.custom.delete_namespaced_custom_object(
                LWS_GROUP,
                LWS_VERSION,
                sc.namespace,
                LWS_PLURAL,
                name,
                body=client.V1DeleteOptions(propagation_policy="Background"),
            )
            sc.wait_objects_gone(
                "LeaderWorkerSet",
                f"{name} deleted",
                what=f"LeaderWorkerSets in {sc.namespace}",
                field_selector=f"metadata.name={name}",
            )
            held = sc.wait_statefulsets(
                _terminating(old["uid"]), f"leader StatefulSet {name} Terminating, held by {HOLD}"
            )
            # (the API server bumps the generation when it sets the deletionTimestamp)
            old["generation"] = held["metadata"]["generation"]
            # The garbage collector's work on the predecessor done: its Service and ControllerRevision gone.
            sc.wait_objects_gone(
                "Service", f"the predecessor's Service {name} deleted", field_selector=f"metadata.name={name}"
            )
            sc.wait_objects(
                "ControllerRevision",
                lambda rs: not [r for r in rs if old_lws_uid in _owner_uids(r)],
                "the predecessor's ControllerRevisions deleted",
            )
            # LWS reads the StatefulSet from its informer's cache: one reconcile window for the
            # cache to have the deletion too, else even a controller that waits would find a live
            # StatefulSet and apply it (the same symptoms, no verdict on LWS).
            _still_held(sc, name, old["uid"], reconcile_window(request.config))
            new_uid = sc.create(_marked(name, "second"))["metadata"]["uid"]
            _still_held(sc, name, old["uid"], HELD_SECONDS)
            _release(sc, name)
            sc.wait_statefulsets(lambda ss: not _with_uid(old["uid"])(ss), f"the predecessor's StatefulSet {name} gone")

            def own_groups(pods: list[Obj]) -> list[Obj] | None:
                ready = P.ready_exactly(P.expected_pod_names(name, 2, 2))(pods)
                marks = {(p["metadata"].get("annotations") or {}).get(TEMPLATE_MARK) for p in ready or []}
                return ready if ready and marks == {"second"} else None

            pods = sc.wait_pods(own_groups, "2 groups of the new template Ready", timeout=120)
            sc.wait_lws(
                name,
                lambda o: o["metadata"]["uid"] == new_uid and sc.settled(2)(o),
                "the new LWS settled: Available, 2 groups",
            )
    finally:
        _release(sc, name)
    events = saved(tl, artifact_dir(tmp_path), name, lws=name)
    keys = {p["metadata"]["labels"].get(REVISION) for p in pods}
    failures = []
    if len(keys) != 1 or keys == {old["key"]}:
        failures.append(
            f"the new LWS {name}'s pods carry template-revision-hash {sorted(map(str, keys))} "
            f"(its predecessor's: {old['key']})"
        )
    new_key = str(next(iter(keys)))
    failures += _successor_violations(events, name, old, new_uid, new_key)
    if failures:
        raise Failures(failures)
