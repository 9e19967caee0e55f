"""DisaggregatedSet rollout invariants, checked at every event of a recorded timeline (pure).

A DisaggregatedSet (LWS >= v0.9.0) rolls out by creating one LWS per role for the new revision
(labelled disaggregatedset.x-k8s.io/{name,role,revision}) and rescaling old and new LWSs step by
step (KEP-766). What is checked, per event of the resourceVersion-ordered timeline:

- `ds-surge`: per role, old + new spec.replicas <= replicas + maxSurge;
- `ds-availability`: per role that is not growing and was fully ready when the rollout started,
  ready groups (leader and every worker pod Ready) across revisions >= replicas - maxUnavailable;
- `ds-stability`: an LWS is not rescaled twice without every new-revision LWS seen with
  readyReplicas == replicas in between (the KEP's stability check);
- `ds-drain`: once a role of an old revision is at 0, every role of that revision goes to 0 before
  any other LWS is rescaled, none grows again, and none is deleted while a sibling has replicas.

`follows_steps` compares the observed (old, new) replicas per role with a documented step table.
The limits are the controller's: without a rollingUpdateConfiguration maxSurge 1, maxUnavailable 0;
with one, values scaled against the role's replicas (surge rounded up, unavailable down), and a
zero maxUnavailable keeps the default maxUnavailable 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .invariants import Violation
from .timeline import DS_NAME, DS_REVISION, DS_ROLE, GROUP_INDEX, NAME, Event, Obj

INVARIANTS = ("ds-surge", "ds-availability", "ds-stability", "ds-drain")


@dataclass(frozen=True)
class Limits:
    replicas: int
    max_surge: int
    max_unavailable: int


def _scaled(value: Any, total: int, up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        raw = float(value[:-1]) * total / 100
        return math.ceil(raw) if up else math.floor(raw)
    return int(value or 0)


def limits(role: Obj) -> Limits:
    """The controller's per-role limits for one `snapshot` role (see the module docstring)."""
    replicas = int(role.get("replicas", 1))
    surge, unavail = 1, 0
    if "maxSurge" in role:
        s = _scaled(role.get("maxSurge"), replicas, True)
        u = _scaled(role.get("maxUnavailable"), replicas, False)
        if u > 0:
            surge, unavail = s, u
        elif s > 0:
            surge = s
    return Limits(replicas, surge, unavail)


@dataclass
class DsState:
    """The DisaggregatedSet, its LWSs and their pods after `index` events."""

    ds_name: str
    ds: Obj | None = None
    lws: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)
    revisions: list[str] = field(default_factory=list)  # in order of first appearance
    index: int = -1
    event: Event | None = None

    def roles(self) -> dict[str, Limits]:
        return {str(r["name"]): limits(r) for r in (self.ds or {}).get("roles") or []}

    def newest(self) -> str | None:
        return self.revisions[-1] if self.revisions else None

    def of(self, role: str | None = None, revision: str | None = None) -> list[Obj]:
        out = []
        for snap in self.lws.values():
            labels = snap.get("labels") or {}
            if (role is None or labels.get(DS_ROLE) == role) and (
                revision is None or labels.get(DS_REVISION) == revision
            ):
                out.append(snap)
        return out

    def rolling(self) -> bool:
        return len({(s.get("labels") or {}).get(DS_REVISION) for s in self.lws.values()}) > 1


def replicas(snap: Obj) -> int:
    return int((snap.get("spec") or {}).get("replicas", 1))


def stable(snap: Obj) -> bool:
    return int((snap.get("status") or {}).get("readyReplicas", 0)) == replicas(snap)


def replay(events: Sequence[Event], ds_name: str) -> Iterator[DsState]:
    """Yield the state after each event concerning `ds_name` (its DisaggregatedSet, LWSs, pods)."""
    st = DsState(ds_name)
    children: set[str] = set()
    for i, ev in enumerate(events):
        labels = ev.obj.get("labels") or {}
        gone = ev.type == "DELETED"
        if ev.kind == "DisaggregatedSet" and ev.name == ds_name:
            st.ds = None if gone else ev.obj
        elif ev.kind == "LeaderWorkerSet" and labels.get(DS_NAME) == ds_name:
            children.add(ev.name)
            rev = str(labels.get(DS_REVISION))
            if rev not in st.revisions and not gone:
                st.revisions.append(rev)
            if gone:
                st.lws.pop(ev.name, None)
            else:
                st.lws[ev.name] = ev.obj
        elif ev.kind == "Pod" and labels.get(DS_NAME) == ds_name:
            if gone:
                st.pods.pop(ev.name, None)
            else:
                st.pods[ev.name] = ev.obj
        else:
            continue
        st.index, st.event = i, ev
        yield st


