"""Start-up waits until the LWS and Kueue CRDs are Established *and* served by discovery
(`lws_conformance.install.crds`): Kueue exited with "no matches for kind" when it started in
between (two private clusters starting at once on 2 cores)."""

from __future__ import annotations

from typing import Any

from lws_conformance.install import crds as C

Obj = dict[str, Any]


def crd(group: str, plural: str, versions: dict[str, bool], established: bool | None = True) -> Obj:
    obj: Obj = {
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": plural},
            "versions": [{"name": v, "served": s} for v, s in versions.items()],
        },
    }
    if established is not None:
        obj["status"] = {"conditions": [{"type": "Established", "status": "True" if established else "False"}]}
    return obj


WL = crd("kueue.x-k8s.io", "workloads", {"v1beta1": True, "v1beta2": True, "v1alpha1": False})
CQ = crd("kueue.x-k8s.io", "clusterqueues", {"v1beta2": True})
LWS = crd("leaderworkerset.x-k8s.io", "leaderworkersets", {"v1": True})
EXPECTED = C.served_resources([WL, CQ, LWS])


def aggregated(served: dict[str, set[str]], stale: str = "") -> Obj:
    groups: dict[str, list[Obj]] = {}
    for gv, plurals in served.items():
        group, version = gv.split("/")
        groups.setdefault(group, []).append(
            {
                "version": version,
                "resources": [{"resource": p} for p in sorted(plurals)],
                "freshness": "Stale" if gv == stale else "Current",
            }
        )
    items = [{"metadata": {"name": g}, "versions": vs} for g, vs in groups.items()]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": items}


def per_version(served: dict[str, set[str]]) -> dict[str, Obj | None]:
    out: dict[str, Obj | None] = {gv: None for gv in EXPECTED}
    for gv, plurals in served.items():
        out[gv] = {"kind": "APIResourceList", "groupVersion": gv, "resources": [{"name": p} for p in plurals]}
        out[gv]["resources"].append({"name": f"{sorted(plurals)[0]}/status"})
    return out


def test_served_resources_only_for_served_versions() -> None:
    want = {
        "kueue.x-k8s.io/v1beta1": {"workloads"},
        "kueue.x-k8s.io/v1beta2": {"workloads", "clusterqueues"},
        "leaderworkerset.x-k8s.io/v1": {"leaderworkersets"},
    }
    assert want == EXPECTED


def test_established_means_every_applied_crd() -> None:
    names = [WL["metadata"]["name"], CQ["metadata"]["name"], LWS["metadata"]["name"]]
    assert C.not_established([WL, CQ, LWS], names) == []
    # one not listed yet, one not yet Established: the old check (any x-k8s.io CRD listed and
    # Established) passed on a partial list
    not_yet = crd("kueue.x-k8s.io", "clusterqueues", {"v1beta2": True}, established=False)
    assert C.not_established([WL, not_yet], names) == sorted([CQ["metadata"]["name"], LWS["metadata"]["name"]])
    assert C.not_established([crd("a.x-k8s.io", "bs", {"v1": True}, established=None)], ["bs.a.x-k8s.io"])


def test_served_when_both_discovery_forms_list_everything() -> None:
    assert C.missing_from_discovery(EXPECTED, aggregated(EXPECTED), per_version(EXPECTED)) == []


def test_established_but_not_yet_in_discovery_is_not_ready() -> None:
    """The flake: the CRDs Established, discovery not refreshed yet (one form or the other)."""
    partial = {**EXPECTED, "kueue.x-k8s.io/v1beta2": {"clusterqueues"}}
    assert C.missing_from_discovery(EXPECTED, aggregated(partial), per_version(EXPECTED)) == [
        "kueue.x-k8s.io/v1beta2/workloads (not in aggregated /apis)"
    ]
    assert C.missing_from_discovery(EXPECTED, aggregated(EXPECTED), per_version(partial)) == [
        "kueue.x-k8s.io/v1beta2/workloads (not in /apis/kueue.x-k8s.io/v1beta2)"
    ]
    gone = {k: v for k, v in EXPECTED.items() if not k.startswith("leaderworkerset")}
    out = C.missing_from_discovery(EXPECTED, aggregated(gone), per_version(gone))
    assert out == [
        "leaderworkerset.x-k8s.io/v1/leaderworkersets (not in /apis/leaderworkerset.x-k8s.io/v1, aggregated /apis)"
    ]
    stale = C.missing_from_discovery(
        EXPECTED, aggregated(EXPECTED, stale="kueue.x-k8s.io/v1beta1"), per_version(EXPECTED)
    )
    assert stale == ["kueue.x-k8s.io/v1beta1/workloads (not in aggregated /apis)"]


def test_server_without_aggregated_discovery_uses_per_version_lists() -> None:
    legacy = {"kind": "APIGroupList", "groups": []}
    assert C.missing_from_discovery(EXPECTED, legacy, per_version(EXPECTED)) == []
    assert C.missing_from_discovery(EXPECTED, legacy, per_version({})) != []
