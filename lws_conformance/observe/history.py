"""Checks over a recording's watch history (events recorded by `lws_conformance.observe`).

Events come ordered by resourceVersion (`Timeline.ordered()`), the order the API server wrote
them, so "A before B" is exact even when both happen within one second (timestamps in object
metadata have 1 s resolution). Each event's `obj` is the timeline's compact snapshot: name, uid,
rv, the LWS labels, `deleting`; pods add `phase`, `ready`, `node`, `gated`; LWS and Workloads add
`status.conditions` as {type: status}. Events whose `source` is "list" are the state when the
recording started: they are applied together, before any check, since a list is not a history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..k8s.predicates import GROUP_INDEX, NAME_LABEL, REVISION_LABEL, WORKER_INDEX

Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")


class WatchEvent(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def obj(self) -> Obj: ...
    @property
    def source(self) -> str: ...


def _labels(snap: Obj) -> dict[str, str]:
    labels: dict[str, str] = snap.get("labels") or {}
    return labels


def _conds(snap: Obj) -> dict[str, str]:
    conds: dict[str, str] = (snap.get("status") or {}).get("conditions") or {}
    return conds


def _split(events: Sequence[WatchEvent]) -> tuple[list[WatchEvent], list[WatchEvent]]:
    """(the initial list, the watched history)."""
    return [e for e in events if e.source == "list"], [e for e in events if e.source != "list"]


def _ref(e: WatchEvent) -> str:
    return f"{e.type} {e.kind}/{e.obj.get('name')} rv {e.obj.get('rv')}"


def _against_start(
    events: Sequence[WatchEvent], mine: Callable[[WatchEvent], bool]
) -> tuple[dict[tuple[str, str], WatchEvent], list[tuple[WatchEvent, WatchEvent | None]]]:
    """For "nothing may change" checks: the objects `mine` selects as the recording found them
    (by kind and name), and each later write to one of them with its starting state (None: an
    object that was not there)."""
    initial, history = _split(events)
    start = {(e.kind, str(e.obj.get("name"))): e for e in initial if mine(e)}
    return start, [(e, start.get((e.kind, str(e.obj.get("name"))))) for e in history if mine(e)]


def lws_condition_history(events: Sequence[WatchEvent], name: str) -> list[dict[str, str]]:
    """The successive condition sets (type -> status) LeaderWorkerSet `name` reported, in write
    order, with repeats of the same set dropped."""
    out: list[dict[str, str]] = []
    for e in events:
        if e.kind == "LeaderWorkerSet" and e.obj.get("name") == name and e.type != "DELETED":
            conds = _conds(e.obj)
            if not out or out[-1] != conds:
                out.append(conds)
    return out


def progressing_then_available(history: Sequence[dict[str, str]]) -> list[str]:
    """What is wrong with a new LWS's condition history (LWS-STATUS-001): the first conditions
    written must be Progressing=True without Available=True; Available=True must come later, with
    Progressing flipped to False in that same write; never both True; never UpdateInProgress."""
    states = [c for c in history if c]
    if not states:
        return ["no conditions were ever written"]
    out = []
    first = states[0]
    if first.get("Progressing") != "True" or first.get("Available") == "True":
        out.append(f"first conditions written were {first}, not Progressing=True without Available=True")
    avail = next((i for i, c in enumerate(states) if c.get("Available") == "True"), None)
    if avail is None:
        out.append(f"Available=True never written (history {states})")
    elif states[avail].get("Progressing") != "False":
        out.append(f"Available=True written with Progressing={states[avail].get('Progressing')}, not False")
    out += [
        f"Available and Progressing both True in {c}"
        for c in states
        if c.get("Available") == c.get("Progressing") == "True"
    ]
    out += [f"UpdateInProgress set on a new LWS: {c}" for c in states if "UpdateInProgress" in c]
    return out


def _first(events: Sequence[WatchEvent], match: Callable[[WatchEvent], bool]) -> int | None:
    return next((i for i, e in enumerate(events) if match(e)), None)


def workers_before_leader_ready(events: Sequence[WatchEvent], lws_name: str, group: int) -> list[str]:
    """LeaderReady (LWS-STARTUP-002): no worker StatefulSet `L-i` and no worker pod `L-i-j` may be
    written before the write that made leader pod `L-i` Ready; and the worker StatefulSet must
    exist in the end."""
    leader = f"{lws_name}-{group}"
    ready_at = _first(events, lambda e: e.kind == "Pod" and e.obj.get("name") == leader and bool(e.obj.get("ready")))

    def worker(e: WatchEvent) -> bool:
        if e.kind == "StatefulSet":
            return e.obj.get("name") == leader
        labels = _labels(e.obj)
        return (
            e.kind == "Pod"
            and labels.get(NAME_LABEL) == lws_name
            and labels.get(GROUP_INDEX) == str(group)
            and labels.get(WORKER_INDEX, "0") != "0"
        )

    out = []
    seen: set[str] = set()
    for i, e in enumerate(events):
        key = f"{e.kind}/{e.obj.get('name')}"
        if worker(e) and key not in seen:
            seen.add(key)
            if ready_at is None or i < ready_at:
                when = (
                    "the leader never became Ready" if ready_at is None else f"leader Ready at {_ref(events[ready_at])}"
                )
                out.append(f"{_ref(e)} written before leader {leader} was Ready ({when})")
    if f"StatefulSet/{leader}" not in seen:
        out.append(f"worker StatefulSet {leader} was never created")
    return out


def _admitted(workload: str) -> Callable[[WatchEvent], bool]:
    def match(e: WatchEvent) -> bool:
        return e.kind == "Workload" and e.obj.get("name") == workload and _conds(e.obj).get("Admitted") == "True"

    return match


def released_before_admission(
    events: Sequence[WatchEvent], lws_name: str, groups: Iterable[int], workload_of: Callable[[int], str]
) -> list[str]:
    """KUEUE-SCALE-001: every pod of the new groups must be created behind a scheduling gate and
    stay gated until the write that made its group's Workload Admitted=True."""
    out = []
    for g in groups:

        def member(snap: Obj, g: int = g) -> bool:
            labels = _labels(snap)
            return labels.get(NAME_LABEL) == lws_name and labels.get(GROUP_INDEX) == str(g)

        out += gated_until_admitted(events, member, f"group {g}", workload_of(g))
    return out


