"""Rolling-update invariants: pure functions over a recorded event list (the checking half).

Each invariant replays the events in order and checks the state after EVERY event, returning
every DISTINCT `Violation` (event index, time, objects, invariant, message), earliest first: a
state that stays violated over consecutive checks is one violation, reported at its first event; a
violation after the invariant held again, or a different kind of violation (another check of the
same invariant, another group), is another. Nothing here does I/O, so the harness's own tests feed
synthetic streams and a red suite can be re-checked offline from its saved timeline.

Terms (rollingUpdateParameters below is the rolling-update algorithm of LWS's leader StatefulSet
in pkg/controllers/leaderworkerset_controller.go @v0.9.0; updateConditions/setConditions there
write its status conditions): R = spec.replicas, mu =
maxUnavailable scaled against R rounding down, ms = maxSurge scaled against R rounding up and
capped at R, Burst = R + ms, lwsP = spec.rolloutStrategy.rollingUpdateConfiguration.partition.
A *group* is the set of pods with one
group-index; it is *live* while its leader pod exists without a deletionTimestamp; it is
*available* when the live leader is Running+Ready and size-1 live, Ready workers carry the
leader's template-revision-hash (size from the leader's `size` annotation). The *target* revision
is the leader StatefulSet's template-revision-hash label (LWS writes it with the partition).

The bound on unavailable groups, derived from rollingUpdateParameters: the controller lowers the partition by
`step = mu + ms - (Burst - S)` and keeps `R + max(0, unready - mu)` replicas while the update
runs, so the available groups (surge ones included) never drop below R - mu. Stated over groups:
    |{g < R : g was available before and is not now}| <= mu + |{g >= R : g available}|.
Groups that were never available (new from a scale-up or surge) do not count: the rollout did not
take them down. The bound assumes nothing else breaks groups during the window (no fault
injection); groups already broken by faults are lws#567/PR #488 territory.

Limitations, on purpose: one LWS per check (`lws=` picks it; default the first one seen); a
timeline that starts after the LWS's pods exist cannot tell pod incarnations apart, so the
"previous incarnation" rule skips pods first seen in the initial list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from .replay import (
    State,
    burst_for,
    condition,
    group_of,
    group_size,
    is_leader,
    labels_of,
    live,
    replay,
    rev,
    status_current,
)
from .timeline import NAME, REPLICAS, Event, Obj

# -- violations ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    invariant: str
    index: int  # position in the ordered event list checked
    seq: int  # arrival number in the timeline (Event.seq)
    t: float  # seconds since the timeline started
    event: str  # "MODIFIED Pod/l-3"
    objects: tuple[str, ...]
    message: str
    groups: tuple[int, ...] = ()

    def describe(self) -> str:
        objs = ", ".join(self.objects) or "-"
        return (
            f"invariant '{self.invariant}' violated at event #{self.index} (seq {self.seq}, t={self.t:.3f}s, "
            f"{self.event}): {self.message} [objects: {objs}]"
        )


def _violation(
    name: str, st: State, message: str, objects: Sequence[str] = (), groups: Sequence[int] = ()
) -> Violation:
    ev = st.event
    assert ev is not None
    return Violation(
        name, st.index, ev.seq, ev.t, f"{ev.type} {ev.ref()}", tuple(objects), message, tuple(sorted(groups))
    )


class _Stretches:
    """The distinct violations of one invariant. Each check names a key (a kind of violation, and
    the group or object it is about): a failing check opens a stretch of that key and is reported;
    further failing checks of the same key stay in the stretch; a passing check closes it."""

    def __init__(self) -> None:
        self.found: list[Violation] = []
        self.open: dict[object, int] = {}  # key -> position of its stretch's violation in `found`

    def see(self, key: object, violation: Violation | None) -> None:
        if violation is None:
            self.open.pop(key, None)
        elif key not in self.open:
            self.open[key] = len(self.found)
            self.found.append(violation)

    def result(self) -> list[Violation]:
        return sorted(self.found, key=lambda v: v.index)


# -- the invariants --------------------------------------------------------------------------


def group_atomicity(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """A group never has Ready pods of two template revisions at once, and a Ready leader never
    serves with Ready workers of a previous incarnation of its group (replaced as a whole). One
    violation per group and kind for as long as the group stays so."""
    name = "group-atomicity"
    out = _Stretches()
    for st in replay(events, lws):
        for g in sorted(st.touched):
            pods = [p for p in st.group_pods.get(g, {}).values() if live(p) and p.get("ready")]
            revs = {rev(p) for p in pods}
            mixed = None
            if len(revs) > 1:
                objs = [f"Pod/{p['name']}@{rev(p)}" for p in sorted(pods, key=lambda p: str(p["name"]))]
                msg = f"group {g} has Ready pods of revisions {sorted(map(str, revs))}"
                mixed = _violation(name, st, msg, objs, [g])
            out.see((g, "revisions"), mixed)
            leaders = [p for p in pods if is_leader(p)]
            lseen = st.first_seen.get(str(leaders[0].get("uid")), -1) if leaders else -1
            stale = [
                p
                for p in pods
                if not is_leader(p) and lseen >= 0 and 0 <= st.first_seen.get(str(p.get("uid")), -1) < lseen
            ]
            older = None
            if stale:
                objs = [f"Pod/{leaders[0]['name']} (new leader)"] + [f"Pod/{p['name']} (older)" for p in stale]
                msg = f"group {g}: Ready leader with Ready workers created before it (not replaced whole)"
                older = _violation(name, st, msg, objs, [g])
            out.see((g, "incarnation"), older)
    return out.result()


@dataclass
class _Incarnations:
    """What group_consistency remembers: each leader pod's (revision, size) by uid, the
    resourceVersion of each leader pod's deletion, and the leader pod of each worker StatefulSet
    created after that leader pod was deleted (by uid)."""

    leaders: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    orphans: dict[str, str] = field(default_factory=dict)
    last_leader: dict[int, str] = field(default_factory=dict)  # group -> its latest leader pod's uid
    replaced: set[str] = field(default_factory=set)  # leader pods followed by another leader of their group

    def note_leader(self, g: int, uid: str) -> None:
        before = self.last_leader.get(g)
        if before is not None and before != uid:
            self.replaced.add(before)
        self.last_leader[g] = uid

    def created_orphan(self, ev: Event, owner: str) -> bool:
        """Is `ev` the creation of a worker StatefulSet whose leader pod `owner` was already
        deleted (by resourceVersion, not arrival order: pods and StatefulSets are two watches)?"""
        rv = _rv(ev.obj)
        born_dead = ev.type == "ADDED" and ev.source == "watch" and owner in self.deleted and rv > self.deleted[owner]
        if born_dead:
            self.orphans[str(ev.obj.get("uid"))] = owner
        return born_dead

    def why(self, owner: str) -> str:
        return f"written for leader pod {owner} after its deletion (rv {self.deleted[owner]})"


def _rv(o: Obj) -> int:
    return int(str(o.get("rv") or 0))


def _owner_uid(o: Obj, kind: str) -> str | None:
    k, _, rest = str(o.get("owner") or "").partition("/")
    return rest.rpartition("/")[2] if k == kind else None


def group_consistency(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """No group is rebuilt with mixed revisions (the lws#225 / #280 class of bugs): a worker pod is
    never created at a revision or group size other than its group's live leader's, and a worker
    StatefulSet never carries a revision other than the leader pod that owns it, nor asks for other
    than that leader's size - 1 workers (lws PR #963: a group rebuilt below the partition took its
    size from the live spec). A worker StatefulSet written for a leader pod that was already
    deleted (a controller acting on a stale cache) is checked against the group's live leader, and
    every message says when that happened. Unlike `group_atomicity` this tolerates old workers that
    are merely still being garbage-collected.

    Distinct violations: a worker StatefulSet that stays wrong over its writes is one (per kind,
    revision or size); the workers of one group incarnation created wrong from one StatefulSet
    are one (per kind) until a worker of theirs is created right. A message about a worker
    StatefulSet written for a deleted leader ends with how many of the recording's replaced
    leader pods got one ("in k of n replaced leader pods", and whether that was every one of them):
    the race's picture is some of them, never all."""
    known = _Incarnations()
    out = _Stretches()
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        o = ev.obj
        new_pod = ev.type != "DELETED" and (st.prev_pod is None or st.prev_pod.get("uid") != o.get("uid"))
        if ev.kind == "Pod" and ev.type == "DELETED" and is_leader(o):
            known.deleted.setdefault(str(o.get("uid")), _rv(o))
        elif ev.kind == "Pod" and new_pod:
            for key, v in _worker_mismatch(st, o, known):
                out.see(key, v)
        elif ev.kind == "StatefulSet" and ev.type != "DELETED" and ev.name != st.lws_name:
            for key, v in _worker_sts_mismatch(st, o, known):
                out.see(key, v)
    found = out.result()
    if not known.orphans:
        return found
    # The race's tally: leader pods deleted and followed by another leader of their group, and
    # those of them a worker StatefulSet was written for after their deletion.
    stale = set(known.orphans.values())
    replaced = {uid for uid in known.deleted if uid in known.replaced} | stale
    k, n = len(stale), len(replaced)
    rest = f" (none was written after the deletion of the other {n - k})" if k < n else " (every one of them)"
    tally = f"; in {k} of {n} replaced leader pods{rest}"
    return [replace(v, message=v.message + tally) if _STALE in v.message else v for v in found]


