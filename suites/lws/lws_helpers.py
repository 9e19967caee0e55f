"""Shared pieces of the LWS suites: a whole LWS steady, a status watched for a window, what the
headless Services publish.

Not a test module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from lws_conformance.testing import (
    Scenario,
    WaitTimeout,
    steady_state_violations,
)
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]

PFX = "leaderworkerset.sigs.k8s.io/"


def steady(sc: Scenario, lws: Obj, timeout: float = 180) -> list[Obj]:
    """The live pods of `lws` once every group is Ready and its shape is what the spec says."""
    return list(
        sc.wait_pods(
            lambda ps: P.live(ps) if not steady_state_violations(lws, ps) else None,
            f"LWS {lws['metadata']['name']}: every group Ready",
            timeout=timeout,
            selector=f"{PFX}name={lws['metadata']['name']}",
        )
    )


def watched(sc: Scenario, name: str, holds: Callable[[Obj], bool], seconds: float = 3.0) -> str | None:
    """Watch LWS `name` for `seconds` (scaled): the first status for which `holds` is false, else None."""

    def broken(objs: list[Obj]) -> str | None:
        mine = [o for o in objs if o["metadata"]["name"] == name]
        if not mine:
            return f"LeaderWorkerSet {name} disappeared"
        return None if holds(mine[0]) else f"status became {mine[0].get('status')}"

    return sc.observe_objects("LeaderWorkerSet", broken, seconds)


def endpoints_unpublished(sc: Scenario, published: Callable[[list[Obj]], bool], condition: str) -> str | None:
    """Wait (60 s, scaled) until the namespace's EndpointSlices satisfy `published`; None when they
    do, else the timeout's first line."""
    try:
        sc.wait_in_namespace(
            client.DiscoveryV1Api(sc.api).list_namespaced_endpoint_slice,
            "EndpointSlices",
            lambda slices: slices if published(slices) else None,
            condition,
            timeout=60,
        )
    except WaitTimeout as exc:
        return str(exc).splitlines()[0]
    return None


def endpoints(slices: list[Obj]) -> list[Obj]:
    return [e for s in slices for e in s.get("endpoints") or []]


def one_ready_group_of_two(lws: Obj) -> bool:
    """Of 2 groups, 1 counted ready, and the LWS Progressing."""
    st = lws.get("status") or {}
    return st.get("replicas") == 2 and st.get("readyReplicas", 0) == 1 and P.condition(lws, "Progressing") == "True"


def not_available(lws: Obj) -> bool:
    return P.condition(lws, "Available") == "False"


# -- TPU environment (KEP 115) ----------------------------------------------------------------
TPU = "google.com/tpu"
TPU_VARS = ("TPU_WORKER_HOSTNAMES", "TPU_WORKER_ID", "TPU_NAME")


def expected_tpu_env(
    name: str, size: int, leader_tpu: bool, sub: int | None, workers_tpu: bool = True
) -> dict[str, tuple[list[str], int, str] | None]:
    """Per pod: (hosts of its slice, in order; TPU_WORKER_ID; TPU_NAME), None for a pod that
    requests no TPU. Without subgroups the slice is the group's TPU pods; with subgroups of size
    s it is the pod's subgroup: the leader (when it requests TPUs) and workers 1..s-1, then s
    workers each; when the leader requests none, workers (k*s)+1..(k+1)*s (KEP 115:
    TPU_WORKER_ID = (workerIndex - 1) % subGroupSize)."""
    leader = f"{name}-0"
    pods = [leader] + [f"{leader}-{j}" for j in range(1, size)]
    if not workers_tpu:  # no pod requests TPUs (leader_tpu is False too): nobody gets the variables
        return dict.fromkeys(pods)
    tpu_pods = pods if leader_tpu else pods[1:]
    s = sub or len(tpu_pods)
    slices = [tpu_pods[i : i + s] for i in range(0, len(tpu_pods), s)]
    out: dict[str, tuple[list[str], int, str] | None] = {} if leader_tpu else {leader: None}
    for sl in slices:
        for i, p in enumerate(sl):
            out[p] = (sl, i, leader)
    return out