def gated_until_admitted(
    events: Sequence[WatchEvent], member: Callable[[Obj], bool], what: str, workload: str
) -> list[str]:
    """The pods `member` selects (one unit of admission, `what`) must each be created behind a
    scheduling gate and stay gated until the write that made Workload `workload` Admitted=True."""
    admitted_at = _first(events, _admitted(workload))
    first_seen: set[str] = set()
    out = []
    for i, e in enumerate(events):
        if e.kind != "Pod" or not member(e.obj):
            continue
        name = str(e.obj.get("name"))
        if name not in first_seen:
            first_seen.add(name)
            if not e.obj.get("gated"):
                out.append(f"pod {name} of {what} first seen without a scheduling gate ({_ref(e)})")
        if e.type != "DELETED" and not e.obj.get("gated") and (admitted_at is None or i < admitted_at):
            out.append(f"pod {name} of {what} ungated ({_ref(e)}) before Workload {workload} was Admitted")
    if not first_seen:
        out.append(f"no pod of {what} was seen")
    return out


def _released(pod: Obj) -> bool:
    """A pod Kueue let through that still holds (or will hold) node resources: ungated and not
    terminal, terminating ones included (they are on a node until they are gone)."""
    return not pod.get("gated") and pod.get("phase") not in TERMINAL


