"""KUEUE-DEFAULTQ-001's watch-order check on a recording of the pinned Kueue (tests/data), and the
same recording doctored the two ways a group could start before its admission through the default
LocalQueue: a pod ungated before its group's Workload is Admitted, a pod created without the gate.

Both doctored recordings end in the same state as the real one (every pod ungated, every Workload
Admitted), which is all the test checked before it recorded the watch stream: the end state alone
does not tell a group that started before admission from one that waited."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lws_conformance.observe import Timeline, history
from lws_conformance.observe.timeline import GROUP_INDEX, NAME, Event

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "default-queue-v0.17.0.timeline.json"
LWS = "dq"


def _events() -> list[Event]:
    return Timeline.load(RECORDING).ordered()


def _group(e: Event) -> str | None:
    labels = e.obj.get("labels") or {}
    return str(labels.get(GROUP_INDEX)) if e.kind == "Pod" and labels.get(NAME) == LWS else None


def _workloads(events: list[Event]) -> dict[int, str]:
    """Group index -> its Workload's name, read from the recording (leaderworkerset-dq-<g>-<h5>)."""
    out: dict[int, str] = {}
    for e in events:
        if e.kind == "Workload" and e.name.startswith(f"leaderworkerset-{LWS}-"):
            out[int(e.name.split("-")[2])] = e.name
    return out


def _admitted_at(events: list[Event], workload: str) -> int:
    """Index of the write that made `workload` Admitted=True."""
    return next(
        i
        for i, e in enumerate(events)
        if e.kind == "Workload"
        and e.name == workload
        and ((e.obj.get("status") or {}).get("conditions") or {}).get("Admitted") == "True"
    )


def _last_states(events: list[Event]) -> dict[str, object]:
    last: dict[str, object] = {}
    for e in events:
        last[e.ref()] = (e.type, e.obj.get("gated"), (e.obj.get("status") or {}).get("conditions"))
    return last


def _held_group(events: list[Event], workloads: dict[int, str]) -> int:
    """The group admitted last: the one the quota held until it was raised."""
    return max(workloads, key=lambda g: _admitted_at(events, workloads[g]))


def _check(events: list[Event]) -> list[str]:
    workloads = _workloads(events)
    return history.released_before_admission(events, LWS, sorted(workloads), lambda g: workloads[g])


def test_the_pinned_kueue_keeps_both_groups_gated_until_admitted() -> None:
    events = _events()
    workloads = _workloads(events)
    assert sorted(workloads) == [0, 1], workloads
    assert _check(events) == []


def test_a_group_released_before_admission_is_seen() -> None:
    """Doctored: the held group's first ungated pod is also seen ungated just before its
    Workload's Admitted write (Kueue releasing the group before admitting it)."""
    events = _events()
    workloads = _workloads(events)
    held = _held_group(events, workloads)
    admitted = _admitted_at(events, workloads[held])
    first_free = next(i for i, e in enumerate(events) if _group(e) == str(held) and not e.obj.get("gated"))
    assert first_free > admitted, "the recording must release the held group only after its admission"
    doctored = [*events[:admitted], events[first_free], *events[admitted:]]
    assert _last_states(doctored) == _last_states(events), "the end state must not tell them apart"
    out = _check(doctored)
    assert len(out) == 1 and f"of group {held} ungated" in out[0] and workloads[held] in out[0], out


def test_a_group_created_without_the_gate_is_seen() -> None:
    """Doctored: the held group's pods are created without Kueue's scheduling gate (the pod
    webhook skipping LWS pods defaulted into the default LocalQueue)."""
    events = _events()
    held = _held_group(events, _workloads(events))
    doctored = [
        replace(e, obj={**e.obj, "gated": False}) if _group(e) == str(held) and e.type == "ADDED" else e for e in events
    ]
    assert _last_states(doctored) == _last_states(events), "the end state must not tell them apart"
    out = _check(doctored)
    assert any("first seen without a scheduling gate" in v for v in out), out
    assert any(f"of group {held} ungated" in v for v in out), out
