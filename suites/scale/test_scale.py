"""LWS and Kueue at the size of a real GPU fleet: 100 groups of 8 whole-node pods.

Why: the other suites prove each promise on a handful of groups. A production inference fleet
runs a hundred multi-host replicas, each filling most of a rack; gang admission, rack placement,
exclusive racks and a rolling update must still hold there, and the observer that checks the
rollout invariants must still see every event. Upstream promises no bound on time, so the times
are recorded (`Figures`, `benchmarks/scale`) and the requirements are SHOULD; the rollout
invariants themselves keep their own (MUST) requirements, claimed through `rollout_claims`.

Sizes come from the profile (`scale:` in fixtures/profiles/scale.yaml, 100 x 8 on 4 x 25 racks of
10 nodes with 8 GPUs); every pod asks for a whole node's GPUs, so a group fills 8 of a rack's 10
nodes and the 100 groups fill every rack. Each test takes the whole capacity: `destructive`, and
`exclusive("scale")` so they never run beside each other (not an xdist group: on pytest 9.2
those group nothing, pytest-xdist#1386; before this the three ran side by side and warned). Off
the scale profile they are not-applicable (conftest.py).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lws_conformance.testing import (
    Claims,
    Scenario,
    WaitTimeout,
    artifact_dir,
    history,
    record,
    require_complete,
    saved,
    workloads,
)
from lws_conformance.testing import predicates as P

from ..kueue import kueue_helpers as K
from ..rollout.rollout_claims import proves_invariants, verify_claims
from .scale_helpers import EXCLUSIVE, Figures, Scale, placement_problems, racks_per_group, whole_node_lws

pytestmark = [pytest.mark.cluster, pytest.mark.destructive, pytest.mark.exclusive("scale")]
Obj = dict[str, Any]
REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"
BUMP = "lwsc.x-k8s.io/bump"
SYNC_SECONDS = 120  # the recorder's final sync lists ~1,000 objects per kind under load


def _gang_tas_lws(name: str, s: Scale) -> Obj:
    """Queued to the per-test TAS queue, rack required, one podset group for leader and workers."""
    return workloads.set_tas(whole_node_lws(name, s, queue=K.QUEUE), s.topology.rack_label)


def _stuck(sc: Scenario, name: str) -> str:
    """What the pods still waiting show: counts by scheduling gate, binding and readiness."""
    pods = sc.pods(K.selector(name))
    waiting = Counter(
        ",".join(sorted(g["name"] for g in p["spec"].get("schedulingGates") or []))
        or ("bound, not Ready" if p["spec"].get("nodeName") else "ungated, unbound")
        for p in pods
        if not P.pod_ready(p)
    )
    return f"{len(pods)} pods, not Ready by gate/state: {dict(waiting) or 'none'}"


def _all_admitted(s: Scale) -> Any:
    return lambda ws: ws if len(ws) == s.groups and all(map(K.admitted, ws)) else None


def _workload_shape(wls: list[Obj], name: str, uid: str, s: Scale) -> list[str]:
    """One Workload per group, by Kueue's name, covering the whole group and placed by TAS."""
    out = []
    expected = {workloads.lws_workload_name(name, uid, g) for g in range(s.groups)}
    got = set(K.by_name(wls))
    if got != expected:
        out.append(f"Workloads {sorted(got - expected)[:5]} not expected, {sorted(expected - got)[:5]} missing")
    for wl in wls:
        counts = {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]}
        if counts != {"leader": 1, "worker": s.size - 1}:
            out.append(f"{wl['metadata']['name']}: podSets {counts}, not the whole group")
        if K.topology_assigned(wl) != ["leader", "worker"]:
            out.append(f"{wl['metadata']['name']}: no topologyAssignment for leader and worker")
    return out