def quota_violations(
    events: Sequence[WatchEvent],
    quota: int,
    pod_cost: Callable[[Obj], int],
    workload_cost: Callable[[Obj], int],
    workload_of_pod: Callable[[Obj], str | None],
) -> list[str]:
    """KUEUE-UPDATE-001, after every event: the pods released from the gate must request at most
    `quota`, the Workloads holding quota (QuotaReserved=True) must need at most `quota`, and every
    released pod's Workload must hold quota. Returns the first violation of each kind."""
    initial, history = _split(events)
    pods: dict[str, Obj] = {}
    wls: dict[str, Obj] = {}
    found: dict[str, str] = {}

    def apply(e: WatchEvent) -> None:
        store = pods if e.kind == "Pod" else wls if e.kind == "Workload" else None
        if store is not None:
            name = str(e.obj.get("name"))
            if e.type == "DELETED":
                store.pop(name, None)
            else:
                store[name] = e.obj

    def check(at: str) -> None:
        released = [p for p in pods.values() if _released(p)]
        reserving = {n for n, w in wls.items() if _conds(w).get("QuotaReserved") == "True"}
        used = sum(pod_cost(p) for p in released)
        held = sum(workload_cost(wls[n]) for n in reserving)
        names = " ".join(sorted(str(p.get("name")) for p in released))
        if used > quota:
            found.setdefault("pods", f"{at}: released pods request {used} > quota {quota}: {names}")
        if held > quota:
            found.setdefault(
                "workloads", f"{at}: QuotaReserved Workloads need {held} > quota {quota}: {sorted(reserving)}"
            )
        for p in released:
            wl = workload_of_pod(p)
            if wl not in reserving:
                found.setdefault(
                    "unreserved", f"{at}: pod {p.get('name')} released while its Workload {wl} holds no quota"
                )

    for e in initial:
        apply(e)
    check("at the start of the recording")
    for e in history:
        apply(e)
        check(_ref(e))
    return list(found.values())


def group_disturbances(events: Sequence[WatchEvent], lws_name: str, group: int, size: int, workload: str) -> list[str]:
    """CHAOS-EXP-003: an admitted group left alone must be untouched for the whole recording: its
    `size` pods Ready, ungated, never deleted or replaced, and its Workload Admitted and holding
    quota, never Evicted, Preempted or deleted. Returns what happened to it, in order."""
    initial, history = _split(events)

    def mine(e: WatchEvent) -> bool:
        labels = _labels(e.obj)
        if e.kind == "Workload":
            return e.obj.get("name") == workload
        return e.kind == "Pod" and labels.get(NAME_LABEL) == lws_name and labels.get(GROUP_INDEX) == str(group)

    def wrong(e: WatchEvent) -> str | None:
        o = e.obj
        if e.kind == "Pod":
            bad = [
                k
                for k, v in (
                    ("deleted", e.type == "DELETED"),
                    ("deleting", o.get("deleting")),
                    ("not Ready", not o.get("ready")),
                    ("gated", o.get("gated")),
                )
                if v
            ]
        else:
            c = _conds(o)
            bad = [
                k
                for k, v in (
                    ("deleted", e.type == "DELETED"),
                    ("not Admitted", c.get("Admitted") != "True"),
                    ("no quota", c.get("QuotaReserved") != "True"),
                    ("Evicted", c.get("Evicted") == "True"),
                    ("Preempted", c.get("Preempted") == "True"),
                )
                if v
            ]
        return f"{_ref(e)}: {', '.join(bad)}" if bad else None

    start = [e for e in initial if mine(e)]
    uids = {str(e.obj.get("name")): e.obj.get("uid") for e in start if e.kind == "Pod"}
    out = [w for e in start if (w := wrong(e))]
    if len(uids) != size or not any(e.kind == "Workload" for e in start):
        out.append(f"group {group} was not whole and admitted when the recording started: {sorted(uids)}")
    for e in history:
        if not mine(e):
            continue
        if e.kind == "Pod" and uids.get(str(e.obj.get("name"))) != e.obj.get("uid"):
            out.append(f"{_ref(e)}: a new pod in the group")
        elif w := wrong(e):
            out.append(w)
    return out


