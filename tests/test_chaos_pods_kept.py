"""lws_conformance.chaos.probes.kept_violations: kept pods are told from pods recreated under
their names (the check behind the apiserver-restart experiment's pods-kept probe; no cluster)."""

from __future__ import annotations

from typing import Any

from lws_conformance.chaos import probes

RECORDED = {"chaos-0": "u0", "chaos-0-1": "u01", "chaos-0-2": "u02"}


def _pod(name: str, uid: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {"metadata": meta}


def test_the_same_pods_are_kept() -> None:
    assert probes.kept_violations(RECORDED, [_pod(n, u) for n, u in RECORDED.items()]) == []


def test_a_pod_recreated_under_its_name_is_not_kept() -> None:
    pods = [_pod("chaos-0", "u0-new"), _pod("chaos-0-1", "u01"), _pod("chaos-0-2", "u02")]
    assert probes.kept_violations(RECORDED, pods) == ["pod chaos-0 was recreated under its name (uid u0 -> u0-new)"]
    # the name-based steady-state check cannot see it
    lws = {"metadata": {"name": "chaos"}, "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 3}}}
    assert probes.names_violations(lws, pods) == []


def test_deleting_gone_and_new_pods_are_each_named() -> None:
    pods = [_pod("chaos-0", "u0", deleting=True), _pod("chaos-0-2", "u02"), _pod("chaos-0-3", "u03")]
    assert probes.kept_violations(RECORDED, pods) == [
        "pod chaos-0-1 is gone",
        "pod chaos-0 is being deleted",
        "pod chaos-0-3 was not there before",
    ]