@pytest.mark.requirement("SCALE-GANG-001")
def test_every_group_admitted_whole_into_one_rack(
    scale: Scale, drained: Scenario, unique: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """100 groups x 8 pods through Kueue TAS (rack required): one Workload per group, every group
    admitted, every pod gated until its own group's Workload was Admitted (watch order), every
    group in one rack, all Ready. Times to all-Admitted and all-Ready are recorded."""
    sc, s, name = drained, scale, "sg"
    where = artifact_dir(tmp_path)
    K.tas_queue(sc, sc.cluster, unique, K.roomy(s.topology))
    fig = Figures(request, where, "scale-gang")
    timed_out: WaitTimeout | None = None
    with record(sc.api, sc.namespace, sync_timeout=SYNC_SECONDS) as tl:
        start = fig.mark("create_s")
        sc.create(_gang_tas_lws(name, s))
        uid = K.lws_uid(sc, name)
        try:
            wls = K.wait_workloads(
                sc, uid, _all_admitted(s), f"{s.groups} Workloads Admitted", timeout=s.deadline(2.4, floor=120)
            )
            fig.mark("admitted_s", start)
            pods = sc.wait_pods(
                K.all_ready(s.groups, s.size),
                f"{s.pods} pods ungated, bound and Ready",
                timeout=s.deadline(3.0, floor=120),
                selector=K.selector(name),
            )
            fig.mark("ready_s", start)
        except WaitTimeout as exc:  # keep the recording as evidence, then fail with the timeout
            timed_out = exc
    events = saved(tl, where, "scale-gang", lws=name)
    fig.save(groups=s.groups, size=s.size, events=len(events), timed_out=timed_out is not None)
    if timed_out:
        raise AssertionError(f"{timed_out}\n{_stuck(sc, name)} (timeline: {where})")

    problems = _workload_shape(wls, name, uid, s)
    wl_of = lambda g: workloads.lws_workload_name(name, uid, g)  # noqa: E731
    problems += history.released_before_admission(events, name, range(s.groups), wl_of)[:10]
    problems += placement_problems(racks_per_group(sc, pods, s.topology.rack_label), exclusive=False)
    assert not problems, f"{len(problems)} gang/TAS problems: {problems[:10]} (timeline: {where})"


def _at_revision(s: Scale, revision: str) -> Any:
    """Exactly the groups' pods, each live, Ready, ungated, at `revision`."""

    def check(pods: list[Obj]) -> list[Obj] | None:
        live = P.live(pods)
        if len(live) != len(pods) or len(live) != s.pods:
            return None
        ok = all(P.pod_ready(p) and not P.gated(p) and p["metadata"]["labels"].get(REVISION) == revision for p in live)
        return live if ok else None

    return check


@proves_invariants
@pytest.mark.requirement("SCALE-ROLL-001")
def test_rolling_update_of_every_group_recorded_whole(
    scale: Scale, drained: Scenario, unique: str, claim: Claims, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The 100 gang/TAS groups updated (a worker-template annotation: a new revision for every
    group) with maxSurge 0 and maxUnavailable `scale.max_unavailable` (10: every rack is full, so
    a surge group could never be placed; 10 keeps 90 groups serving and takes 10 steps), recorded
    from creation to the end. SCALE-ROLL-001: the update completes and the recording is whole
    (final sync equal to a fresh list, no re-list gap); every rollout invariant is checked at
    every event and claimed by its own requirement (rollout_claims)."""
    sc, s, name = drained, scale, "sr"
    where = artifact_dir(tmp_path)
    K.tas_queue(sc, sc.cluster, unique, K.roomy(s.topology))
    obj = _gang_tas_lws(name, s)
    obj["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": s.max_unavailable, "maxSurge": 0},
    }
    fig = Figures(request, where, "scale-rollout")
    finished, before = False, 0
    with record(sc.api, sc.namespace, sync_timeout=SYNC_SECONDS) as tl:
        start = fig.mark("create_s")
        sc.create(obj)
        # A deadline missed (groups never Ready, update never done) is this requirement's
        # failure, not a rollout invariant's: those are judged below on what was recorded.
        with claim("SCALE-ROLL-001"):
            try:
                sc.wait_lws(
                    name, sc.settled(s.groups), f"Available with {s.groups} groups", timeout=s.deadline(3.0, 120)
                )
                began = fig.mark("ready_s", start)
                before = len(tl.events)
                sc.patch_lws(
                    name,
                    {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"annotations": {BUMP: "1"}}}}}},
                )
                sc.wait_lws(
                    name,
                    sc.settled(s.groups),
                    "update done: Available, all groups updated",
                    timeout=s.deadline(6.0, 180),
                )
                new = str(sc.apps.read_namespaced_stateful_set(name, sc.namespace).metadata.labels[REVISION])
                sc.wait_pods(_at_revision(s, new), f"all {s.pods} pods Ready at revision {new}", timeout=60)
                fig.mark("rollout_s", began)
                finished = True
            except WaitTimeout as exc:
                raise AssertionError(f"{exc}\n{_stuck(sc, name)}") from None
        during = len(tl.events) - before if before else 0
    rollout_s = fig.values.get("rollout_s")
    fig.save(
        groups=s.groups,
        size=s.size,
        max_unavailable=s.max_unavailable,
        events=len(tl.events),
        rollout_events=during,
        events_per_s=round(during / rollout_s) if rollout_s else None,
        complete=tl.complete,
        gaps=len(tl.gaps),
        sync_error=tl.sync_error,
        finished=finished,
    )
    if finished:
        # The observer missing events is the harness's, not LWS's: every requirement reads error.
        require_complete(tl)
        check_started = time.monotonic()
        verify_claims(claim, tl, where, request.node.name)
        fig.save(invariant_check_s=round(time.monotonic() - check_started, 2))


@pytest.mark.requirement("SCALE-EXCL-001")
def test_exclusive_racks_for_every_group(
    scale: Scale, drained: Scenario, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """LWS alone (no Kueue: the annotation's own pod affinity / anti-affinity and the default
    scheduler), exclusive-topology on the rack label: 100 groups into the 100 racks, every group
    whole in one rack, no rack holding two groups."""
    sc, s, name = drained, scale, "se"
    obj = whole_node_lws(name, s, queue=None)
    obj["metadata"]["annotations"] = {EXCLUSIVE: s.topology.rack_label}
    fig = Figures(request, artifact_dir(tmp_path), "scale-exclusive")
    start = fig.mark("create_s")
    sc.create(obj)
    try:
        pods = sc.wait_pods(
            K.all_ready(s.groups, s.size),
            f"{s.pods} pods bound and Ready",
            timeout=s.deadline(3.0, 120),
            selector=K.selector(name),
        )
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}\n{_stuck(sc, name)}") from None
    fig.mark("ready_s", start)
    placed = racks_per_group(sc, pods, s.topology.rack_label)
    fig.save(groups=s.groups, size=s.size, racks_used=len({r for rs in placed.values() for r in rs}))
    problems = placement_problems(placed, exclusive=True)
    assert not problems, f"{len(problems)} exclusive-placement problems: {problems[:10]}"
