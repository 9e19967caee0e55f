"""Groups restarted in the middle of a rolling update, watched event by event (rollingUpdateParameters@v0.9.0).

Why: a long rollout of multi-host inference groups is often held by spec.partition (canary) while
nodes are drained or spot instances reclaimed, so groups below the partition get restarted. KEP 238
stores each revision "in order to use the correct version when recreating a replica": a group
below the partition must come back whole at its old revision -- old worker template, old size, old
subgroup policy, old subdomain policy, old PVC retention policy -- never the old leader with
workers shaped by the new spec (kubernetes-sigs/lws#280; fixed on main by PR #963, in no release).

The restart here is the one an operator's drain or a reclaimed node causes: the leader pod is
deleted (restartPolicy left to its default, RecreateGroupOnPodRestart). The timeline observer
checks every invariant at every event; its group-consistency invariant (ROLL-WHOLE-001) also
catches workers created for another group size than their leader's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import Claims, Scenario, artifact_dir
from lws_conformance.testing import predicates as P

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import (
    LBL,
    NAME_LABEL,
    REVISION,
    leader_revision,
    recorded,
    release_partition,
    rollout_lws,
    set_partition,
)

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
SHAPE_ANNOTATIONS = (LBL + "size", LBL + "subgroup-size", LBL + "subgroup-policy-type")
# The worker template's own change in the update: an env var, which LWS copies into every worker
# pod as it is (the webhook only adds LWS_* variables next to it), unlike an annotation that the
# size/subgroup shape above would not show.
TEMPLATE_ENV = "LWSC_WORKER_TEMPLATE"


def _worker_containers(sc: Scenario, name: str, value: str) -> list[Obj]:
    """The worker template's containers with TEMPLATE_ENV=`value` (sent whole: a merge patch
    replaces the list)."""
    containers = copy.deepcopy(sc.lws(name)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"])
    for c in containers:
        c["env"] = [e for e in c.get("env") or [] if e.get("name") != TEMPLATE_ENV] + [
            {"name": TEMPLATE_ENV, "value": value}
        ]
    return containers


def _revision_worker_template(sc: Scenario, name: str, revision: str) -> Obj:
    """The worker template stored in the LWS's ControllerRevision with hash `revision` (KEP 238:
    the state "to use ... when recreating a replica"), read from the API."""
    found = [
        o
        for o in sc.apps.list_namespaced_controller_revision(
            sc.namespace, label_selector=f"{NAME_LABEL}={name},{REVISION}={revision}"
        ).items
        if any(r.kind == "LeaderWorkerSet" and r.name == name for r in o.metadata.owner_references or [])
    ]
    assert len(found) == 1, f"{len(found)} ControllerRevisions of LWS {name} with hash {revision}"
    return dict(found[0].data["spec"]["leaderWorkerTemplate"]["workerTemplate"])


def _containers(template: Obj) -> dict[str, tuple[str, dict[str, str | None]]]:
    """container name -> (image, env name -> value) of a pod template or pod spec's containers."""
    spec = template.get("spec") or {}
    return {
        str(c["name"]): (str(c.get("image")), {str(e["name"]): e.get("value") for e in c.get("env") or []})
        for c in spec.get("containers") or []
    }


def _template_diff(want: Obj, sts: Obj, pods: list[Obj]) -> dict[str, Any]:
    """Where the worker StatefulSet's template and the worker pods differ from the revision's
    worker template `want`: each container's image and the env vars the revision sets (LWS adds
    its own LWS_* vars to the pods, so only the revision's names are compared)."""
    diff: dict[str, Any] = {}
    wanted = _containers(want)
    for where, got in [
        (f"StatefulSet/{sts['metadata']['name']}", _containers(sts["spec"]["template"])),
        *((f"Pod/{p['metadata']['name']}", _containers(p)) for p in pods),
    ]:
        for cname, (image, env) in wanted.items():
            have_image, have_env = got.get(cname, (None, {}))
            seen = (have_image, {k: have_env.get(k) for k in env})
            if seen != (image, env):
                diff[f"{where} container {cname}"] = ((image, env), seen)
    return diff


def _group(sc: Scenario, group: str) -> tuple[Obj, list[Obj]]:
    """A group's worker StatefulSet and its live worker pods (by name)."""
    sts = next(s for s in sc.statefulsets() if s["metadata"]["name"] == group)
    workers = sorted(
        (p for p in P.live(sc.pods(f"{LBL}group-index={group.rsplit('-', 1)[1]}")) if p["metadata"]["name"] != group),
        key=lambda p: str(p["metadata"]["name"]),
    )
    return sts, workers