_STALE = "after its deletion (rv "
Check = list[tuple[object, Violation | None]]


def _worker_mismatch(st: State, o: Obj, known: _Incarnations) -> Check:
    """A new pod: remember a leader's (revision, size); check a worker against its live leader."""
    g = group_of(o)
    if g is None or labels_of(o).get(NAME) != st.lws_name:
        return []
    if is_leader(o):
        uid = str(o.get("uid"))
        known.leaders[uid] = (rev(o), group_size(o))
        known.note_leader(g, uid)
        return []
    v = st.views.get(g)
    if v is None or v.leader is None:
        return []
    objs, groups = [f"Pod/{o['name']}", f"Pod/{v.leader['name']}"], [g]
    sts_uid = _owner_uid(o, "StatefulSet") or ""
    orphan = known.orphans.get(sts_uid)
    why = f" (its StatefulSet was {known.why(orphan)})" if orphan else ""
    key = ("worker", g, str(v.leader.get("uid")), sts_uid)
    wrong_rev = wrong_size = None
    if rev(o) != v.revision:
        msg = f"worker created at revision {rev(o)} while leader {v.leader['name']} runs {v.revision}{why}"
        wrong_rev = _violation("group-consistency", st, msg, objs, groups)
    elif group_size(o) != group_size(v.leader):
        msg = (
            f"worker created for group size {group_size(o)} while leader {v.leader['name']} (revision "
            f"{v.revision}) has size {group_size(v.leader)}{why}"
        )
        wrong_size = _violation("group-consistency", st, msg, objs, groups)
    return [((*key, "revision"), wrong_rev), ((*key, "size"), wrong_size)]


