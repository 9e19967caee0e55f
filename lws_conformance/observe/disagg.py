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
  any other LWS is rescaled, none grows again, and none is deleted while a sibling has replicas;
- `ds-services-kept`: no Service of a revision (recorded when the timeline has Services) is
  deleted while every role of the set's spec has an LWS of that revision with a ready replica:
  a revision that still serves in every role keeps the Services a load balancer routes by;
- `ds-decoupled`: no step rescales both an old- and a new-revision LWS. A step is what the
  controller writes between two observations of the new revision stable (every role's LWS with
  readyReplicas == replicas, the controller's own gate before it computes the next step); a step
  that grows new makes it unstable at once, so an old LWS rescaled before it is stable again was
  written by the same step. (An old-only step followed by a new-only one keeps the new revision
  stable in between and is, rightly, two steps.)

Each distinct violation is reported: a checker names a key per thing it checks (a role, an LWS, a
step, a kind of violation); a failing check opens a stretch of its key and is reported, further
failing checks of that key stay in it, a passing one closes it. So a violation that lasts over
consecutive events is one, and one that returns after the property held again is another.

`table_divergences` compares the observed (old, new) replicas per role with a documented step
table.
The limits are the controller's: without a rollingUpdateConfiguration maxSurge 1, maxUnavailable 0;
with one, values scaled against the role's replicas (surge rounded up, unavailable down), and a
zero maxUnavailable keeps the default maxUnavailable 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .invariants import Violation
from .timeline import DS_NAME, DS_REVISION, DS_ROLE, GROUP_INDEX, NAME, Event, Obj

INVARIANTS = ("ds-surge", "ds-availability", "ds-stability", "ds-drain", "ds-decoupled", "ds-services-kept")


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
    services: dict[str, Obj] = field(default_factory=dict)
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


def new_revision_stable(st: DsState) -> bool:
    """Every role has a newest-revision LWS and each has readyReplicas == replicas."""
    new = st.of(revision=st.newest())
    roles = set(st.roles())
    have = {(s.get("labels") or {}).get(DS_ROLE) for s in new}
    return bool(roles) and roles <= have and all(stable(s) for s in new)


def replay(events: Sequence[Event], ds_name: str) -> Iterator[DsState]:
    """Yield the state after each event concerning `ds_name` (its DisaggregatedSet, LWSs, pods,
    Services)."""
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
        elif ev.kind in ("Pod", "Service") and labels.get(DS_NAME) == ds_name:
            into = st.pods if ev.kind == "Pod" else st.services
            if gone:
                into.pop(ev.name, None)
            else:
                into[ev.name] = ev.obj
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


Checked = Iterator[tuple[object, Violation | None]]  # (key, its violation, or None: the key holds)


def check(events: Sequence[Event], ds_name: str, only: Sequence[str] | None = None) -> list[Violation]:
    """Every distinct violation of the named invariants (default: all), earliest first: one per
    stretch of consecutive failing checks of one key (see the module docstring)."""
    names = set(only if only is not None else INVARIANTS)
    checkers: list[_Checker] = [
        c for c in (_Surge(), _Availability(), _Stability(), _Drain(), _Decoupled(), _ServicesKept()) if c.name in names
    ]
    found: list[Violation] = []
    open_: set[tuple[str, object]] = set()

    def see(name: str, results: Checked) -> None:
        for key, v in results:
            if v is None:
                open_.discard((name, key))
            elif (name, key) not in open_:
                open_.add((name, key))
                found.append(v)

    for st in replay(events, ds_name):
        for c in checkers:
            see(c.name, c.step(st))
    for c in checkers:
        see(c.name, c.finish())
    return sorted(found, key=lambda v: v.index)


class _Checker:
    name = ""

    def step(self, st: DsState) -> Checked:
        raise NotImplementedError

    def finish(self) -> Checked:
        """What the end of the timeline concludes (a check that reports when something ends)."""
        return iter(())


class _Surge(_Checker):
    name = "ds-surge"

    def step(self, st: DsState) -> Checked:
        if st.event is None or st.event.kind != "LeaderWorkerSet":
            return
        rolling = st.rolling()
        for role, lim in st.roles().items():
            mine = st.of(role)
            total = sum(replicas(s) for s in mine)
            if not rolling or total <= lim.replicas + lim.max_surge:
                yield role, None
            else:
                parts = ", ".join(f"{s['name']}={replicas(s)}" for s in mine)
                msg = (
                    f"role {role}: old + new replicas {total} > replicas {lim.replicas} + maxSurge "
                    f"{lim.max_surge} ({parts})"
                )
                yield role, _violation(self.name, st, msg, [f"LeaderWorkerSet/{s['name']}" for s in mine])


class _Availability(_Checker):
    name = "ds-availability"

    def __init__(self) -> None:
        self.watched: dict[str, Limits] | None = None  # roles checked in this rollout

    def step(self, st: DsState) -> Checked:
        if not st.rolling():
            for role in self.watched or {}:
                yield role, None
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
            if ready >= floor:
                yield role, None
            else:
                msg = (
                    f"role {role}: {ready} ready groups < replicas {lim.replicas} - maxUnavailable "
                    f"{lim.max_unavailable}"
                )
                yield role, _violation(self.name, st, msg, [f"LeaderWorkerSet/{s['name']}" for s in st.of(role)])


class _Stability(_Checker):
    name = "ds-stability"

    def __init__(self) -> None:
        self.last: dict[str, int] = {}  # LWS -> replicas last seen
        self.unconfirmed: set[str] = set()  # LWSs rescaled with no stable state seen since

    def step(self, st: DsState) -> Checked:
        ev = st.event
        if ev is not None and ev.kind == "LeaderWorkerSet" and ev.name in st.lws:
            now, before = replicas(st.lws[ev.name]), self.last.get(ev.name)
            self.last[ev.name] = now
            if before is not None and now != before and st.rolling():
                if ev.name not in self.unconfirmed:
                    yield ev.name, None
                else:
                    msg = (
                        f"{ev.name} rescaled {before} -> {now} before every new-revision LWS was seen with "
                        f"readyReplicas == replicas since its previous rescale"
                    )
                    yield ev.name, _violation(self.name, st, msg, [f"LeaderWorkerSet/{ev.name}"])
                self.unconfirmed.add(ev.name)
        if new_revision_stable(st):
            for name in self.unconfirmed:
                yield name, None
            self.unconfirmed.clear()


class _Drain(_Checker):
    name = "ds-drain"

    def __init__(self) -> None:
        self.draining: set[str] = set()  # old revisions with a role at 0
        self.last: dict[str, int] = {}

    def step(self, st: DsState) -> Checked:
        """Keys: ("deleted", LWS), ("grew", LWS, revision), ("half-drained", LWS, revision); each
        is checked (and holds or not) at every deletion or rescale of that LWS."""
        ev = st.event
        if ev is None or ev.kind != "LeaderWorkerSet":
            return
        labels = ev.obj.get("labels") or {}
        rev, now = str(labels.get(DS_REVISION)), replicas(ev.obj)
        before = self.last.get(ev.name)
        self.last[ev.name] = now
        if ev.type == "DELETED" or ev.obj.get("deleting"):
            busy = [s["name"] for s in st.of(revision=rev) if s["name"] != ev.name and replicas(s) > 0]
            msg = f"{ev.name} deleted while {busy} of revision {rev} still have replicas"
            yield ("deleted", ev.name), _violation(self.name, st, msg, busy) if busy else None
            return
        if before is None or before == now:
            return
        for old in sorted(self.draining):
            pending = [s["name"] for s in st.of(revision=old) if replicas(s) > 0]
            grew = rev == old and now > before
            msg = f"{ev.name} of draining revision {old} grew {before} -> {now}"
            yield ("grew", ev.name, old), _violation(self.name, st, msg) if grew else None
            half = rev != old and bool(pending)
            msg = f"{ev.name} rescaled {before} -> {now} while revision {old} was half drained ({pending} > 0)"
            objs = [f"LeaderWorkerSet/{n}" for n in pending]
            yield ("half-drained", ev.name, old), _violation(self.name, st, msg, objs) if half else None
        if rev != st.newest() and now == 0:
            self.draining.add(rev)
        self.draining = {r for r in self.draining if any(replicas(s) > 0 for s in st.of(revision=r))}


class _ServicesKept(_Checker):
    name = "ds-services-kept"

    def step(self, st: DsState) -> Checked:
        """Key: the Service; checked at its deletion (or its deletionTimestamp) while the set exists."""
        ev = st.event
        if ev is None or ev.kind != "Service" or not (ev.type == "DELETED" or ev.obj.get("deleting")):
            return
        if st.ds is None or st.ds.get("deleting"):
            return
        rev = str((ev.obj.get("labels") or {}).get(DS_REVISION))
        ready: dict[str, int] = {}
        for s in st.of(revision=rev):
            role = str((s.get("labels") or {}).get(DS_ROLE))
            ready[role] = ready.get(role, 0) + int((s.get("status") or {}).get("readyReplicas", 0))
        roles = sorted(st.roles())
        serving = bool(roles) and all(ready.get(r, 0) >= 1 for r in roles)
        msg = (
            f"Service {ev.name} of revision {rev} deleted while every role of that revision still has a "
            f"ready replica (readyReplicas {ready})"
        )
        yield ev.name, _violation(self.name, st, msg, [f"Service/{ev.name}"]) if serving else None


def row(st: DsState, roles: Sequence[str]) -> Row:
    """(old replicas per role..., new replicas per role...): old = every revision but the newest."""
    new = st.newest()
    olds = [sum(replicas(s) for s in st.of(r) if s["labels"].get(DS_REVISION) != new) for r in roles]
    news = [sum(replicas(s) for s in st.of(r, new)) for r in roles]
    return (*olds, *news)


def row_names(roles: Sequence[str]) -> str:
    return "(" + ", ".join([f"old {r}" for r in roles] + [f"new {r}" for r in roles]) + ")"


class _Decoupled(_Checker):
    """A step that rescales both an old- and a new-revision LWS (see the module docstring). Reported
    when the step ends (the new revision seen stable, or the timeline's end) with all its writes,
    at the event where its second side was first written."""

    name = "ds-decoupled"

    def __init__(self) -> None:
        self.last: dict[str, int] = {}  # LWS -> replicas last seen
        self.start: Row | None = None  # the replicas when the current step began
        self.rows: list[Row] = []  # the replicas after each write of the current step
        self.writes: list[str] = []  # "new kep-x-prefill 2 -> 4", in order
        self.sides: set[str] = set()
        self.both: Violation | None = None  # the step's first write of its second side
        self.roles: list[str] = []
        self.steps = 0

    def step(self, st: DsState) -> Checked:
        ev = st.event
        roles = list(st.roles()) or self.roles
        self.roles = roles
        if ev is not None and ev.kind == "LeaderWorkerSet" and ev.type != "DELETED" and ev.name in st.lws:
            now, before = replicas(ev.obj), self.last.get(ev.name)
            self.last[ev.name] = now
            if before is not None and now != before and st.rolling():
                side = "new" if (ev.obj.get("labels") or {}).get(DS_REVISION) == st.newest() else "old"
                self.sides.add(side)
                self.writes.append(f"{side} {ev.name} {before} -> {now}")
                self.rows.append(row(st, roles))
                if len(self.sides) == 2 and self.both is None:
                    self.both = _violation(self.name, st, "", [f"LeaderWorkerSet/{ev.name}"])
        if new_revision_stable(st) or not st.rolling():
            yield from self._end()
            self.start = row(st, roles) if roles else None

    def finish(self) -> Checked:
        return self._end()

    def _end(self) -> Checked:
        both, rows, writes, start = self.both, self.rows, self.writes, self.start
        self.both, self.rows, self.writes, self.sides = None, [], [], set()
        if both is None:
            return
        self.steps += 1
        walk = " -> ".join(str(r) for r in ([start] if start is not None else []) + rows)
        msg = (
            f"one step rescaled both old and new revisions, the new revision not ready in between: replicas "
            f"{row_names(self.roles)} {walk} ({', '.join(writes)})"
        )
        objects = dict.fromkeys(f"LeaderWorkerSet/{w.split()[1]}" for w in writes)  # in order of first write
        yield self.steps, replace(both, message=msg, objects=tuple(objects))


# -- the documented step table ------------------------------------------------------------------
Row = tuple[int, ...]  # (old role0, old role1, ..., new role0, new role1, ...)
# KEP-766 Example 1 (LWS v0.9.0 README L187-L201: prefill 5, decode 2, maxSurge 2, maxUnavailable 1)
# as (old prefill, old decode, new prefill, new decode): the steps ROLL-DSSTEP-002 compares a rollout with.
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
        now = row(st, roles)
        if not out or out[-1][1] != now:
            out.append((st.index, now))
    return out


def table_divergences(observed: Sequence[tuple[int, Row]], table: Sequence[Row]) -> list[str]:
    """Every distinct way the observed rows leave the table, in order ([] if they walk it). Rows
    between two consecutive table steps lie component-wise between them (one step's writes land
    one LWS at a time); a divergence is a stretch of rows that are neither a step nor on the way
    to the next, or a jump over steps, up to the table step the walk rejoins; the walk must end at
    the table's last step."""

    def between(r: Row, a: Row, b: Row) -> bool:
        return all(min(x, y) <= v <= max(x, y) for v, x, y in zip(r, a, b, strict=True))

    def rows(off: list[tuple[int, Row]]) -> str:
        return ", ".join(str(r) for _, r in off)

    out: list[str] = []
    k = 0
    off: list[tuple[int, Row]] = []  # rows off the table since step k
    for index, now in observed:
        if now == table[k] and not off:
            continue
        j = next((j for j in range(k, len(table)) if table[j] == now), None)
        if j is None:
            if not off and k + 1 < len(table) and between(now, table[k], table[k + 1]):
                continue
            off.append((index, now))
            continue
        skipped = ", ".join(f"step {m} {table[m]}" for m in range(k + 1, j))
        if off:
            to = f"back to step {j}" if j == k else f"to step {j} {table[j]}"
            why = f"not through {skipped}" if skipped else "neither a step nor on the way between them"
            out.append(
                f"from step {k} {table[k]} the replicas went through {rows(off)} (from event #{off[0][0]}) {to}, {why}"
            )
        elif j > k + 1:
            out.append(
                f"from step {k} {table[k]} straight to step {j} {table[j]} at event #{index}, not through {skipped}"
            )
        k, off = j, []
    if off:
        out.append(
            f"from step {k} {table[k]} the replicas went through {rows(off)} (from event #{off[0][0]}) "
            "and never rejoined the table"
        )
    elif k != len(table) - 1:
        out.append(f"the rollout stopped at step {k} {table[k]}; the table continues to {table[-1]}")
    return out
