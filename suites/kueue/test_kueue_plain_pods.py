"""Kueue's pod integration for plain Pods and Pod groups ("Run Plain Pods", KEP-976).

Why: the LWS integration admits every LWS group through the same pod webhook, gate and pod-group
Workloads; plain Pods and Pod groups are that machinery's own documented use, and its regressions
(the gate not set, a group's Workload never built, a replacement pod dropped) show there
first. Needs a Kueue whose configuration lists the `pod` integration, as Kueue's release
configuration does (`Scenario.require_kueue_plain_pods`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lws_conformance.testing import Claims, Scenario, artifact_dir, history, record, saved, to_dict, workloads
from lws_conformance.testing import predicates as P

from . import kueue_helpers as K

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
ROOM_FOR_ONE = {"cpu": "150m", "memory": "1Gi"}  # the template's pod requests 100m: one fits, two do not
ROOMY = {"cpu": "2", "memory": "2Gi"}
GROUP = "sample-group"  # the page's example name; one group per test namespace
OWNER_WARNING = "pod owner is managed by kueue"  # the pod webhook's warning (pod_webhook.go L267)


def _create(sc: Scenario, pod: Obj) -> Obj:
    return _answered(sc, pod)[0]


def _answered(sc: Scenario, pod: Obj, dry_run: bool = False) -> tuple[Obj, str]:
    """The Pod as stored (or as it would be, `dry_run`) and the Warning header of the answer."""
    opts = {"dry_run": "All"} if dry_run else {}
    out, _status, headers = sc.core.create_namespaced_pod_with_http_info(sc.namespace, pod, **opts)
    return to_dict(sc.api, out), str((headers or {}).get("Warning") or "")


def _owned_by_a_job(sc: Scenario) -> Obj:
    """A Pod carrying Kueue's managed label whose controller is a Job: the one case Kueue's pod
    webhook warns about. The Job names a LocalQueue that does not exist, so Kueue builds its
    Workload and never admits it (the Job stays suspended, no pod of its own); that Workload is
    awaited, since the webhook looks the owner up in Kueue's cache and refuses a Pod whose owner it
    has not seen yet."""
    spec = workloads.plain_pod("owned", queue=K.QUEUE)["spec"]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "owner", "labels": {workloads.QUEUE_LABEL: "absent"}},
        "spec": {"suspend": True, "template": {"spec": spec}},
    }
    uid = client.BatchV1Api(sc.api).create_namespaced_job(sc.namespace, job).metadata.uid
    K.wait_workloads(sc, uid, lambda wls: wls or None, "the Workload Kueue builds for Job owner (Kueue has seen it)")
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": uid, "controller": True}
    meta = {"name": "owned", "labels": {K.MANAGED: "true"}, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {**spec, "nodeSelector": workloads.NOWHERE}}


def _named(names: set[str]) -> str:
    return f"pods {sorted(names)}"


def _escaped(names: set[str]) -> Any:
    """Violation for `observe_pods`: one of `names` left the gate, was bound or ran."""
    return lambda pods: K.escaped([p for p in pods if p["metadata"]["name"] in names])


def _workload_named(name: str) -> Any:
    return lambda wls: K.by_name(wls).get(name)


def _workload_owned_by(uid: str) -> Any:
    def check(wls: list[Obj]) -> Obj | None:
        return next(
            (wl for wl in wls if any(o.get("uid") == uid for o in wl["metadata"].get("ownerReferences") or [])), None
        )

    return check


def _admitted(find: Any) -> Any:
    def check(wls: list[Obj]) -> Obj | None:
        wl = find(wls)
        return wl if wl is not None and K.admitted(wl) else None

    return check


def _count(wl: Obj) -> int:
    return sum(int(ps.get("count", 0)) for ps in wl["spec"].get("podSets") or [])


def _marked(pod: Obj) -> list[str]:
    """What the pod webhook left out of a managed Pod as stored (KEP-976's three marks)."""
    meta, spec = pod["metadata"], pod["spec"]
    out = []
    if (meta.get("labels") or {}).get(K.MANAGED) != "true":
        out.append(f"label {K.MANAGED}=true (labels {meta.get('labels')})")
    if not P.gated(pod):
        out.append(f"scheduling gate {P.ADMISSION_GATE} (gates {spec.get('schedulingGates')})")
    if K.MANAGED not in (meta.get("finalizers") or []):
        out.append(f"finalizer {K.MANAGED} (finalizers {meta.get('finalizers')})")
    return out


@pytest.mark.requirement("KUEUE-PLAINPOD-001")
@pytest.mark.requirement("KUEUE-PLAINPOD-005")
def test_pod_with_queue_name_is_gated_until_admitted(
    scenario: Scenario, unique: str, claim: Claims, tmp_path: Path
) -> None:
    """A Pod labelled with a LocalQueue whose ClusterQueue has no quota is stored managed (label,
    gate, finalizer), gets a Workload of its own and stays unscheduled over a window; once the
    quota is raised its Workload is Admitted and the Pod ungated and Ready with its flavor's
    nodeLabels (the last block; every block has room for it) in its nodeSelector, on a node of
    that block, and in the watch stream it never left the gate before the Admitted write (001).
    Kueue's answer to its creation carries no warning about a Kueue-managed owner (it has none),
    while a Pod with the managed label whose controller is a Job is answered with one (005)."""
    sc = scenario
    sc.require_kueue_plain_pods()
    nodes, key = sc.node_labels(), sc.cluster.topology.block_label
    block = max(labels[key] for labels in nodes.values() if key in labels)
    flavor = {key: block}
    K.plain_queue(sc, unique, {"cpu": "0", "memory": "0"}, node_labels=flavor)
    with record(sc.api, sc.namespace, workloads=True) as tl:
        stored, warning = _answered(sc, workloads.plain_pod("solo", queue=K.QUEUE))
        uid = stored["metadata"]["uid"]
        with claim("KUEUE-PLAINPOD-001"):
            missing = _marked(stored)
            assert not missing, f"Pod solo, created with queue-name {K.QUEUE}, was stored without: {missing}"
        owned = _owned_by_a_job(sc)
        with claim("KUEUE-PLAINPOD-005"):
            assert OWNER_WARNING not in warning, f"Pod solo (no owner) was created with the warning {warning!r}"
            _pod, owned_warning = _answered(sc, owned, dry_run=True)
            assert OWNER_WARNING in owned_warning, (
                f"Pod owned (label {K.MANAGED}=true, controller a Job) was answered with Warning {owned_warning!r}, "
                f"not one saying {OWNER_WARNING!r}"
            )
        name = ""  # the Workload's name, once one is seen
        with claim("KUEUE-PLAINPOD-001"):
            wl = sc.wait_objects("Workload", _workload_owned_by(uid), "a Workload owned by Pod solo")
            name = wl["metadata"]["name"]
        with claim("KUEUE-PLAINPOD-001"):
            escaped = sc.observe_pods(_escaped({"solo"}), K.OBSERVE_SECONDS)
            assert escaped is None, f"Pod solo ran although its ClusterQueue has no quota: {escaped}"
        K.set_quota(sc, unique, ROOMY)
        with claim("KUEUE-PLAINPOD-001"):
            sc.wait_objects("Workload", _admitted(_workload_owned_by(uid)), "the Workload owned by Pod solo Admitted")
            (pod,) = sc.wait_pods(P.ready_exactly({"solo"}), "Pod solo ungated and Ready")
            selector = pod["spec"].get("nodeSelector") or {}
            assert selector.get(key) == block, f"Pod solo runs with nodeSelector {selector}, not its flavor's {flavor}"
            node = pod["spec"].get("nodeName")
            assert nodes.get(node, {}).get(key) == block, f"Pod solo runs on {node}, outside its flavor's {flavor}"
    with claim("KUEUE-PLAINPOD-001"):
        events = saved(tl, artifact_dir(tmp_path), "plain-pod")
        wrong = history.gated_until_admitted(events, lambda s: s.get("name") == "solo", "Pod solo", name)
        assert not wrong, f"Pod solo not gated until admitted: {wrong}"


@pytest.mark.requirement("KUEUE-PLAINPOD-002")
@pytest.mark.requirement("KUEUE-PLAINPOD-004")
def test_pod_group_is_admitted_as_one_unit(scenario: Scenario, unique: str, claim: Claims, tmp_path: Path) -> None:
    """Pod group `sample-group` of 2 on a ClusterQueue with room for one pod. The first pod alone
    gets no Workload and stays held over a window (one pod would fit); with the second, one
    Workload named after the group counts both, and neither pod starts over a window; the quota
    raised, the Workload is Admitted and the group runs, no pod ungated before the Admitted write
    (watch stream) (002). Before that, the still-gated pod `second` is deleted and `third` created
    in its place: `second` is finalized and goes, `third` is kept, owns the Workload and runs with
    `first` (004)."""
    sc = scenario
    sc.require_kueue_plain_pods()
    K.plain_queue(sc, unique, ROOM_FOR_ONE)
    first, both = {"first"}, {"first", "second"}
    with record(sc.api, sc.namespace, workloads=True) as tl:
        _create(sc, workloads.plain_pod("first", queue=K.QUEUE, group=GROUP, total=2))
        with claim("KUEUE-PLAINPOD-002"):
            early = sc.observe_objects("Workload", _workload_named(GROUP), K.OBSERVE_SECONDS)
            assert early is None, f"Workload {GROUP} built from 1 of the group's 2 pods: {early}"
        with claim("KUEUE-PLAINPOD-002"):
            escaped = sc.observe_pods(_escaped(first), K.OBSERVE_SECONDS)
            assert escaped is None, f"the group's first pod ran before the group was whole: {escaped}"
        _create(sc, workloads.plain_pod("second", queue=K.QUEUE, group=GROUP, total=2))
        with claim("KUEUE-PLAINPOD-002"):
            wl = sc.wait_objects("Workload", _workload_named(GROUP), f"Workload {GROUP}, named after the pod group")
            assert _count(wl) == 2, f"Workload {GROUP} counts {_count(wl)} pods in {wl['spec'].get('podSets')}, not 2"
        with claim("KUEUE-PLAINPOD-002"):
            escaped = sc.observe_pods(_escaped(both), K.OBSERVE_SECONDS)
            assert escaped is None, f"a pod of the group ran while its ClusterQueue had room for one pod: {escaped}"
        sc.core.delete_namespaced_pod("second", sc.namespace)
        third = _create(sc, workloads.plain_pod("third", queue=K.QUEUE, group=GROUP, total=2))
        kept = {"first", "third"}
        with claim("KUEUE-PLAINPOD-004"):
            sc.wait_pods(
                lambda pods: {p["metadata"]["name"] for p in pods} == kept,
                "the deleted pod second finalized and gone, the replacement third kept beside first",
            )
            owner = sc.wait_objects(
                "Workload",
                _workload_owned_by(third["metadata"]["uid"]),
                f"the replacement pod third an owner of Workload {GROUP}",
            )
            assert owner["metadata"]["name"] == GROUP, (
                f"pod third owns Workload {owner['metadata']['name']}, not {GROUP}"
            )
        K.set_quota(sc, unique, ROOMY)
        with claim("KUEUE-PLAINPOD-002"):
            sc.wait_objects("Workload", _admitted(_workload_named(GROUP)), f"Workload {GROUP} Admitted")
        with claim("KUEUE-PLAINPOD-004"):
            sc.wait_pods(P.ready_exactly(kept), f"{_named(kept)} (the replacement among them) ungated and Ready")
    with claim("KUEUE-PLAINPOD-002"):
        events = saved(tl, artifact_dir(tmp_path), "pod-group")
        group = both | kept
        wrong = history.gated_until_admitted(events, lambda s: s.get("name") in group, f"group {GROUP}", GROUP)
        assert not wrong, f"pods of group {GROUP} not gated until admitted: {wrong}"


@pytest.mark.requirement("KUEUE-PLAINPOD-003")
def test_deleting_a_pod_groups_workload_terminates_its_pods(scenario: Scenario, unique: str, claim: Claims) -> None:
    """An admitted, running Pod group of 2: its Workload deleted, Kueue terminates both pods and
    lifts its finalizer from them, so both are gone, and the Workload's deletion completes."""
    sc = scenario
    sc.require_kueue_plain_pods()
    K.plain_queue(sc, unique, ROOMY)
    both = {"first", "second"}
    for name in sorted(both):
        _create(sc, workloads.plain_pod(name, queue=K.QUEUE, group=GROUP, total=2))
    sc.wait_objects("Workload", _admitted(_workload_named(GROUP)), f"Workload {GROUP} Admitted")
    sc.wait_pods(P.ready_exactly(both), f"{_named(both)} ungated and Ready")
    sc.custom.delete_namespaced_custom_object(
        workloads.KUEUE_GROUP, workloads.KUEUE_VERSION, sc.namespace, "workloads", GROUP
    )
    with claim("KUEUE-PLAINPOD-003"):

        def gone(pods: list[Obj]) -> bool:
            return not [p for p in pods if p["metadata"]["name"] in both]

        sc.wait_pods(gone, f"{_named(both)} terminated and gone after Workload {GROUP} was deleted")
        sc.wait_objects("Workload", lambda wls: GROUP not in K.by_name(wls), f"Workload {GROUP}'s deletion complete")