def _worker_sts_mismatch(st: State, o: Obj, known: _Incarnations) -> Check:
    """A worker StatefulSet (owned by a leader pod) against that leader's revision and size, or,
    when that leader pod is already deleted, against the group's live leader (if any)."""
    uid = _owner_uid(o, "Pod")
    if uid is None or uid not in known.leaders:
        return []
    key = ("worker-sts", str(o.get("uid")))
    g = group_of(o)
    objs, groups = [f"StatefulSet/{o['name']}", str(o.get("owner"))], [g] if g is not None else []
    want = (o.get("spec") or {}).get("replicas")
    assert st.event is not None
    if known.created_orphan(st.event, uid) or str(o.get("uid")) in known.orphans:
        view = st.views.get(g) if g is not None else None
        if view is None or view.leader is None:
            return []  # no live leader to disagree with; its pods are checked when created
        lrev, lsize, who = view.revision, group_size(view.leader), f"the live leader {view.leader['name']}"
        objs.append(f"Pod/{view.leader['name']}")
        why = known.why(uid) + ": "
    else:
        (lrev, lsize), who, why = known.leaders[uid], "its leader pod", ""
    wrong_rev = wrong_size = None
    if rev(o) != lrev:
        msg = f"worker StatefulSet {why}at revision {rev(o)}, {who} at {lrev}"
        wrong_rev = _violation("group-consistency", st, msg, objs, groups)
    elif isinstance(want, int) and want != lsize - 1:
        msg = f"worker StatefulSet {why}wants {want} workers, {who} (revision {lrev}) has size {lsize}"
        wrong_size = _violation("group-consistency", st, msg, objs, groups)
    return [((*key, "revision"), wrong_rev), ((*key, "size"), wrong_size)]


