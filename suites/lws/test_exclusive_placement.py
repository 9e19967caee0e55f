"""Exclusive placement on the fake racks (LWS pod_webhook.go SetExclusiveAffinities@v0.9.0).

Why: `exclusive-topology` is how users give each model replica a whole rack (NVLink domain,
TPU slice); a group split across racks, or two groups sharing one, silently ruins performance.
LWS's own e2e runs on one kind node and never schedules this for real; the harness's kwok nodes
carry rack and hostname labels, so here the scheduler actually has to honour it.

The affinity terms carry no namespaceSelector, so exclusivity holds within a namespace: other
people's pods on the same nodes do not matter, and each test has its own namespace.
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Scenario, images, workloads
from lws_conformance.testing import predicates as P

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
PREFIX = "leaderworkerset.sigs.k8s.io/"
EXCLUSIVE = f"{PREFIX}exclusive-topology"
SUBGROUP_EXCLUSIVE = f"{PREFIX}subgroup-exclusive-topology"


def _exclusive_lws(name: str, replicas: int, size: int, annotations: dict[str, str]) -> Obj:
    obj = workloads.lws(name, replicas=replicas, size=size)
    obj["metadata"]["annotations"] = annotations
    return obj


def _label(pod: Obj, key: str) -> str:
    return str((pod["metadata"].get("labels") or {}).get(key))


def _assert_one_rack_per_group(pods: list[Obj], nodes: dict[str, dict[str, str]], rack_key: str) -> dict[str, str]:
    racks = P.domains(pods, nodes, rack_key, f"{PREFIX}group-index")
    split, shared = P.one_domain_each(racks)
    assert not split, f"groups spread over several racks: {split}"
    assert not shared, f"racks shared by several groups: {shared}"
    return {g: next(iter(r)) for g, r in racks.items()}


def _assert_one_host_per_subgroup(pods: list[Obj], nodes: dict[str, dict[str, str]], host_key: str, want: int) -> None:
    """`want` subgroups, each whole on one host, no host shared by two of them."""
    hosts = P.domains(pods, nodes, host_key, f"{PREFIX}subgroup-key")
    assert len(hosts) == want, f"expected {want} subgroups, got {sorted(hosts)}"
    split = {k: h for k, h in hosts.items() if len(h) != 1}
    assert not split, f"subgroups spread over several hosts: {split}"
    taken = [next(iter(h)) for h in hosts.values()]
    assert len(set(taken)) == len(taken), f"hosts shared by several subgroups: {sorted(taken)}"


@pytest.mark.requirement("LWS-EXCL-001")
@pytest.mark.destructive  # needs every rack (or host) free: the whole capacity
def test_each_group_gets_a_rack_of_its_own(scenario: Scenario) -> None:
    """As many groups as racks: every group lands whole in one rack and no two groups share one;
    each worker StatefulSet is pinned to its leader's rack by nodeSelector."""
    sc, topo = scenario, scenario.cluster.topology
    name, replicas, size = "ex", topo.racks, 3
    sc.create(_exclusive_lws(name, replicas, size, {EXCLUSIVE: topo.rack_label}))
    expected = P.expected_pod_names(name, replicas, size)
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if P.names(ps) == expected and all(map(P.pod_ready, P.live(ps))) else None,
        f"{replicas} groups of {size} Ready, one per rack",
    )
    nodes = sc.node_labels()
    rack_of = _assert_one_rack_per_group(pods, nodes, topo.rack_label)
    assert len(rack_of) == replicas == topo.racks, rack_of

    for sts in sc.statefulsets():
        sname = sts["metadata"]["name"]
        if sname == name:
            continue
        group = sts["metadata"]["labels"][f"{PREFIX}group-index"]
        selector = sts["spec"]["template"]["spec"].get("nodeSelector") or {}
        assert selector.get(topo.rack_label) == rack_of[group], f"worker StatefulSet {sname} nodeSelector {selector}"


