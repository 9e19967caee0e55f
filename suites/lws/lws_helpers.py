"""Shared pieces of the LWS suites: a whole LWS steady, a status watched for a window, what the
headless Services publish.

Not a test module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from lws_conformance.chaos.probes import steady_state_violations
from lws_conformance.k8s import predicates as P
from lws_conformance.k8s.wait import WaitTimeout, observe
from lws_conformance.scenario import LWS_GROUP, LWS_PLURAL, LWS_VERSION, Scenario

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

    return observe(
        sc.api,
        sc.custom.list_namespaced_custom_object,
        broken,
        duration=seconds,
        group=LWS_GROUP,
        version=LWS_VERSION,
        namespace=sc.namespace,
        plural=LWS_PLURAL,
    )


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