def upgrade_disturbances(events: Sequence[WatchEvent], lws_name: str) -> list[str]:
    """LWS-UPGRADE-001: while the controller is replaced, LWS `lws_name` must be left exactly as it
    was when the recording started (its groups whole and Ready): no pod deleted, replaced or not
    Ready, no pod or StatefulSet on another template revision, no StatefulSet partition or replica
    change, the LWS Available=True without UpdateInProgress=True. Returns every disturbance, in order."""

    def mine(e: WatchEvent) -> bool:
        if e.kind == "LeaderWorkerSet":
            return e.obj.get("name") == lws_name
        return e.kind in ("Pod", "StatefulSet") and _labels(e.obj).get(NAME_LABEL) == lws_name

    def state(e: WatchEvent) -> Any:
        o = e.obj
        if e.kind == "Pod":
            return (o.get("uid"), _labels(o).get(REVISION_LABEL))
        if e.kind == "StatefulSet":
            return (
                o.get("uid"),
                _labels(o).get(REVISION_LABEL),
                (o.get("spec") or {}).get("partition"),
                (o.get("spec") or {}).get("replicas"),
            )
        return None

    def wrong(e: WatchEvent) -> list[str]:
        o, c = e.obj, _conds(e.obj)
        checks = (
            ("deleted", e.type == "DELETED"),
            ("deleting", bool(o.get("deleting"))),
            ("not Ready", e.kind == "Pod" and not o.get("ready")),
            ("not Available", e.kind == "LeaderWorkerSet" and c.get("Available") != "True"),
            ("UpdateInProgress", e.kind == "LeaderWorkerSet" and c.get("UpdateInProgress") == "True"),
        )
        return [k for k, v in checks if v]

    start, writes = _against_start(events, mine)
    out = [f"{_ref(e)}: {', '.join(w)} before the upgrade" for e in start.values() if (w := wrong(e))]
    if not any(k == "LeaderWorkerSet" for k, _ in start) or not any(k == "Pod" for k, _ in start):
        out.append(f"LWS {lws_name} and its pods were not there when the recording started")
    for e, before in writes:
        if before is None:
            out.append(f"{_ref(e)}: a new {e.kind}")
            continue
        if state(e) != state(before):
            out.append(f"{_ref(e)}: {state(before)} became {state(e)} (uid, revision[, partition, replicas])")
        if w := wrong(e):
            out.append(f"{_ref(e)}: {', '.join(w)}")
    return out