def ready_groups(st: DsState, role: str) -> int:
    """Groups of `role` (any revision) whose pods are all Ready, not deleting, and number size."""
    sizes = {s["name"]: int((s.get("spec") or {}).get("size", 1)) for s in st.of(role)}
    groups: dict[tuple[str, str], list[Obj]] = {}
    for p in st.pods.values():
        labels = p.get("labels") or {}
        if labels.get(NAME) in sizes:
            groups.setdefault((labels[NAME], str(labels.get(GROUP_INDEX))), []).append(p)
    return sum(
        1
        for (lws, _), pods in groups.items()
        if len(pods) == sizes[lws] and all(p.get("ready") and not p.get("deleting") for p in pods)
    )


def _violation(name: str, st: DsState, message: str, objects: Sequence[str] = ()) -> Violation:
    ev = st.event
    assert ev is not None
    return Violation(name, st.index, ev.seq, ev.t, f"{ev.type} {ev.ref()}", tuple(objects), message)


def check(events: Sequence[Event], ds_name: str, only: Sequence[str] | None = None) -> list[Violation]:
    """Every violation of the named invariants (default: all), earliest first, at most one per
    invariant and object (the first), so a long violation reads as one line."""
    names = set(only if only is not None else INVARIANTS)
    checkers = [c for c in (_Surge(), _Availability(), _Stability(), _Drain()) if c.name in names]
    out: list[Violation] = []
    seen: set[tuple[str, str]] = set()
    for st in replay(events, ds_name):
        for c in checkers:
            for key, v in c.step(st):
                if (c.name, key) not in seen:
                    seen.add((c.name, key))
                    out.append(v)
    return sorted(out, key=lambda v: v.index)


class _Surge:
    name = "ds-surge"

    def step(self, st: DsState) -> Iterator[tuple[str, Violation]]:
        if not st.rolling() or st.event is None or st.event.kind != "LeaderWorkerSet":
            return
        for role, lim in st.roles().items():
            mine = st.of(role)
            total = sum(replicas(s) for s in mine)
            if total > lim.replicas + lim.max_surge:
                parts = ", ".join(f"{s['name']}={replicas(s)}" for s in mine)
                msg = (
                    f"role {role}: old + new replicas {total} > replicas {lim.replicas} + maxSurge "
                    f"{lim.max_surge} ({parts})"
                )
                yield role, _violation(self.name, st, msg, [f"LeaderWorkerSet/{s['name']}" for s in mine])


class _Availability:
    name = "ds-availability"

    def __init__(self) -> None:
        self.watched: dict[str, Limits] | None = None  # roles checked in this rollout

    def step(self, st: DsState) -> Iterator[tuple[str, Violation]]:
        if not st.rolling():
            self.watched = None
            return
        if self.watched is None:  # the rollout's first event: which roles were fully ready
            self.watched = {}
            for role, lim in st.roles().items():
                old = sum(replicas(s) for s in st.of(role) if s["labels"].get(DS_REVISION) != st.newest())
                if old >= lim.replicas and ready_groups(st, role) >= lim.replicas:
                    self.watched[role] = lim
        for role, lim in self.watched.items():
            ready, floor = ready_groups(st, role), lim.replicas - lim.max_unavailable
            if ready < floor:
                msg = (
                    f"role {role}: {ready} ready groups < replicas {lim.replicas} - maxUnavailable "
                    f"{lim.max_unavailable}"
                )
                yield role, _violation(self.name, st, msg, [f"LeaderWorkerSet/{s['name']}" for s in st.of(role)])


class _Stability:
    name = "ds-stability"

    def __init__(self) -> None:
        self.last: dict[str, int] = {}  # LWS -> replicas last seen
        self.unconfirmed: set[str] = set()  # LWSs rescaled with no stable state seen since

    def step(self, st: DsState) -> Iterator[tuple[str, Violation]]:
        ev = st.event
        if ev is not None and ev.kind == "LeaderWorkerSet" and ev.name in st.lws:
            now, before = replicas(st.lws[ev.name]), self.last.get(ev.name)
            self.last[ev.name] = now
            if before is not None and now != before and st.rolling():
                if ev.name in self.unconfirmed:
                    msg = (
                        f"{ev.name} rescaled {before} -> {now} before every new-revision LWS was seen with "
                        f"readyReplicas == replicas since its previous rescale"
                    )
                    yield ev.name, _violation(self.name, st, msg, [f"LeaderWorkerSet/{ev.name}"])
                self.unconfirmed.add(ev.name)
        new = st.of(revision=st.newest())
        roles = set(st.roles())
        have = {(s.get("labels") or {}).get(DS_ROLE) for s in new}
        if roles and roles <= have and all(stable(s) for s in new):
            self.unconfirmed.clear()


