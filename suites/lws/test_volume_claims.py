"""volumeClaimTemplates and persistentVolumeClaimRetentionPolicy (KEP 622; v0.8.0+), with a real
provisioner: the local cluster's default StorageClass is served by the controller-manager's
hostPath provisioner, so claims are provisioned and bound as on any cluster with a default class.

Why: multi-host inference keeps model caches on per-host volumes; each pod must get its own claim
(StatefulSet naming <template>-<pod>), the claims must survive what the retention policy says they
survive, and nothing must be left that the policy says to delete.

One LWS, R=2, size 2, template `cache`, whenScaled Delete, whenDeleted Retain: every pod's claim
exists, is Bound and is mounted; scale-down to 1 and deletion of the LWS are then checked against
the policy. A worker StatefulSet is deleted with its group (not scaled), so on scale-down the
removed group's worker claims follow whenDeleted, not whenScaled (LWS-VOL-003 records it).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from lws_conformance.testing import Claims, Scenario, workloads
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
VCT = "cache"


def _vct_lws(name: str, replicas: int, size: int) -> Obj:
    obj = workloads.lws(name, replicas=replicas, size=size)
    lwt = obj["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate"):
        lwt[key]["spec"]["containers"][0]["volumeMounts"] = [{"name": VCT, "mountPath": "/cache"}]
    lwt["volumeClaimTemplates"] = [
        {
            "metadata": {"name": VCT},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}},
        }
    ]
    lwt["persistentVolumeClaimRetentionPolicy"] = {"whenScaled": "Delete", "whenDeleted": "Retain"}
    return obj


def _claims(names: set[str], bound: bool = True) -> Any:
    """Exactly the claims `names` (none terminating), all Bound when `bound`."""

    def check(items: list[Obj]) -> list[Obj] | None:
        live = [c for c in items if not c["metadata"].get("deletionTimestamp")]
        if {c["metadata"]["name"] for c in live} != names:
            return None
        return live if not bound or all((c.get("status") or {}).get("phase") == "Bound" for c in live) else None

    return check


def _wait_claims(sc: Scenario, names: set[str], condition: str) -> list[Obj]:
    result: list[Obj] = sc.wait_in_namespace(
        sc.core.list_namespaced_persistent_volume_claim, "PersistentVolumeClaims", _claims(names), condition, timeout=60
    )
    return result


@pytest.mark.requirement("LWS-VOL-001")
@pytest.mark.requirement("LWS-VOL-002")
@pytest.mark.requirement("LWS-VOL-003")
def test_volume_claims_per_pod_and_retention(scenario: Scenario, claim: Claims) -> None:
    sc, name, size = scenario, "vc", 2
    default = "storageclass.kubernetes.io/is-default-class"
    classes = client.StorageV1Api(sc.api).list_storage_class().items
    if not any((c.metadata.annotations or {}).get(default) == "true" for c in classes):
        pytest.skip("not-run: the cluster has no default StorageClass (no dynamic provisioner), so no claim can bind")
    sc.create(_vct_lws(name, 2, size))
    sc.wait_lws(name, sc.settled(2), "Available with 2 groups (claims bound)", timeout=90)
    pods = P.live(sc.pods(f"leaderworkerset.sigs.k8s.io/name={name}"))
    every = {f"{VCT}-{p['metadata']['name']}" for p in pods}
    with claim("LWS-VOL-001"):
        assert len(pods) == 4, [p["metadata"]["name"] for p in pods]
        _wait_claims(sc, every, f"one Bound claim {VCT}-<pod> per pod: {sorted(every)}")
        unmounted = {
            p["metadata"]["name"]: [
                v.get("persistentVolumeClaim") for v in p["spec"].get("volumes") or [] if v["name"] == VCT
            ]
            for p in pods
        }
        wrong = {n: v for n, v in unmounted.items() if v != [{"claimName": f"{VCT}-{n}"}]}
        assert not wrong, f"pod volume {VCT!r} not backed by its own claim: {wrong}"
        policy = {"whenScaled": "Delete", "whenDeleted": "Retain"}
        sts = {s["metadata"]["name"]: s["spec"] for s in sc.statefulsets()}
        bad = {
            n: (
                s.get("persistentVolumeClaimRetentionPolicy"),
                [v["metadata"]["name"] for v in s.get("volumeClaimTemplates") or []],
            )
            for n, s in sts.items()
            if s.get("persistentVolumeClaimRetentionPolicy") != policy
            or [v["metadata"]["name"] for v in s.get("volumeClaimTemplates") or []] != [VCT]
        }
        assert not bad, f"StatefulSets without the LWS's volumeClaimTemplates / retention policy: {bad}"

    sc.patch_lws(name, {"spec": {"replicas": 1}})
    sc.wait_lws(name, sc.settled(1), "Available with 1 group")
    kept = {f"{VCT}-{name}-0", f"{VCT}-{name}-0-1"}
    with claim("LWS-VOL-002"):  # whenScaled Delete: the removed group's leader claim goes
        live = sc.wait_in_namespace(
            sc.core.list_namespaced_persistent_volume_claim,
            "PersistentVolumeClaims",
            _without(f"{VCT}-{name}-1"),
            f"claim {VCT}-{name}-1 of the removed group's leader deleted (whenScaled Delete)",
        )
        assert kept <= {c["metadata"]["name"] for c in live}, f"the remaining group's claims: {live}"
    left = {
        c.metadata.name
        for c in sc.core.list_namespaced_persistent_volume_claim(sc.namespace).items
        if not c.metadata.deletion_timestamp
    }
    with claim("LWS-VOL-002"):
        assert kept <= left, f"the remaining group's claims {sorted(kept)} were not all kept: {sorted(left)}"
    with claim("LWS-VOL-003"):  # the worker StatefulSet of the removed group is deleted, not scaled
        assert f"{VCT}-{name}-1-1" in left, (
            f"the removed group's worker claim {VCT}-{name}-1-1 was deleted although whenDeleted is Retain: "
            f"{sorted(left)}"
        )

    sc.custom.delete_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", sc.namespace, "leaderworkersets", name)
    sc.wait_pods(lambda ps: None if P.live(ps) else [{"gone": True}], "every pod of the LWS gone", timeout=60)
    with claim("LWS-VOL-002"):  # whenDeleted Retain: the remaining claims stay
        _wait_claims(sc, left, f"claims {sorted(left)} retained after the LWS was deleted (whenDeleted Retain)")


def _without(claim_name: str) -> Any:
    """The live claims, once `claim_name` is gone or terminating."""

    def check(items: list[Obj]) -> list[Obj] | None:
        live = [c for c in items if not c["metadata"].get("deletionTimestamp")]
        return live if live and all(c["metadata"]["name"] != claim_name for c in live) else None

    return check
