"""Changing networkConfig.subdomainPolicy rolls the groups (KEP 173;
leaderworkerset_controller.go rollingUpdateParameters@v0.9.0).

Why: switching a serving LWS from the Shared headless Service to one per group changes every
pod's DNS name and LWS_LEADER_ADDRESS, so the pods must be replaced -- group by group, as any
rolling update -- and each surge group needs its own Service while it lives (and none after it).

The recording adds the namespace's Services to the rollout kinds, so Service creations and
deletions are ordered with the pods in one watch stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from lws_conformance.testing import Claims, Event, Recorder, Scenario, Source, Timeline, artifact_dir, facts, sources

from .rollout_claims import proves_invariants, verify_claims
from .rollout_support import leader_revision, one_revision, pods_at, rollout_lws

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]


@contextmanager
def _recorded_with_services(sc: Scenario) -> Iterator[Timeline]:
    """The rollout recording (LWS, StatefulSets, pods, revisions) plus Services."""
    tl = Timeline(sc.namespace)
    svc = Source("Service", client.CoreV1Api(sc.api).list_namespaced_service, {"namespace": sc.namespace})
    rec = Recorder(tl, [*sources(sc.api, sc.namespace, workloads=False), svc])
    rec.start()
    ok = False
    try:
        yield tl
        ok = True
    finally:
        rec.stop(sync=ok, timeout=20)


def service_lives(events: list[Event]) -> dict[str, list[tuple[str, str, bool]]]:
    """Per Service name, its incarnations: (uid, controller owner, deleted by the end)."""
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for e in events:
        if e.kind != "Service":
            continue
        lives = out.setdefault(e.name, [])
        uid = str(e.obj.get("uid"))
        if not lives or lives[-1][0] != uid:
            lives.append((uid, str(e.obj.get("owner", "")), False))
        if e.type == "DELETED":
            lives[-1] = (uid, lives[-1][1], True)
    return out


def _services(names: set[str]) -> Any:
    def check(items: list[Obj]) -> list[Obj] | None:
        live = {s["metadata"]["name"] for s in items if not s["metadata"].get("deletionTimestamp")}
        return items if live == names else None

    return check


@proves_invariants
@pytest.mark.requirement("ROLL-REV-001")
@pytest.mark.requirement("ROLL-NET-001")
@pytest.mark.requirement("ROLL-NET-002")
def test_subdomain_policy_change_rolls_groups_and_services_follow_surge(
    scenario: Scenario, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """R=2, size 2, maxSurge 1, Shared -> UniquePerReplica: a new revision, each group replaced
    once, every new pod on subdomain L-i with LWS_LEADER_ADDRESS L-i.L-i.<ns>; a Service L-2 for
    the surge group, owned by its leader, gone with it; at the end Services L (kept, KEP 173),
    L-0, L-1, each owned by its group's current leader."""
    sc, name, r, size = scenario, "sd", 2, 2
    with _recorded_with_services(sc) as tl:
        sc.create(rollout_lws(name, r, size, mu=1, ms=1))
        sc.wait_lws(name, sc.settled(r), f"Available with {r} groups")
        old = leader_revision(sc, name)
        sc.patch_lws(name, {"spec": {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}}})
        sc.wait_lws(name, sc.settled(r), "update done")
        new = leader_revision(sc, name)
        pods = sc.wait_pods(pods_at(name, r, size, lambda g: new), f"all pods Ready at {new}")
        with claim("ROLL-NET-002"):
            want = {name, *(f"{name}-{g}" for g in range(r))}
            sc.wait_services(_services(want), f"Services exactly {sorted(want)} (surge group's Service gone)")

    events = verify_claims(claim, tl, artifact_dir(tmp_path), request.node.name)
    with claim("ROLL-REV-001"):
        one_revision(sc, name, new)
    by_group = facts.revisions_by_group(events)
    with claim("ROLL-NET-001"):
        assert new != old, "a subdomainPolicy change must create a new revision"
        assert all(by_group.get(g) == [old, new] for g in range(r)), f"each group replaced once: {by_group}"
        wrong = {}
        for p in pods:
            g = p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
            env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0].get("env") or []}
            got = (p["spec"].get("subdomain"), env.get("LWS_LEADER_ADDRESS"))
            if got != (f"{name}-{g}", f"{name}-{g}.{name}-{g}.{sc.namespace}"):
                wrong[p["metadata"]["name"]] = got
        assert not wrong, f"(subdomain, LWS_LEADER_ADDRESS) after the update: {wrong}"
    with claim("ROLL-NET-002"):
        _services_followed_groups(events, name, r, by_group)


def _services_followed_groups(events: list[Event], name: str, r: int, by_group: dict[int, Any]) -> None:
    lives = service_lives(events)
    leaders = {
        str(e.obj.get("uid")): e.name
        for e in events
        if e.kind == "Pod"
        and e.type != "DELETED"
        and (e.obj.get("labels") or {}).get("leaderworkerset.sigs.k8s.io/worker-index") == "0"
    }
    surge = sorted(g for g in by_group if g >= r)
    assert surge, f"no surge group was created (maxSurge 1): {by_group}"
    for g in surge:
        svc = lives.get(f"{name}-{g}")
        assert svc, f"no Service {name}-{g} for surge group {g}: {sorted(lives)}"
        assert all(deleted for _, _, deleted in svc), f"Service {name}-{g} outlived surge group {g}: {svc}"
    for g in range(r):
        svc = lives.get(f"{name}-{g}") or []
        assert svc and not svc[-1][2], f"Service {name}-{g} missing at the end: {svc}"
        owner = svc[-1][1]
        assert owner.startswith(f"Pod/{name}-{g}/") and leaders.get(owner.rpartition("/")[2]) == f"{name}-{g}", (
            f"Service {name}-{g} owned by {owner}, not by leader {name}-{g}"
        )
    assert lives.get(name) and not lives[name][-1][2], f"the Shared Service {name} was deleted: {lives.get(name)}"