@pytest.mark.requirement("LWS-EXCL-002")
@pytest.mark.destructive  # needs every rack (or host) free: the whole capacity
def test_group_without_a_free_rack_stays_pending(scenario: Scenario) -> None:
    """One group more than racks: every rack holds one group and the extra group's leader stays
    unscheduled (with no worker StatefulSet) instead of sharing a rack, for the whole window."""
    sc, topo = scenario, scenario.cluster.topology
    name, replicas, size = "ov", topo.racks + 1, 2

    sc.create(_exclusive_lws(name, replicas, size, {EXCLUSIVE: topo.rack_label}))

    def placed_and_one_pending(pods: list[Obj]) -> tuple[list[Obj], str] | None:
        groups = P.by_group(pods)
        if len(groups) != replicas:
            return None
        full = [g for g, ps in groups.items() if len(ps) == size and all(map(P.pod_ready, ps))]
        waiting = [
            g
            for g, ps in groups.items()
            if [p["metadata"]["name"] for p in ps] == [f"{name}-{g}"]
            and not ps[0]["spec"].get("nodeName")
            and P.condition(ps[0], "PodScheduled") == "False"
        ]
        if len(full) == topo.racks and len(waiting) == 1:
            return [p for g in full for p in groups[g]], waiting[0]
        return None

    placed, waiting = sc.wait_pods(placed_and_one_pending, f"{topo.racks} groups Ready and 1 leader unschedulable")
    _assert_one_rack_per_group(placed, sc.node_labels(), topo.rack_label)
    assert f"{name}-{waiting}" not in {s["metadata"]["name"] for s in sc.statefulsets()}, (
        f"worker StatefulSet created for unscheduled leader {name}-{waiting}"
    )

    def shared_a_rack(pods: list[Obj]) -> str | None:
        for p in P.by_group(pods).get(waiting, []):
            if p["spec"].get("nodeName") or p["metadata"]["name"] != f"{name}-{waiting}":
                return (
                    f"{p['metadata']['name']} of the extra group was placed/created: node {p['spec'].get('nodeName')}"
                )
        return None

    leak = sc.observe_pods(shared_a_rack, duration=5)
    assert leak is None, leak
    assert f"{name}-{waiting}" not in {s["metadata"]["name"] for s in sc.statefulsets()}, (
        f"worker StatefulSet appeared for unscheduled leader {name}-{waiting} during the window"
    )


@pytest.mark.requirement("LWS-EXCL-003")
@pytest.mark.destructive  # needs every rack (or host) free: the whole capacity
def test_subgroups_get_a_host_of_their_own(scenario: Scenario) -> None:
    """subgroup-exclusive-topology per host (with group exclusivity per rack): the pods of a
    subgroup share one host, no host holds two subgroups, and each group stays in one rack."""
    sc, topo = scenario, scenario.cluster.topology
    sgs = 2
    subgroups = topo.nodes_per_rack  # one host per subgroup fills the rack exactly
    name, replicas, size = "sx", min(2, topo.racks), sgs * subgroups
    obj = _exclusive_lws(name, replicas, size, {EXCLUSIVE: topo.rack_label, SUBGROUP_EXCLUSIVE: topo.hostname_label})
    obj["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupPolicyType": "LeaderWorker", "subGroupSize": sgs}
    sc.create(obj)
    expected = P.expected_pod_names(name, replicas, size)
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if P.names(ps) == expected and all(map(P.pod_ready, P.live(ps))) else None,
        f"{replicas} groups of {size} Ready",
    )
    nodes = sc.node_labels()
    _assert_one_rack_per_group(pods, nodes, topo.rack_label)

    _assert_one_host_per_subgroup(pods, nodes, topo.hostname_label, replicas * subgroups)


