"""DisaggregatedSet placement policies (LWS >= v0.10.0): where a slice's pods run, and admission.

spec.placementPolicy {type, topology} makes the controller inject pod affinity and anti-affinity
into the child LWSs' pod templates (disaggregatedset_types.go@v0.10.0). What users rely on is the
placement itself, so the scheduling tests read where the pods landed: with ExclusiveSlice one slice
(every role) in one domain and the set's slices in different domains; with ExclusiveTopology at most
one slice per domain across all sets. Admission: a non-None type needs a topology key, and a policy
next to LWS's own exclusive-topology annotations is refused (the webhook's validatePlacement).
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_conformance.testing import Claims, ClusterHandle, Scenario, admission
from lws_conformance.testing import predicates as P

from . import ds_helpers as D
from .ds_helpers import accepted, rejected

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
SUBGROUP_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
CONFLICT = "must not be combined with a non-None spec.placementPolicy.type"


def _placed(policy: str, topology: str, **spec: Any) -> Obj:
    return {"placementPolicy": {"type": policy, "topology": topology}, **spec}


def _two_roles() -> list[Obj]:
    return [D.role("prefill", 1, 2), D.role("decode", 1)]


def _by_set(pods: list[Obj], names: Any) -> dict[str, list[Obj]]:
    """Set name -> its live pods, for each of `names`."""
    live = P.live(pods)
    return {n: [p for p in live if (p["metadata"].get("labels") or {}).get(D.SET) == n] for n in names}


def _running(sc: Scenario, sets: dict[str, int], condition: str) -> list[Obj]:
    """Wait until set name -> pod count holds, every pod Running and Ready; the pods."""

    def check(pods: list[Obj]) -> list[Obj] | None:
        per = _by_set(pods, sets)
        ok = all(len(per[s]) == n and all(map(P.pod_ready, per[s])) for s, n in sets.items())
        return [p for s in sets for p in per[s]] if ok else None

    pods: list[Obj] = sc.wait_pods(check, condition, timeout=90)
    return pods


@pytest.mark.requirement("LWS-DSPLACE-001")
@pytest.mark.destructive  # one slice per rack: every rack
def test_exclusive_slice_colocates_a_slice_and_spreads_slices(scenario: Scenario, lwsc_cluster: ClusterHandle) -> None:
    """As many slices as racks, each prefill (a group of 2) + decode (1), ExclusiveSlice on the
    rack label: each slice's 3 pods share one rack, and no two slices share a rack (so every rack
    holds one: placed at random, 4 slices would share a rack 9 times in 10)."""
    sc, t = scenario, lwsc_cluster.topology
    n = t.racks
    if not 2 <= n <= 10:
        pytest.skip(f"needs 2 to 10 racks, the profile has {n}")
    sc.create(D.dset("exs", _two_roles(), **_placed("ExclusiveSlice", t.rack_label, slices=n)))
    pods = _running(sc, {"exs": 3 * n}, f"{n} slices x 3 pods Running and Ready")
    racks = P.domains(pods, sc.node_labels(), t.rack_label, D.SLICE)
    assert set(racks) == {str(i) for i in range(n)}, f"pods by slice label: {sorted(racks)}, expected 0..{n - 1}"
    split, shared = P.one_domain_each(racks)
    assert not split, f"a slice's pods spread over several racks: {split}"
    assert not shared, f"racks holding several slices of the set: {shared}"


@pytest.mark.requirement("LWS-DSPLACE-002")
@pytest.mark.destructive  # three sets competing for the two blocks: nothing else may run there
def test_exclusive_topology_gives_a_domain_to_one_slice(scenario: Scenario, lwsc_cluster: ClusterHandle) -> None:
    """Three sets of one slice each, ExclusiveTopology on the block label, and two blocks: two
    sets run, each within one block, in different blocks; every pod of the third stays
    unscheduled (both blocks hold another set's slice)."""
    sc, t = scenario, lwsc_cluster.topology
    if t.blocks != 2:
        pytest.skip(f"needs exactly 2 blocks, the profile has {t.blocks}")
    names = ["ext-a", "ext-b", "ext-c"]
    for n in names:
        sc.create(D.dset(n, _two_roles(), **_placed("ExclusiveTopology", t.block_label)))

    def two_run_one_waits(pods: list[Obj]) -> tuple[list[Obj], str] | None:
        per = _by_set(pods, names)
        running = [n for n, ps in per.items() if len(ps) == 3 and all(map(P.pod_ready, ps))]
        waiting = [n for n, ps in per.items() if ps and all(P.condition(p, "PodScheduled") == "False" for p in ps)]
        if len(running) == 2 and len(waiting) == 1:
            return [p for n in running for p in per[n]], waiting[0]
        return None

    pods, waiting = sc.wait_pods(
        two_run_one_waits, "two sets Running in the two blocks, the third unschedulable", timeout=90
    )
    split, shared = P.one_domain_each(P.domains(pods, sc.node_labels(), t.block_label, D.SET))
    assert not split, f"a set's slice spread over several blocks: {split}"
    assert not shared, f"blocks holding the slices of two sets: {shared}"
    leak = sc.observe_pods(
        lambda ps: next(
            (
                f"{p['metadata']['name']} of {waiting} was scheduled to {p['spec']['nodeName']}"
                for p in ps
                if (p["metadata"].get("labels") or {}).get(D.SET) == waiting and p["spec"].get("nodeName")
            ),
            None,
        ),
        duration=D.window(),
    )
    assert leak is None, leak


def _annotated(where: str, key: str, value: str, replicas: int = 1) -> list[Obj]:
    """The two roles, prefill carrying LWS annotation `key` on its metadata (`where` "role") or
    on its worker template ("worker"); a subgroup annotation comes with a subGroupPolicy."""
    roles = [D.role("prefill", replicas, 2), D.role("decode", replicas)]
    lwt = roles[0]["spec"]["leaderWorkerTemplate"]
    target = roles[0] if where == "role" else lwt["workerTemplate"]
    target.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
    if key == SUBGROUP_EXCLUSIVE:
        lwt["subGroupPolicy"] = {"subGroupSize": 1}
    return roles


def _refused_update(sc: Scenario, name: str, ops: list[Obj]) -> str:
    """The refusal's message of a JSON patch of set `name` (it must be refused as invalid)."""
    out = admission.answer(lambda: D.patch(sc, name, ops))
    assert out.obj is None, f"update of {name} accepted: {ops}"
    return admission.assert_refused(out)


@pytest.mark.requirement("LWS-DSPLACE-003")
@pytest.mark.requirement("LWS-DSPLACE-004")
def test_placement_policy_admission(scenario: Scenario, lwsc_cluster: ClusterHandle, claim: Claims) -> None:
    sc, host = scenario, lwsc_cluster.topology.hostname_label
    with claim("LWS-DSPLACE-003"):
        for policy in ("ExclusiveSlice", "ExclusiveTopology"):
            rejected(
                sc,
                D.dset("notopo", _two_roles(), placementPolicy={"type": policy}),
                403,
                "spec.placementPolicy.topology",
                "topology is required when type is not None",
            )
        accepted(sc, D.dset("none", _two_roles(), placementPolicy={"type": "None"}))
        accepted(sc, D.dset("slice", _two_roles(), **_placed("ExclusiveSlice", host)))
    with claim("LWS-DSPLACE-004"):
        accepted(sc, D.dset("lwsexcl", _annotated("role", EXCLUSIVE, host)))
        for where, key in (("role", EXCLUSIVE), ("worker", EXCLUSIVE), ("role", SUBGROUP_EXCLUSIVE)):
            policy = "ExclusiveTopology" if where == "worker" else "ExclusiveSlice"
            rejected(
                sc,
                D.dset(f"both-{where}", _annotated(where, key, host), **_placed(policy, host)),
                403,
                "spec.roles[0]",
                key,
                CONFLICT,
            )
        # on update (sets of 0 replicas: nothing runs): the annotation added next to a policy, and
        # a policy added next to the annotation
        zero = [D.role("prefill", 0, 2), D.role("decode", 0)]
        sc.create(D.dset("withpolicy", zero, **_placed("ExclusiveSlice", host)))
        add_annotation = [{"op": "add", "path": "/spec/roles/0/metadata", "value": {"annotations": {EXCLUSIVE: host}}}]
        message = _refused_update(sc, "withpolicy", add_annotation)
        assert CONFLICT in message and EXCLUSIVE in message, message
        sc.create(D.dset("withexcl", _annotated("role", EXCLUSIVE, host, replicas=0)))
        spec_policy = _placed("ExclusiveSlice", host)["placementPolicy"]
        add_policy = [{"op": "add", "path": "/spec/placementPolicy", "value": spec_policy}]
        message = _refused_update(sc, "withexcl", add_policy)
        assert CONFLICT in message and EXCLUSIVE in message, message