def _shape(sts: Obj, workers: list[Obj]) -> dict[str, Any]:
    """What the revision fixes about a group, as its worker StatefulSet and pods show it."""
    spec = sts["spec"]
    ann = spec["template"]["metadata"].get("annotations") or {}
    return {
        "worker StatefulSet replicas": spec.get("replicas"),
        "worker StatefulSet serviceName (subdomain)": spec.get("serviceName"),
        "worker template annotations": {k: ann.get(k) for k in SHAPE_ANNOTATIONS if k in ann},
        "PVC retention policy": spec.get("persistentVolumeClaimRetentionPolicy"),
        "volumeClaimTemplates": [v["metadata"]["name"] for v in spec.get("volumeClaimTemplates") or []],
        "worker pods (name, size, subgroup-index)": [
            (
                p["metadata"]["name"],
                (p["metadata"].get("annotations") or {}).get(LBL + "size"),
                p["metadata"]["labels"].get(LBL + "subgroup-index"),
            )
            for p in workers
        ],
    }


def _rebuilt(leader: str, old_uid: str) -> Any:
    """The worker StatefulSet of a new incarnation of `leader` (owned by a leader pod other than
    `old_uid`) with all its replicas Ready: the group's rebuild is done, whatever its shape."""

    def check(items: list[Obj]) -> Obj | None:
        for s in items:
            owners = [r for r in s["metadata"].get("ownerReferences") or [] if r.get("kind") == "Pod"]
            st = s.get("status") or {}
            if (
                s["metadata"]["name"] == leader
                and owners
                and owners[0]["uid"] != old_uid
                and not s["metadata"].get("deletionTimestamp")
                and st.get("readyReplicas", 0) == s["spec"]["replicas"] == st.get("replicas")
            ):
                return s
        return None

    return check


@proves_invariants
@pytest.mark.requirement("ROLL-KEEP-001")
def test_group_restarted_below_partition_keeps_its_revision(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=2, size 4, subGroupSize 2 (LeaderWorker), Shared subdomain, no PVC retention policy;
    partition 1, then one update changes the worker template, size 4 -> 3, the subgroup policy
    type (LeaderExcluded), the subdomain policy (UniquePerReplica) and the PVC retention policy.
    Group 1 updates, group 0 is held; group 0's leader is deleted; the rebuilt group 0 must have
    exactly its old shape, and its worker StatefulSet and pods the worker template of the old
    ControllerRevision (an env var the update changes, old -> new); lowering the partition then
    finishes the update."""
    sc, name = scenario, "rk"
    obj = rollout_lws(name, 2, 4, policy=None)
    obj["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}
    for c in obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]:
        c["env"] = [{"name": TEMPLATE_ENV, "value": "old"}]
    with recorded(sc) as tl:
        sc.create(obj)
        sc.wait_lws(name, sc.settled(2), "Available with 2 groups of 4")
        old = leader_revision(sc, name)
        before = _shape(*_group(sc, f"{name}-0"))
        set_partition(sc, name, 1)
        sc.patch_lws(
            name,
            {
                "spec": {
                    "networkConfig": {"subdomainPolicy": "UniquePerReplica"},
                    "leaderWorkerTemplate": {
                        "size": 3,
                        "subGroupPolicy": {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"},
                        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"},
                        "workerTemplate": {"spec": {"containers": _worker_containers(sc, name, "new")}},
                    },
                }
            },
        )
        sc.wait_lws(name, sc.settled(2, updated=1), "Available, updatedReplicas 1 (partition 1 holding)")
        new = leader_revision(sc, name)
        assert new != old, "the update did not create a new revision"
        leader = sc.core.read_namespaced_pod(f"{name}-0", sc.namespace)
        sc.core.delete_namespaced_pod(f"{name}-0", sc.namespace)
        sc.wait_statefulsets(_rebuilt(f"{name}-0", leader.metadata.uid), f"group 0 rebuilt after deleting {name}-0")
        sts, workers = _group(sc, f"{name}-0")
        after = _shape(sts, workers)
        with claim("ROLL-KEEP-001"):
            revision = sc.core.read_namespaced_pod(f"{name}-0", sc.namespace).metadata.labels[REVISION]
            assert revision == old, f"the rebuilt leader {name}-0 runs revision {revision}, not the old {old}"
        with claim("ROLL-KEEP-001"):
            # Against the old ControllerRevision itself, whose worker template must be the one the
            # LWS was created with (and differ from the new revision's, or nothing is compared).
            want, changed = _revision_worker_template(sc, name, old), _revision_worker_template(sc, name, new)
            stored = {c: env.get(TEMPLATE_ENV) for c, (_, env) in _containers(want).items()}
            updated = {c: env.get(TEMPLATE_ENV) for c, (_, env) in _containers(changed).items()}
            assert stored == {"worker": "old"} and updated == {"worker": "new"}, (
                f"revisions' worker templates: {TEMPLATE_ENV} {stored} in {old}, {updated} in {new}"
            )
            wrong = _template_diff(want, sts, workers)
            assert not wrong, (
                f"group 0 rebuilt below the partition runs another worker template than its old "
                f"revision {old} (lws#280), (old revision, rebuilt) (image, env): {wrong}"
            )
        with claim("ROLL-KEEP-001"):
            diff = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
            assert not diff, (
                f"group 0 rebuilt below the partition differs from its old revision (lws#280, PR #963), "
                f"(old, rebuilt): {diff}"
            )
        release_partition(sc, name, 2, 3, new, "update done after partition 0", f"2 groups of 3 at {new}")
    verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