class _Drain:
    name = "ds-drain"

    def __init__(self) -> None:
        self.draining: set[str] = set()  # old revisions with a role at 0
        self.last: dict[str, int] = {}

    def step(self, st: DsState) -> Iterator[tuple[str, Violation]]:
        ev = st.event
        if ev is None or ev.kind != "LeaderWorkerSet":
            return
        labels = ev.obj.get("labels") or {}
        rev, now = str(labels.get(DS_REVISION)), replicas(ev.obj)
        before = self.last.get(ev.name)
        self.last[ev.name] = now
        if ev.type == "DELETED" or ev.obj.get("deleting"):
            busy = [s["name"] for s in st.of(revision=rev) if s["name"] != ev.name and replicas(s) > 0]
            if busy:
                yield (
                    ev.name,
                    _violation(
                        self.name, st, f"{ev.name} deleted while {busy} of revision {rev} still have replicas", busy
                    ),
                )
            return
        if before is None or before == now:
            return
        for old in sorted(self.draining):
            pending = [s["name"] for s in st.of(revision=old) if replicas(s) > 0]
            if rev == old and now > before:
                yield ev.name, _violation(self.name, st, f"{ev.name} of draining revision {old} grew {before} -> {now}")
            elif rev != old and pending:
                msg = f"{ev.name} rescaled {before} -> {now} while revision {old} was half drained ({pending} > 0)"
                yield ev.name, _violation(self.name, st, msg, [f"LeaderWorkerSet/{n}" for n in pending])
        if rev != st.newest() and now == 0:
            self.draining.add(rev)
        self.draining = {r for r in self.draining if any(replicas(s) > 0 for s in st.of(revision=r))}


# -- the documented step table ------------------------------------------------------------------
Row = tuple[int, ...]  # (old role0, old role1, ..., new role0, new role1, ...)
# KEP-766 Example 1 (LWS v0.9.0 README L187-L201: prefill 5, decode 2, maxSurge 2, maxUnavailable 1)
# as (old prefill, old decode, new prefill, new decode): the steps ROLL-DSSTEP-001 holds a rollout to.
KEP_766_EXAMPLE_1: tuple[Row, ...] = (
    (5, 2, 0, 0),
    (5, 2, 2, 1),
    (4, 2, 2, 1),
    (3, 2, 2, 1),
    (3, 2, 4, 2),
    (2, 1, 4, 2),
    (2, 1, 5, 2),
    (0, 0, 5, 2),
)


def observed_rows(events: Sequence[Event], ds_name: str, roles: Sequence[str]) -> list[tuple[int, Row]]:
    """(event index, (old..., new...)) at every change of the replicas vector during a rollout."""
    out: list[tuple[int, Row]] = []
    for st in replay(events, ds_name):
        if not st.rolling() or st.event is None or st.event.kind != "LeaderWorkerSet":
            continue
        new = st.newest()
        olds = [sum(replicas(s) for s in st.of(r) if s["labels"].get(DS_REVISION) != new) for r in roles]
        news = [sum(replicas(s) for s in st.of(r, new)) for r in roles]
        row = (*olds, *news)
        if not out or out[-1][1] != row:
            out.append((st.index, row))
    return out


def follows_steps(observed: Sequence[tuple[int, Row]], table: Sequence[Row]) -> str | None:
    """None if the observed rows walk the table in order (rows between two table steps lie
    component-wise between them: one step's writes land one LWS at a time), else why not."""
    k = 0
    for index, row in observed:
        while k + 1 < len(table) and row == table[k + 1]:
            k += 1
        if row == table[k]:
            continue
        nxt = table[k + 1] if k + 1 < len(table) else table[k]
        if not all(min(a, b) <= x <= max(a, b) for x, a, b in zip(row, table[k], nxt, strict=True)):
            return f"event #{index}: replicas {row} is neither step {k} {table[k]} nor on the way to step {k + 1} {nxt}"
    if k != len(table) - 1:
        return f"the rollout stopped at step {k} {table[k]}; the table continues to {table[-1]}"
    return None