def group_count_bound(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """Live groups never exceed Burst = R + ms, and the leader StatefulSet never asks for more
    than Burst of the replicas it was written for (its `replicas` annotation). After R shrinks,
    the old Burst stays in force until the group count first fits the new one (the StatefulSet
    controller needs a moment to delete the extra leaders). One violation per stretch of events
    with too many groups, and one per stretch of leader StatefulSet writes asking for too many."""
    name = "group-count-bound"
    out = _Stretches()
    pending = 0
    for st in replay(events, lws):
        p = st.params
        if p is None:
            continue
        ev = st.event
        assert ev is not None
        if ev.kind == "LeaderWorkerSet" and st.prev_params and st.prev_params.burst > p.burst:
            pending = max(pending, st.prev_params.burst)
        groups = st.live_groups()
        bound = max(p.burst, pending)
        many = None
        if len(groups) > bound:
            objs = [f"Pod/{st.leader_name(g)}" for g in groups if g >= p.replicas]
            many = _violation(
                name,
                st,
                f"{len(groups)} live groups {groups} > replicas {p.replicas} + maxSurge {p.max_surge}"
                + (f" (old bound {pending} still in force)" if pending > p.burst else ""),
                objs,
                [g for g in groups if g >= p.replicas],
            )
        out.see("groups", many)
        if len(groups) <= p.burst:
            pending = 0
        if ev.kind == "StatefulSet" and st.leader_sts is ev.obj and st.lws:
            sts = st.leader_sts
            want = (sts.get("spec") or {}).get("replicas")
            try:
                annotated = int((sts.get("annotations") or {}).get(REPLICAS, ""))
            except ValueError:
                continue
            allowed = burst_for(annotated, (st.lws.get("spec") or {}).get("maxSurge", 0))
            asked = None
            if isinstance(want, int) and want > allowed:
                asked = _violation(
                    name,
                    st,
                    f"leader StatefulSet replicas {want} > {allowed} (replicas {annotated} + maxSurge)",
                    [f"StatefulSet/{sts['name']}"],
                )
            out.see("leader-sts", asked)
    return out.result()


def availability_bound(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """Groups taken down never exceed maxUnavailable plus the available surge groups, i.e. at
    least R - mu groups stay available (see the module docstring for the derivation). One
    violation per stretch of events with too few groups available."""
    name = "availability-bound"
    out = _Stretches()
    for st in replay(events, lws):
        p = st.params
        if p is None:
            continue
        down = [g for g in sorted(st.ever_available) if g < p.replicas and not st.views[g].available]
        surge_ok = [g for g in st.available_groups() if g >= p.replicas]
        v = None
        if down and len(down) > p.max_unavailable + len(surge_ok):
            v = _violation(
                name,
                st,
                f"groups {down} unavailable > maxUnavailable {p.max_unavailable} + {len(surge_ok)} available "
                f"surge groups {surge_ok} (R={p.replicas}: fewer than R - maxUnavailable groups available)",
                [f"Pod/{st.leader_name(g)}" for g in down],
                down,
            )
        out.see("bound", v)
    return out.result()


def partition_respected(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """Groups below spec.partition keep their revision; the leader StatefulSet partition never
    goes below spec.partition and, within one rollout (same target revision, same spec
    partition), only moves down (rollingUpdatePartition's min(partition, currentPartition); max(P, lwsP) deferred).

    A raised spec.partition takes effect once the leader StatefulSet's partition reaches it; a
    lowered one at once (the bound can only loosen). Distinct violations: a stretch of leader
    StatefulSet writes below the spec partition, one of writes moving it up, and each group below
    the partition whose new leader came at another revision."""
    name = "partition-respected"
    out = _Stretches()
    eff: int | None = None
    raised: int | None = None
    last_rev: dict[int, tuple[str, str | None]] = {}  # group -> (leader uid, revision)
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        if ev.kind == "LeaderWorkerSet" and st.params:
            new = st.params.partition
            if eff is None or new <= eff:
                eff, raised = new, None
            else:
                raised = new
        elif ev.kind == "StatefulSet" and st.leader_sts is ev.obj and st.leader_sts is not None:
            sts = st.leader_sts
            part = int((sts.get("spec") or {}).get("partition") or 0)
            just_raised = raised is not None and part >= raised
            if raised is not None and just_raised:
                eff, raised = raised, None
            below = None
            if eff is not None and part < eff and st.target() is not None:
                below = _violation(
                    name,
                    st,
                    f"leader StatefulSet partition {part} < spec.partition {eff}",
                    [f"StatefulSet/{sts['name']}"],
                )
            out.see("below", below)
            prev = st.prev_leader_sts
            up = None
            if prev is not None and rev(prev) == rev(sts) and raised is None and not just_raised:
                before = int((prev.get("spec") or {}).get("partition") or 0)
                if part > before:
                    up = _violation(
                        name,
                        st,
                        f"leader StatefulSet partition moved up {before} -> {part} within one rollout",
                        [f"StatefulSet/{sts['name']}"],
                    )
            out.see("moved-up", up)
        elif ev.kind == "Pod" and ev.type != "DELETED" and is_leader(ev.obj) and live(ev.obj):
            g = group_of(ev.obj)
            if g is None:
                continue
            uid, h = str(ev.obj.get("uid")), rev(ev.obj)
            old = last_rev.get(g)
            if old and old[0] != uid:  # a new leader incarnation: the check of this group
                changed = None
                if old[1] != h and eff is not None and g < eff:
                    changed = _violation(
                        name,
                        st,
                        f"group {g} < spec.partition {eff} changed revision {old[1]} -> {h}",
                        [f"Pod/{ev.name}"],
                        [g],
                    )
                out.see(("group", g), changed)
            last_rev[g] = (uid, h)
    return out.result()


def update_order(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """Updates proceed from the highest index down: when a group below R starts updating (its
    leader at an old revision is deleted), every higher group below R is already at the target
    revision or has started updating. Checked at each group's start: one violation per stretch
    of starts out of order within one rollout (target revision)."""
    name = "update-order"
    out = _Stretches()
    target: str | None = None
    started: set[int] = set()
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        if ev.kind == "StatefulSet" and st.leader_sts is not None and st.leader_sts is ev.obj:
            if st.target() != target:
                target, started = st.target(), set()
            continue
        if ev.kind != "Pod" or not is_leader(ev.obj) or target is None or st.params is None:
            continue
        g = group_of(ev.obj)
        if g is None or g >= st.params.replicas or rev(ev.obj) == target or g in started:
            continue
        if ev.type != "DELETED" and live(ev.obj):
            continue  # not being replaced
        started.add(g)
        laggards = [
            h
            for h in range(g + 1, st.params.replicas)
            if h not in started and (v := st.views.get(h)) and v.leader is not None and v.revision != target
        ]
        early = None
        if laggards:
            early = _violation(
                name,
                st,
                f"group {g} started updating to {target} while higher groups {laggards} still run an old revision",
                [f"Pod/{ev.name}"] + [f"Pod/{st.leader_name(h)}" for h in laggards],
                [g, *laggards],
            )
        out.see(("order", target), early)
    return out.result()


def conditions(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """The updateConditions state machine, at every status the controller wrote for the current spec:
    Available excludes Progressing and UpdateInProgress; Available means readyReplicas >= R and
    updatedReplicas >= R - min(partition, R); UpdateInProgress never appears before the template
    first changed (#490). (That UpdateInProgress comes with Progressing is `condition_pairing`.)
    One violation per rule and stretch of consecutive such status writes breaking it."""
    name = "conditions"
    out = _Stretches()
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        if ev.kind != "LeaderWorkerSet" or ev.type == "DELETED" or st.lws is None or st.params is None:
            continue
        o, p = st.lws, st.params
        if not status_current(o):
            continue
        av, pr, up = (condition(o, c) == "True" for c in ("Available", "Progressing", "UpdateInProgress"))
        status = o.get("status") or {}
        ref = [f"LeaderWorkerSet/{o['name']}"]
        exclusive = counts = early = None
        if av and (pr or up):
            exclusive = _violation(
                name,
                st,
                f"Available=True together with {'Progressing' if pr else 'UpdateInProgress'}"
                f"=True: {status.get('conditions')}",
                ref,
            )
        need_updated = p.replicas - min(p.partition, p.replicas)
        if av and (status.get("readyReplicas", 0) < p.replicas or status.get("updatedReplicas", 0) < need_updated):
            counts = _violation(
                name,
                st,
                f"Available=True with readyReplicas {status.get('readyReplicas')} / updatedReplicas "
                f"{status.get('updatedReplicas')} (need >= {p.replicas} / >= {need_updated})",
                ref,
            )
        if up and len(st.templates) < 2:
            early = _violation(name, st, "UpdateInProgress=True although the template never changed", ref)
        out.see("exclusive", exclusive)
        out.see("counts", counts)
        out.see("update-before-change", early)
    return out.result()


def condition_pairing(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """updateConditions: while updated < current, UpdateInProgress=True and Progressing=True -- every status the
    controller writes with UpdateInProgress=True also has Progressing=True. One violation per
    stretch of consecutive status writes missing the pairing (LWS v0.9.0 misses it for exactly
    one write at the start of every update: the `||` in setConditions); each says how many
    writes it lasted, whether a later status paired them (or ended the update) and whether it
    began at the update's first status write (the previous current status without UpdateInProgress)."""
    name = "condition-pairing"
    found: list[Violation] = []
    first: Violation | None = None
    lasted = 0
    was_updating = False  # the previous current status reported UpdateInProgress=True
    for st in replay(events, lws):
        ev = st.event
        assert ev is not None
        if ev.kind != "LeaderWorkerSet" or ev.type == "DELETED" or st.lws is None or not status_current(st.lws):
            continue
        updating = condition(st.lws, "UpdateInProgress") == "True"
        unpaired = updating and condition(st.lws, "Progressing") != "True"
        opens, was_updating = not was_updating, updating
        if first is None and unpaired:
            conds = (st.lws.get("status") or {}).get("conditions")
            ref = [f"LeaderWorkerSet/{st.lws['name']}"]
            at = "at the update's first status write" if opens else "within an update"
            message = f"UpdateInProgress=True without Progressing=True {at}: {conds}"
            first, lasted = _violation(name, st, message, ref), 0
        if first is not None:
            if unpaired:
                lasted += 1
                continue
            how = f"then paired at seq {ev.seq}" if condition(st.lws, "UpdateInProgress") == "True" else "then ended"
            found.append(replace(first, message=f"{first.message}; lasted {lasted} status write(s), {how}"))
            first = None
    if first is not None:
        found.append(replace(first, message=f"{first.message}; lasted {lasted} status write(s), never paired"))
    return found


def surge_reclaimed(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """Surge groups are removed when the update completes: once a status with Available=True and
    partition 0 is written, the leader StatefulSet must be back at R replicas by the end of the
    recording. Not per event: v0.9.0 computes the replica count from the state read at the start
    of a reconcile and the conditions from pods listed later, so Available may be written one
    reconcile before the surge is reclaimed (updateConditions counts only non-surge groups), which is fine.
    At most one violation: the end of the recording is one state."""
    name = "surge-reclaimed"
    pending: State | None = None  # the first "complete" status whose surge is still wanted
    for st in replay(events, lws):
        if st.lws is None or st.params is None or st.leader_sts is None:
            continue
        o, p = st.lws, st.params
        want = (st.leader_sts.get("spec") or {}).get("replicas")
        complete = status_current(o) and condition(o, "Available") == "True" and p.partition == 0
        if want == p.replicas or not complete:
            pending = None if want == p.replicas else pending
        elif pending is None:
            pending = st
    if pending is None:
        return []
    assert pending.lws is not None and pending.params is not None and pending.leader_sts is not None
    want = (pending.leader_sts.get("spec") or {}).get("replicas")
    objs = [f"LeaderWorkerSet/{pending.lws['name']}", f"StatefulSet/{pending.leader_sts['name']}"]
    return [
        _violation(
            name,
            pending,
            f"Available=True with partition 0 while the leader StatefulSet still wants {want} replicas "
            f"(R={pending.params.replicas}), and the surge was never reclaimed",
            objs,
        )
    ]


def completion(events: Sequence[Event], lws: str | None = None) -> list[Violation]:
    """The final state once the update has settled: every group in [partition, R) is at the
    target revision, available, and whole (no worker of an older incarnation); with partition 0
    no surge group remains; status counts equal what the pods show; Available=True,
    Progressing and UpdateInProgress not True. Checked after the last event only: at most one
    violation, listing every problem of that final state."""
    name = "completion"
    last: State | None = None
    for st in replay(events, lws):
        last = st
    if last is None or last.lws is None or last.params is None:
        return []
    st, o, p = last, last.lws, last.params
    ref = [f"LeaderWorkerSet/{o['name']}"]
    if not status_current(o):
        return [
            _violation(
                name,
                st,
                f"status.observedGeneration {(o.get('status') or {}).get('observedGeneration')} "
                f"!= generation {o.get('generation')} at the end",
                ref,
            )
        ]
    target = st.target()
    problems: list[str] = []
    bad: list[int] = []
    for g in range(min(p.partition, p.replicas), p.replicas):
        v = st.views.get(g)
        if v is None or v.leader is None or v.revision != target or not v.available:
            problems.append(
                f"group {g} "
                + ("missing" if v is None or v.leader is None else f"revision {v.revision} available={v.available}")
            )
            bad.append(g)
            continue
        lseen = st.first_seen.get(str(v.leader.get("uid")), -1)
        for w in st.group_pods.get(g, {}).values():
            if (
                not is_leader(w)
                and live(w)
                and (rev(w) != target or 0 <= st.first_seen.get(str(w.get("uid")), -1) < lseen)
            ):
                problems.append(f"group {g} keeps worker {w['name']} of an older revision/incarnation")
                bad.append(g)
    groups = st.live_groups()
    surge = [g for g in groups if g >= p.replicas]
    if p.partition == 0 and surge:
        problems.append(f"surge groups {surge} remain after the update completed")
        bad.extend(surge)
    status = o.get("status") or {}
    updated = [g for g in groups if st.views[g].revision == target]
    expect = {"replicas": len(groups), "readyReplicas": len(st.available_groups()), "updatedReplicas": len(updated)}
    for key, seen in expect.items():
        if status.get(key, 0) != seen:
            problems.append(f"status.{key} {status.get(key, 0)} != {seen} seen in pods")
    if condition(o, "Available") != "True" or "True" in (condition(o, "Progressing"), condition(o, "UpdateInProgress")):
        problems.append(f"conditions {status.get('conditions')} (want Available only)")
    if problems:
        return [_violation(name, st, "; ".join(problems), ref + [f"Pod/{st.leader_name(g)}" for g in bad], bad)]
    return []


Invariant = Callable[[Sequence[Event], str | None], list[Violation]]
EVERY_EVENT: dict[str, Invariant] = {
    "group-atomicity": group_atomicity,
    "group-consistency": group_consistency,
    "group-count-bound": group_count_bound,
    "availability-bound": availability_bound,
    "partition-respected": partition_respected,
    "update-order": update_order,
    "conditions": conditions,
    "condition-pairing": condition_pairing,
    "surge-reclaimed": surge_reclaimed,
}
ALL: dict[str, Invariant] = {**EVERY_EVENT, "completion": completion}


def check_all(
    events: Sequence[Event], lws: str | None = None, *, final: bool = True, only: Sequence[str] | None = None
) -> list[Violation]:
    """Every distinct violation of every invariant, earliest first (ties in the order of `ALL`).
    `final=False` skips `completion`
    (for a timeline cut off mid-rollout); `only` restricts the check to the named invariants."""
    chosen = {k: f for k, f in (ALL if final else EVERY_EVENT).items() if only is None or k in only}
    unknown = set(only or ()) - set(ALL)
    if unknown:
        raise ValueError(f"unknown invariants {sorted(unknown)}; known: {sorted(ALL)}")
    found = [v for f in chosen.values() for v in f(events, lws)]
    return sorted(found, key=lambda v: v.index)
