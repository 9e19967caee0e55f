"""Pure checks over plain-dict objects, shared by waits, suites and the harness's own tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
ADMISSION_GATE = "kueue.x-k8s.io/admission"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"


def condition(obj: Obj, ctype: str) -> str | None:
    """The status ("True"/"False"/"Unknown") of condition `ctype`, or None if absent."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            status: str = c.get("status")
            return status
    return None


def pod_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition(pod, "Ready") == "True"


def gated(pod: Obj, gate: str = ADMISSION_GATE) -> bool:
    return any(g.get("name") == gate for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def live(pods: list[Obj]) -> list[Obj]:
    """Pods not being deleted."""
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def by_group(pods: list[Obj]) -> dict[str, list[Obj]]:
    groups: dict[str, list[Obj]] = {}
    for p in live(pods):
        idx = (p["metadata"].get("labels") or {}).get(GROUP_INDEX)
        if idx is not None:
            groups.setdefault(idx, []).append(p)
    return groups


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in live(pods)}


def expected_pod_names(lws_name: str, replicas: int, size: int) -> set[str]:
    """Leader pods `L-i`, worker pods `L-i-j` with j from 1 (lws-behaviour.md §3.2-3.4)."""
    out = set()
    for i in range(replicas):
        out.add(f"{lws_name}-{i}")
        out.update(f"{lws_name}-{i}-{j}" for j in range(1, size))
    return out
