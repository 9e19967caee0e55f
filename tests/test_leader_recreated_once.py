"""CHAOS-RESTART-011's check on a recording of the pinned LWS (tests/data): leader rb-1 deleted in
the background, recreated once while the garbage collector still deleted its old workers
(rb-1-1 and rb-1-2 marked deleting after the new rb-1 was created, the window of
kubernetes-sigs/lws#805). The same recording doctored as the bug writes it, late (in the quiet
window after the group was steady): LWS takes an old worker's deletion for a failure of the new
group and deletes the new leader (foreground), which the leader StatefulSet recreates a third time;
that recording ends with one Ready rb-1 and the group whole, all that CHAOS-RESTART-001's wait for
the rebuilt group looks at. And the recording of the same test against LWS v0.9.0 with the fix
reverted, where it happened before the group was steady."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lws_conformance.observe import Timeline, history
from lws_conformance.observe.timeline import Event

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "leader-background-delete-v0.9.0.timeline.json"
# The same test on LWS v0.9.0 with kubernetes-sigs/lws#805 reverted (benchmarks/history lws-8b6ef0c).
REVERTED = DATA / "leader-background-delete-lws-805-reverted.timeline.json"
LEADER = "rb-1"


def _events(path: Path = RECORDING) -> list[Event]:
    return Timeline.load(path).ordered()


def _leader_uids(events: list[Event]) -> list[str]:
    return list(dict.fromkeys(str(e.obj["uid"]) for e in events if e.kind == "Pod" and e.name == LEADER))


def _doctored(third: bool) -> list[Event]:
    """The recording with writes appended after its end (the group steady, in the quiet window): the
    new leader marked deleting (LWS deleting it, foreground) and, with `third`, gone and replaced by a
    third leader that turns Ready, so the group ends whole again."""
    events = _events()
    new = _leader_uids(events)[1]
    last = next(e for e in reversed(events) if e.kind == "Pod" and e.obj["uid"] == new)
    extra = [replace(last, type="MODIFIED", obj={**last.obj, "deleting": True})]
    if third:
        extra.append(replace(last, type="DELETED", obj={**last.obj, "deleting": True}))
        extra.append(replace(last, type="ADDED", obj={**last.obj, "uid": "third-incarnation", "ready": False}))
        extra.append(replace(last, type="MODIFIED", obj={**last.obj, "uid": "third-incarnation"}))
    return events + extra


def test_the_recording_shows_the_race_window() -> None:
    """The pinned run reached the fixed branch: old workers were marked deleting after the new
    leader existed (a controller without the fix would have had them to react to)."""
    events = _events()
    old, new = _leader_uids(events)
    created = next(i for i, e in enumerate(events) if e.kind == "Pod" and e.obj["uid"] == new)
    stale = {
        e.name
        for e in events[created:]
        if e.kind == "Pod" and e.name.startswith(f"{LEADER}-") and e.obj.get("deleting") and e.type != "DELETED"
    }
    assert old != new and stale == {"rb-1-1", "rb-1-2"}, stale


def test_a_leader_recreated_once_passes() -> None:
    assert history.replaced_more_than_once(_events(), LEADER) == []


def test_a_replacement_leader_deleted_again_fails() -> None:
    out = history.replaced_more_than_once(_doctored(third=False), LEADER)
    assert len(out) == 1 and out[0].startswith(f"MODIFIED Pod/{LEADER} ") and "deleted again" in out[0], out


def test_a_leader_recreated_twice_fails() -> None:
    out = history.replaced_more_than_once(_doctored(third=True), LEADER)
    assert len(out) == 2 and "deleted again" in out[0], out
    assert out[1].startswith(f"pod {LEADER} replaced 2 times (uids ") and out[1].endswith("-> third-incarnation)"), out


def test_the_reverted_fix_recorded_fails() -> None:
    """The recording of the run with the fix reverted: an old worker's deletion made LWS delete the
    new leader (rv 458 is its first write marked deleting) and the StatefulSet created a third."""
    out = history.replaced_more_than_once(_events(REVERTED), LEADER)
    assert len(out) == 2 and out[0].startswith(f"MODIFIED Pod/{LEADER} rv 458: its replacement"), out
    assert out[1].startswith(f"pod {LEADER} replaced 2 times"), out
