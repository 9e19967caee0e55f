"""Replaying a recorded rollout: the state of one LWS after every event (pure, no I/O).

`replay` yields, after each ordered event, the LWS, its leader StatefulSet and every group's view.
A *group* is the set of pods with one group-index; it is *live* while its leader pod exists
without a deletionTimestamp; it is *available* when the live leader is Running+Ready and size-1
live, Ready workers carry the leader's template-revision-hash (size from the leader's `size`
annotation). The *target* revision is the leader StatefulSet's template-revision-hash label (LWS
writes it with the partition). `Params` are the rollout parameters in force, scaled as
intstr.GetScaledValueFromIntOrPercent does. The invariants (`invariants`) and the pictures
(`picture`) read this replay.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .timeline import GROUP_INDEX, NAME, REVISION, SIZE, WORKER_INDEX, Event, Obj

# -- parameters ------------------------------------------------------------------------------


def scaled(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is; "N%" of `total`, rounded as asked."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    s = str(value)
    if not s.endswith("%"):
        return int(s)
    v = int(s[:-1]) * total
    return math.ceil(v / 100) if round_up else v // 100


@dataclass(frozen=True)
class Params:
    """The rollout parameters in force, from one LWS snapshot."""

    replicas: int
    size: int
    partition: int
    max_unavailable: int
    max_surge: int

    @property
    def burst(self) -> int:
        return self.replicas + self.max_surge

    @staticmethod
    def from_spec(spec: Obj) -> Params:
        r = int(spec.get("replicas") or 0)
        ms = min(scaled(spec.get("maxSurge", 0), r, True), r)
        return Params(
            r,
            int(spec.get("size") or 1),
            int(spec.get("partition") or 0),
            scaled(spec.get("maxUnavailable", 1), r, False),
            ms,
        )


def burst_for(replicas: int, max_surge: int | str | None) -> int:
    return replicas + min(scaled(max_surge, replicas, True), replicas)


# -- replay ----------------------------------------------------------------------------------


def labels_of(o: Obj) -> dict[str, str]:
    lbl: dict[str, str] = o.get("labels") or {}
    return lbl


def rev(o: Obj) -> str | None:
    return labels_of(o).get(REVISION)


def group_of(o: Obj) -> int | None:
    v = labels_of(o).get(GROUP_INDEX)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def is_leader(pod: Obj) -> bool:
    return labels_of(pod).get(WORKER_INDEX) == "0"


def live(o: Obj) -> bool:
    return not o.get("deleting")


@dataclass
class GroupView:
    index: int
    leader: Obj | None = None  # the live leader
    available: bool = False
    revision: str | None = None


@dataclass
class State:
    """The world after event `index`, for one LWS. Updated incrementally by `apply`."""

    lws_name: str
    index: int = -1
    event: Event | None = None
    lws: Obj | None = None
    params: Params | None = None
    prev_params: Params | None = None  # before the last LWS event
    templates: list[str] = field(default_factory=list)  # distinct template digests, in order
    leader_sts: Obj | None = None
    prev_leader_sts: Obj | None = None
    pods: dict[str, Obj] = field(default_factory=dict)
    first_seen: dict[str, int] = field(default_factory=dict)  # pod uid -> event index (-1: initial list)
    group_pods: dict[int, dict[str, Obj]] = field(default_factory=dict)
    views: dict[int, GroupView] = field(default_factory=dict)
    ever_available: set[int] = field(default_factory=set)
    touched: set[int] = field(default_factory=set)  # groups changed by the last event
    prev_pod: Obj | None = None  # the pod's snapshot before the last event

    def apply(self, index: int, ev: Event) -> None:
        self.index, self.event, self.touched, self.prev_pod = index, ev, set(), None
        o = ev.obj
        if ev.kind == "LeaderWorkerSet" and ev.name == self.lws_name:
            self.prev_params = self.params
            if ev.type == "DELETED":
                return
            self.lws = o
            self.params = Params.from_spec(o.get("spec") or {})
            digest = (o.get("spec") or {}).get("template")
            if digest and digest not in self.templates:
                self.templates.append(digest)
        elif ev.kind == "StatefulSet" and ev.name == self.lws_name:
            self.prev_leader_sts = self.leader_sts
            self.leader_sts = None if ev.type == "DELETED" else o
        elif ev.kind == "Pod" and labels_of(o).get(NAME) == self.lws_name:
            g = group_of(o)
            if g is None:
                return
            name = str(o.get("name"))
            self.prev_pod = self.pods.get(name)
            if ev.type == "DELETED":
                self.pods.pop(name, None)
                self.group_pods.get(g, {}).pop(name, None)
            else:
                self.pods[name] = o
                self.group_pods.setdefault(g, {})[name] = o
                uid = str(o.get("uid"))
                if uid not in self.first_seen:
                    self.first_seen[uid] = -1 if ev.source == "list" else index
            self.touched.add(g)
            self.views[g] = self._view(g)
            if self.views[g].available:
                self.ever_available.add(g)

    def _view(self, g: int) -> GroupView:
        pods = self.group_pods.get(g, {}).values()
        leaders = [p for p in pods if is_leader(p) and live(p)]
        if not leaders:
            return GroupView(g)
        leader = leaders[0]
        h = rev(leader)
        size = group_size(leader)
        workers = [p for p in pods if not is_leader(p) and live(p) and p.get("ready") and rev(p) == h]
        return GroupView(g, leader, bool(leader.get("ready")) and len(workers) >= size - 1, h)

    # -- derived -------------------------------------------------------------------------
    def live_groups(self) -> list[int]:
        return sorted(g for g, v in self.views.items() if v.leader is not None)

    def available_groups(self) -> list[int]:
        return sorted(g for g, v in self.views.items() if v.available)

    def target(self) -> str | None:
        return rev(self.leader_sts) if self.leader_sts else None

    def leader_name(self, g: int) -> str:
        v = self.views.get(g)
        return str(v.leader["name"]) if v and v.leader else f"{self.lws_name}-{g}"


def group_size(leader: Obj) -> int:
    try:
        return int((leader.get("annotations") or {}).get(SIZE, "1"))
    except ValueError:
        return 1


def lws_name_of(events: Sequence[Event]) -> str | None:
    for ev in events:
        if ev.kind == "LeaderWorkerSet":
            return ev.name
    return None


def replay(events: Sequence[Event], lws: str | None = None) -> Iterator[State]:
    """Yield the (same, mutated) state after each event."""
    name = lws or lws_name_of(events)
    if name is None:
        return
    st = State(name)
    for i, ev in enumerate(events):
        st.apply(i, ev)
        yield st


def condition(lws: Obj, ctype: str) -> str | None:
    conds: dict[str, str] = ((lws.get("status") or {}).get("conditions")) or {}
    return conds.get(ctype)


def status_current(lws: Obj) -> bool:
    """The status was written for this spec (only then do status and spec belong together)."""
    return (lws.get("status") or {}).get("observedGeneration") == lws.get("generation")
