"""KUEUE-PLAINPOD-002's watch-order check on a recording of the pinned Kueue (tests/data), and the
same recording doctored the two ways a Pod group could start before its admission: a pod ungated
before the group's Workload is Admitted, a pod created without the gate. Both doctored recordings
end in the same state as the real one (both pods ungated, the Workload Admitted)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lws_conformance.observe import Timeline, history
from lws_conformance.observe.timeline import Event

RECORDING = Path(__file__).parent / "data" / "pod-group-v0.17.0.timeline.json"
GROUP, PODS = "sample-group", {"first", "second"}


def _events() -> list[Event]:
    return Timeline.load(RECORDING).ordered()


def _check(events: list[Event]) -> list[str]:
    return history.gated_until_admitted(events, lambda s: s.get("name") in PODS, f"group {GROUP}", GROUP)


def _admitted_at(events: list[Event]) -> int:
    return next(
        i
        for i, e in enumerate(events)
        if e.kind == "Workload" and ((e.obj.get("status") or {}).get("conditions") or {}).get("Admitted") == "True"
    )


def _last_states(events: list[Event]) -> dict[str, object]:
    return {e.ref(): (e.type, e.obj.get("gated"), (e.obj.get("status") or {}).get("conditions")) for e in events}


def test_the_pinned_kueue_keeps_the_group_gated_until_admitted() -> None:
    assert _check(_events()) == []


def test_a_pod_released_before_admission_is_seen() -> None:
    events = _events()
    admitted = _admitted_at(events)
    first_free = next(
        i for i, e in enumerate(events) if e.kind == "Pod" and e.name == "first" and not e.obj.get("gated")
    )
    assert first_free > admitted, "the recording must release the group only after its admission"
    doctored = [*events[:admitted], events[first_free], *events[admitted:]]
    assert _last_states(doctored) == _last_states(events), "the end state must not tell them apart"
    out = _check(doctored)
    assert len(out) == 1 and "pod first of group sample-group ungated" in out[0], out


def test_a_pod_created_without_the_gate_is_seen() -> None:
    events = _events()
    doctored = [
        replace(e, obj={**e.obj, "gated": False}) if e.kind == "Pod" and e.type == "ADDED" else e for e in events
    ]
    assert _last_states(doctored) == _last_states(events), "the end state must not tell them apart"
    out = _check(doctored)
    assert sum("first seen without a scheduling gate" in v for v in out) == 2, out


def test_no_pod_of_the_group_is_an_error() -> None:
    events = [e for e in _events() if e.kind != "Pod"]
    assert _check(events) == [f"no pod of group {GROUP} was seen"]