@pytest.mark.requirement("LWS-EXCL-003")
@pytest.mark.destructive  # needs every host free: the whole capacity
def test_subgroups_keep_apart_with_room_to_share(scenario: Scenario) -> None:
    """subgroup-exclusive-topology per host alone (no group exclusivity): 2 groups of 2 subgroups
    of 2 pods over every host of the cluster, twice the hosts the 4 subgroups need, and the LWS's
    own preferred podAffinity pulling all its pods onto one host. Stacking is possible and what
    the scheduler prefers, so only LWS's exclusivity keeps each subgroup on a host of its own.
    (In the test above one host per subgroup fills each group's rack, so the scheduler's spreading
    gives the right layout even without LWS's anti-affinity.)"""
    sc, topo = scenario, scenario.cluster.topology
    nodes = sc.node_labels()
    sgs, subgroups, replicas = 2, 2, 2
    if len(nodes) < 2 * replicas * subgroups:
        pytest.skip(f"needs {2 * replicas * subgroups} hosts, the profile has {len(nodes)}")
    name, size = "sr", sgs * subgroups
    obj = _exclusive_lws(name, replicas, size, {SUBGROUP_EXCLUSIVE: topo.hostname_label})
    obj["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupPolicyType": "LeaderWorker", "subGroupSize": sgs}
    together = {
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {f"{PREFIX}name": name}},
            "topologyKey": topo.hostname_label,
        },
    }
    for key in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][key]["spec"]["affinity"] = {
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [together]}
        }
    sc.create(obj)
    expected = P.expected_pod_names(name, replicas, size)
    pods = sc.wait_pods(
        lambda ps: P.live(ps) if P.names(ps) == expected and all(map(P.pod_ready, P.live(ps))) else None,
        f"{replicas} groups of {size} Ready",
    )
    _assert_one_host_per_subgroup(pods, nodes, topo.hostname_label, replicas * subgroups)


ANCHOR = "lwsc.x-k8s.io/anchor"  # the label of the pod the user's own affinity term points at


@pytest.mark.requirement("LWS-EXCL-005")
@pytest.mark.destructive  # needs the two racks of one block free
def test_users_own_affinity_is_kept_next_to_exclusive_topology(scenario: Scenario) -> None:
    """A pod pinned to the first block, and an LWS (2 groups of 2, exclusive-topology on the rack
    label) whose templates carry the user's own podAntiAffinity to that pod at block level: every
    pod keeps the user's term (the leaders beside LWS's injected ones), and the groups run in the
    other block, one rack each. (A user's required podAffinity to another pod cannot be combined
    with LWS's: Kubernetes lets a leader satisfy its own group's affinity term only when no pod
    matches any of its terms, so such leaders never schedule.)"""
    sc, topo = scenario, scenario.cluster.topology
    nodes = sc.node_labels()
    blocks = sorted({labels[topo.block_label] for labels in nodes.values() if topo.block_label in labels})
    if len(blocks) != 2:
        pytest.skip(f"needs exactly 2 blocks, the profile has {len(blocks)}")
    avoided, wanted = blocks
    anchor_node = sorted(n for n, labels in nodes.items() if labels.get(topo.block_label) == avoided)[0]
    sc.core.create_namespaced_pod(
        sc.namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "anchor", "labels": {ANCHOR: "yes"}},
            "spec": {"nodeName": anchor_node, "containers": [{"name": "c", "image": images.ref("workload")}]},
        },
    )
    term = {"labelSelector": {"matchLabels": {ANCHOR: "yes"}}, "topologyKey": topo.block_label}
    obj = _exclusive_lws("ua", 2, 2, {EXCLUSIVE: topo.rack_label})
    for key in ("leaderTemplate", "workerTemplate"):
        obj["spec"]["leaderWorkerTemplate"][key]["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    sc.create(obj)

    def ready(pods: list[Obj]) -> list[Obj] | None:
        mine = [p for p in P.live(pods) if _label(p, f"{PREFIX}name") == "ua"]
        return mine if len(mine) == 4 and all(map(P.pod_ready, mine)) else None

    mine = sc.wait_pods(ready, "2 groups of 2 Ready")
    for p in mine:
        anti = p["spec"].get("affinity") or {}
        required = (anti.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        assert term in required, f"{p['metadata']['name']}: the user's podAntiAffinity term is gone: {required}"
        # LWS injects its exclusive terms into the leader; workers follow it by nodeSelector
        leader = _label(p, f"{PREFIX}worker-index") == "0"
        assert not leader or any(t.get("topologyKey") == topo.rack_label for t in required), (
            f"{p['metadata']['name']}: no exclusive-topology term on {topo.rack_label}: {required}"
        )
    placed = P.domains(mine, nodes, topo.block_label, f"{PREFIX}name")
    assert placed == {"ua": {wanted}}, f"the groups ran outside block {wanted} (the user's anti-affinity): {placed}"
    _assert_one_rack_per_group(mine, nodes, topo.rack_label)