def kueue_upgrade_disturbances(events: Sequence[WatchEvent], lws_name: str) -> list[str]:
    """KUEUE-UPGRADE-001: while Kueue is replaced, every pod of LWS `lws_name` and every Workload
    of the namespace must stay exactly as the recording found it: no pod deleted, replaced, moved,
    ungated or gated, or changing readiness; no Workload deleted, replaced, or changing its
    QuotaReserved, Admitted, Evicted or PodsReady condition; nothing new. A condition set for the
    first time is no change when it says what already held: PodsReady True on an admitted Workload
    and False on one that is not (a Kueue that tracks PodsReady by default, v0.19, records it on
    its first reconcile), Admitted False on one that is not admitted (Kueue main writes it there).
    Returns every disturbance."""

    def mine(e: WatchEvent) -> bool:
        return e.kind == "Workload" or (e.kind == "Pod" and _labels(e.obj).get(NAME_LABEL) == lws_name)

    def state(e: WatchEvent) -> Any:
        o = e.obj
        if e.kind == "Pod":
            return (o.get("uid"), o.get("node"), bool(o.get("gated")), bool(o.get("ready")))
        c = _conds(o)
        return (o.get("uid"), *(c.get(k) for k in ("QuotaReserved", "Admitted", "Evicted", "PodsReady")))

    def recorded(kind: str, now: Any, was: Any) -> bool:
        """Only first Admitted / PodsReady conditions that say what already held were written."""
        if kind != "Workload" or now[:2] != was[:2] or now[3] != was[3]:  # uid, QuotaReserved, Evicted
            return False
        held = "True" if was[2] == "True" else "False"  # admitted before, or not
        return all(now[i] == was[i] or (was[i] is None and now[i] == held) for i in (2, 4))

    start, writes = _against_start(events, mine)
    out = []
    if not any(k == "Workload" for k, _ in start) or not any(k == "Pod" for k, _ in start):
        out.append(f"LWS {lws_name}'s pods and Workloads were not there when the recording started")
    for e, before in writes:
        if before is None:
            out.append(f"{_ref(e)}: a new {e.kind}")
        elif e.type == "DELETED" or e.obj.get("deleting"):
            out.append(f"{_ref(e)}: deleted")
        elif (now := state(e)) != (was := state(before)) and not recorded(e.kind, now, was):
            what = "uid, node, gated, Ready" if e.kind == "Pod" else "uid, QuotaReserved, Admitted, Evicted, PodsReady"
            out.append(f"{_ref(e)}: {was} became {now} ({what})")
    return out


def pods_disturbed(events: Sequence[WatchEvent], names: Iterable[str]) -> list[str]:
    """Pods that must be left alone for the whole recording (they were there, Ready, when it
    started): each write to one of them that deletes it, replaces it (another uid) or reports it
    not Ready. Returns every such write, in order."""
    initial, history = _split(events)
    wanted = set(names)
    start = {str(e.obj.get("name")): e for e in initial if e.kind == "Pod" and e.obj.get("name") in wanted}
    out = [f"pod {n} was not there when the recording started" for n in sorted(wanted - set(start))]
    out += [f"{_ref(e)}: not Ready when the recording started" for e in start.values() if not e.obj.get("ready")]
    for e in history:
        name = str(e.obj.get("name"))
        if e.kind != "Pod" or name not in wanted:
            continue
        bad = [
            k
            for k, v in (
                ("deleted", e.type == "DELETED"),
                ("deleting", bool(e.obj.get("deleting"))),
                ("replaced", name in start and e.obj.get("uid") != start[name].obj.get("uid")),
                ("not Ready", not e.obj.get("ready")),
            )
            if v
        ]
        if bad:
            out.append(f"{_ref(e)}: {', '.join(bad)}")
    return out


def replaced_more_than_once(events: Sequence[WatchEvent], name: str) -> list[str]:
    """Pod `name`, there when the recording started, replaced exactly once (CHAOS-RESTART-011: a
    leader deleted once is recreated once): every further replacement (a third uid) and every
    deletion of the replacement, in write order. A recording in which `name` was never replaced
    says so: the check cannot speak of it."""
    initial, history = _split(events)
    start = {str(e.obj.get("uid")) for e in initial if e.kind == "Pod" and e.obj.get("name") == name}
    if not start:
        return [f"pod {name} was not there when the recording started"]
    mine = [e for e in history if e.kind == "Pod" and e.obj.get("name") == name]
    incarnations = list(dict.fromkeys(str(e.obj.get("uid")) for e in mine if e.type != "DELETED"))
    new = [u for u in incarnations if u not in start]
    if not new:
        return [f"pod {name} was never replaced (uid {sorted(start)[0]} throughout)"]
    out = []
    for e in mine:
        uid = str(e.obj.get("uid"))
        if uid == new[0] and (e.type == "DELETED" or e.obj.get("deleting")):
            out.append(f"{_ref(e)}: its replacement (uid {uid}) deleted again")
            break
    if len(new) > 1:
        out.append(f"pod {name} replaced {len(new)} times (uids {sorted(start)[0]} -> {' -> '.join(new)})")
    return out
