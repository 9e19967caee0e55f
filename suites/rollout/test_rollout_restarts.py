"""Groups restarted in the middle of a rolling update, watched event by event (lws-behaviour.md §4.4).

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

from pathlib import Path
from typing import Any

import pytest
from rollout_claims import proves_invariants, verify_claims
from test_rolling_update import BUMP, LBL, REVISION, _leader_revision, _lws, _pods_at, _recorded, _set_partition

from lws_conformance.claims import Claims
from lws_conformance.k8s import predicates as P
from lws_conformance.observe import artifact_dir
from lws_conformance.scenario import Scenario

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
SHAPE_ANNOTATIONS = (LBL + "size", LBL + "subgroup-size", LBL + "subgroup-policy-type")


def _shape(sc: Scenario, group: str) -> dict[str, Any]:
    """What the revision fixes about a group, as its worker StatefulSet and pods show it."""
    sts = next(s for s in sc.statefulsets() if s["metadata"]["name"] == group)
    spec = sts["spec"]
    ann = spec["template"]["metadata"].get("annotations") or {}
    workers = sorted((p for p in P.live(sc.pods(f"{LBL}group-index={group.rsplit('-', 1)[1]}"))
                      if p["metadata"]["name"] != group), key=lambda p: str(p["metadata"]["name"]))
    return {
        "worker StatefulSet replicas": spec.get("replicas"),
        "worker StatefulSet serviceName (subdomain)": spec.get("serviceName"),
        "worker template annotations": {k: ann.get(k) for k in SHAPE_ANNOTATIONS if k in ann},
        "PVC retention policy": spec.get("persistentVolumeClaimRetentionPolicy"),
        "volumeClaimTemplates": [v["metadata"]["name"] for v in spec.get("volumeClaimTemplates") or []],
        "worker pods (name, size, subgroup-index)": [
            (p["metadata"]["name"], (p["metadata"].get("annotations") or {}).get(LBL + "size"),
             p["metadata"]["labels"].get(LBL + "subgroup-index")) for p in workers],
    }


def _rebuilt(leader: str, old_uid: str) -> Any:
    """The worker StatefulSet of a new incarnation of `leader` (owned by a leader pod other than
    `old_uid`) with all its replicas Ready: the group's rebuild is done, whatever its shape."""

    def check(items: list[Obj]) -> Obj | None:
        for s in items:
            owners = [r for r in s["metadata"].get("ownerReferences") or [] if r.get("kind") == "Pod"]
            st = s.get("status") or {}
            if (s["metadata"]["name"] == leader and owners and owners[0]["uid"] != old_uid
                    and not s["metadata"].get("deletionTimestamp")
                    and st.get("readyReplicas", 0) == s["spec"]["replicas"] == st.get("replicas")):
                return s
        return None

    return check


@proves_invariants
@pytest.mark.requirement("ROLL-KEEP-001")
def test_group_restarted_below_partition_keeps_its_revision(scenario: Scenario, claim: Claims, tmp_path: Path,
                                                            request: pytest.FixtureRequest) -> None:
    """R=2, size 4, subGroupSize 2 (LeaderWorker), Shared subdomain, no PVC retention policy;
    partition 1, then one update changes the worker template, size 4 -> 3, the subgroup policy
    type (LeaderExcluded), the subdomain policy (UniquePerReplica) and the PVC retention policy.
    Group 1 updates, group 0 is held; group 0's leader is deleted; the rebuilt group 0 must have
    exactly its old shape; lowering the partition then finishes the update."""
    sc, name = scenario, "rk"
    obj = _lws(name, 2, 4, policy=None)
    obj["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}
    with _recorded(sc) as tl:
        sc.create(obj)
        sc.wait_lws(name, sc.settled(2), "Available with 2 groups of 4")
        old = _leader_revision(sc, name)
        before = _shape(sc, f"{name}-0")
        _set_partition(sc, name, 1)
        sc.patch_lws(name, {"spec": {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}, "leaderWorkerTemplate": {
            "size": 3, "subGroupPolicy": {"subGroupSize": 2, "subGroupPolicyType": "LeaderExcluded"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"},
            "workerTemplate": {"metadata": {"annotations": {BUMP: "1"}}}}}})
        sc.wait_lws(name, sc.settled(2, updated=1), "Available, updatedReplicas 1 (partition 1 holding)")
        new = _leader_revision(sc, name)
        assert new != old, "the update did not create a new revision"
        leader = sc.core.read_namespaced_pod(f"{name}-0", sc.namespace)
        sc.core.delete_namespaced_pod(f"{name}-0", sc.namespace)
        sc.wait_statefulsets(_rebuilt(f"{name}-0", leader.metadata.uid), f"group 0 rebuilt after deleting {name}-0")
        after = _shape(sc, f"{name}-0")
        with claim("ROLL-KEEP-001"):
            revision = sc.core.read_namespaced_pod(f"{name}-0", sc.namespace).metadata.labels[REVISION]
            assert revision == old, f"the rebuilt leader {name}-0 runs revision {revision}, not the old {old}"
            diff = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
            assert not diff, (f"group 0 rebuilt below the partition differs from its old revision (lws#280, PR #963), "
                              f"(old, rebuilt): {diff}")
        _set_partition(sc, name, 0)
        sc.wait_lws(name, sc.settled(2), "update done after partition 0")
        sc.wait_pods(_pods_at(name, 2, 3, lambda g: new), f"2 groups of 3 at {new}")
    verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
