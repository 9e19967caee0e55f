"""Exclusive placement between two LWSs of one namespace (LWS pod_webhook.go SetExclusiveAffinities@v0.9.0).

Why: the promise (LWS-EXCL-001) is one group per rack within an LWS. The injected anti-affinity
selects every pod that has a group-key label other than its own group's, whatever LWS it belongs
to, so a second exclusive LWS in the namespace cannot use a rack the first one holds: its extra
groups wait unscheduled even when the racks would have room. lws#539 (open, kind/bug) calls this a
bug and PR #540 proposes limiting the exclusion to one LWS; this test states the behaviour as
observed (LWS-EXCL-004, SHOULD), so a fix shows as a warning here and never as a MUST failure.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Scenario, workloads
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PREFIX = "leaderworkerset.sigs.k8s.io/"
EXCLUSIVE = f"{PREFIX}exclusive-topology"


def _exclusive(name: str, replicas: int, size: int, rack_label: str) -> Obj:
    obj = workloads.lws(name, replicas=replicas, size=size)
    obj["metadata"]["annotations"] = {EXCLUSIVE: rack_label}
    return obj


def _group(pod: Obj) -> str:
    labels = pod["metadata"].get("labels") or {}
    return f"{labels.get(PREFIX + 'name')}/{labels.get(PREFIX + 'group-index')}"


def _racks(pods: list[Obj], node_rack: dict[str, str]) -> dict[str, set[str]]:
    """<lws>/<group index> -> the racks its scheduled pods run on."""
    out: dict[str, set[str]] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if node:
            out.setdefault(_group(p), set()).add(node_rack.get(node, f"<{node} has no rack>"))
    return out


@pytest.mark.requirement("LWS-EXCL-004")
@pytest.mark.destructive  # needs every rack free: the whole capacity
def test_two_exclusive_lws_do_not_share_a_rack(scenario: Scenario) -> None:
    """LWS a takes 2 racks; LWS b asks for one group more than the racks left: b's groups get the
    free racks, its extra group's leader stays unscheduled with no worker StatefulSet (for a
    window), and no rack holds groups of both LWSs."""
    sc, topo = scenario, scenario.cluster.topology
    if topo.racks < 3:
        pytest.skip(f"needs at least 3 racks, the profile has {topo.racks}")
    size, a_groups = 2, 2
    b_groups = topo.racks - a_groups + 1
    sc.create(_exclusive("a", a_groups, size, topo.rack_label))
    sc.wait_pods(
        lambda ps: (
            P.live(ps)
            if P.names(ps) == P.expected_pod_names("a", a_groups, size) and all(map(P.pod_ready, P.live(ps)))
            else None
        ),
        f"LWS a: {a_groups} groups Ready",
    )
    sc.create(_exclusive("b", b_groups, size, topo.rack_label))

    def b_placed_but_one(pods: list[Obj]) -> tuple[list[Obj], str] | None:
        b = [p for p in pods if (p["metadata"].get("labels") or {}).get(PREFIX + "name") == "b"]
        groups: dict[str, list[Obj]] = {}
        for p in b:
            groups.setdefault(_group(p), []).append(p)
        if len(groups) != b_groups:
            return None
        full = [g for g, ps in groups.items() if len(ps) == size and all(map(P.pod_ready, ps))]
        waiting = [
            g
            for g, ps in groups.items()
            if len(ps) == 1 and not ps[0]["spec"].get("nodeName") and P.condition(ps[0], "PodScheduled") == "False"
        ]
        return (pods, waiting[0]) if len(full) == b_groups - 1 and len(waiting) == 1 else None

    pods, waiting = sc.wait_pods(
        b_placed_but_one, f"LWS b: {b_groups - 1} groups Ready on the free racks, 1 leader unschedulable"
    )
    node_rack = {n: labels.get(topo.rack_label, "") for n, labels in sc.node_labels().items()}
    racks = _racks(P.live(pods), node_rack)
    split, shared = P.one_domain_each(racks)
    assert not split, f"groups spread over several racks: {split}"
    assert not shared, f"racks holding groups of both LWSs (or two groups): {shared}"

    leader = f"b-{waiting.split('/')[1]}"

    def placed(ps: list[Obj]) -> str | None:
        for p in ps:
            if p["metadata"]["name"] == leader and p["spec"].get("nodeName"):
                return f"{leader} was placed on {p['spec']['nodeName']} next to LWS a's groups"
        return None

    leak = sc.observe_pods(placed, duration=5)
    assert leak is None, leak
    assert leader not in {s["metadata"]["name"] for s in sc.statefulsets()}, (
        f"worker StatefulSet created for the unscheduled leader {leader}"
    )
