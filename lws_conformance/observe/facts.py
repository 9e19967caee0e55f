"""Facts of a recorded rollout that the suites assert on (pure): the leader StatefulSet's steps,
the peak of live groups, each group's revisions, downtime, and the documented first steps of an
update (`leaderworkerset_controller.go` rollingUpdateParameters@v0.9.0) to compare them with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .replay import Params, State, group_of, is_leader, replay, rev
from .timeline import Event


@dataclass(frozen=True)
class StsStep:
    """One distinct (revision, replicas, partition) of the leader StatefulSet spec."""

    index: int
    t: float
    revision: str | None
    replicas: int | None
    partition: int


def leader_sts_steps(events: Sequence[Event], lws: str | None = None) -> list[StsStep]:
    out: list[StsStep] = []
    for st in replay(events, lws):
        ev = st.event
        if ev is None or ev.kind != "StatefulSet" or st.leader_sts is not ev.obj or st.leader_sts is None:
            continue
        spec = st.leader_sts.get("spec") or {}
        step = StsStep(st.index, ev.t, rev(st.leader_sts), spec.get("replicas"), int(spec.get("partition") or 0))
        if not out or (out[-1].revision, out[-1].replicas, out[-1].partition) != (
            step.revision,
            step.replicas,
            step.partition,
        ):
            out.append(step)
    return out


def downtime(events: Sequence[Event], since_rv: int, lws: str | None = None) -> tuple[int, float]:
    """(surge groups seen, seconds without any available group) over the events written after
    resourceVersion `since_rv` (the last one seen before the update), replaying the recording
    event by event. The cut is by resourceVersion, the write order, not by arrival time: an event
    written before the update can arrive after the last one seen then (a late pod write once
    counted 2 ms of "downtime" from the group's creation)."""
    surge: set[int] = set()
    down_from: float | None = None
    total = 0.0
    for st in replay(events, lws):
        ev = st.event
        if ev is None or st.params is None or int(ev.rv) <= since_rv:
            continue
        surge |= {g for g in st.live_groups() if g >= st.params.replicas}
        if not st.available_groups():
            down_from = ev.t if down_from is None else down_from
        elif down_from is not None:
            total, down_from = total + ev.t - down_from, None
    return len(surge), total


def peak_live_groups(events: Sequence[Event], lws: str | None = None, since: int = 0) -> int:
    """The most groups live at once at or after ordered event `since`."""
    peak = 0
    for st in replay(events, lws):
        if st.index >= since:
            peak = max(peak, len(st.live_groups()))
    return peak


def revisions_by_group(events: Sequence[Event], lws: str | None = None) -> dict[int, list[str | None]]:
    """Per group, the revisions of its successive leader incarnations."""
    out: dict[int, list[str | None]] = {}
    seen: set[str] = set()
    for st in replay(events, lws):
        ev = st.event
        if ev and ev.kind == "Pod" and is_leader(ev.obj) and ev.type != "DELETED":
            uid = str(ev.obj.get("uid"))
            g = group_of(ev.obj)
            if g is not None and uid not in seen:
                seen.add(uid)
                out.setdefault(g, []).append(rev(ev.obj))
    return out


def documented_update_start(
    replicas: int, sts_replicas: int, max_unavailable: Any, max_surge: Any, partition: int = 0
) -> tuple[int, int]:
    """(leader StatefulSet replicas, partition) written when a new revision is detected
    (rollingUpdateParameters Case 2), from a settled state of `sts_replicas` leaders."""
    p = Params.from_spec({"replicas": replicas, "maxUnavailable": max_unavailable, "maxSurge": max_surge})
    part = max(min(replicas, sts_replicas), partition)
    if sts_replicas < replicas:
        return replicas, part
    unready = replicas
    want = p.burst if unready > p.max_surge else replicas + max(0, unready - p.max_unavailable)
    return want, part


def documented_first_step(replicas: int, max_unavailable: Any, max_surge: Any, partition: int = 0) -> int:
    """The partition of the first rollout step after case 2, every group ready and old
    (rollingUpdatePartition with tailReady 0): max(S - step, lwsP) with step = mu + ms - (Burst - S)."""
    p = Params.from_spec({"replicas": replicas, "maxUnavailable": max_unavailable, "maxSurge": max_surge})
    s, _ = documented_update_start(replicas, replicas, max_unavailable, max_surge)
    step = p.max_unavailable + p.max_surge - (p.burst - s)
    return max(min(max(0, s - step), replicas), partition)


def tail_updated_available(events: Sequence[Event], index: int, lws: str | None = None) -> int:
    """tailReady (calculateContinuousReadyReplicas) as the pods show it before ordered event `index`: consecutive groups
    from the leader StatefulSet's highest ordinal down that are available at the target revision.
    The controller's cache can only lag this, so its tailReady is at most this number."""
    last: State | None = None
    for st in replay(events[:index], lws):
        last = st
    if last is None or last.leader_sts is None:
        return 0
    n, target = 0, last.target()
    for g in reversed(range(int((last.leader_sts.get("spec") or {}).get("replicas") or 0))):
        v = last.views.get(g)
        if v is None or not v.available or v.revision != target:
            break
        n += 1
    return n
