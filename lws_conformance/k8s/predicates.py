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


# -- Kueue pod-group helpers (suites/kueue) --------------------------------------------------
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"


def kueue_pod_group(pod: Obj) -> str | None:
    """The Kueue pod-group (Workload) name of a pod: a label in Kueue 0.17, an annotation in 0.18+."""
    meta = pod.get("metadata") or {}
    name: str | None = (meta.get("labels") or {}).get(POD_GROUP_NAME) or (meta.get("annotations") or {}).get(
        POD_GROUP_NAME
    )
    return name


def bound(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def held(pod: Obj) -> bool:
    """Still held back by Kueue: admission-gated, not bound to a node, not running."""
    return gated(pod) and not bound(pod) and (pod.get("status") or {}).get("phase") != "Running"


def lws_settled(replicas: int, updated: int | None = None) -> Any:
    """An LWS check: Available, status written for the current generation, replicas and
    readyReplicas equal to `replicas`, updatedReplicas equal to `updated` (default `replicas`).
    status.observedGeneration exists since LWS v0.9.0; where it is absent the generation check
    cannot apply (LWS-STATUS-002 requires the field on versions that have it)."""

    def check(lws: Obj) -> bool:
        st = lws.get("status") or {}
        generation = lws["metadata"]["generation"]
        return (
            condition(lws, "Available") == "True"
            and st.get("observedGeneration", generation) == generation
            and st.get("replicas", 0) == replicas
            and st.get("readyReplicas", 0) == replicas
            and st.get("updatedReplicas", 0) == (replicas if updated is None else updated)
        )

    return check
