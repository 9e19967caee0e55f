"""ROLL-FAULT-003's precondition, judged on a recording: the worker the test made unready (a
kubelet's write) must still be unready when LWS first moves the partition; on kind the real
kubelet wrote its own readiness back first (recorded 2026-12-06, LWS v0.9.0, load ~40), and the
first step then says nothing of an unready group: no verdict (InfraError), not a failure."""

from __future__ import annotations

from pathlib import Path

from lws_conformance.observe import facts
from lws_conformance.observe.timeline import Timeline
from suites.rollout.rollout_support import ready_again_when_the_update_moved

DATA = Path(__file__).parent / "data" / "kind-unhealthy-group-ready-again.timeline.json"
NEW = "589f56bcb4"


def _recorded() -> tuple[list, list[facts.StsStep]]:
    events = Timeline.load(DATA).ordered()
    steps = facts.leader_sts_steps(events)
    first = next(i for i, s in enumerate(steps) if s.revision == NEW)
    return events, steps[first:]


def test_a_worker_ready_again_when_the_partition_first_moves_is_no_verdict() -> None:
    events, steps = _recorded()
    lost = ready_again_when_the_update_moved(events, "uh-1-1", steps, 4)
    assert lost is not None and lost.startswith("InfraError: the test's precondition did not hold")
    assert "was Ready again at t=7.26s" in lost and "(t=8.21s, to 2)" in lost


def test_a_worker_still_unready_leaves_the_step_to_be_judged() -> None:
    """The same recording without the kubelet's write back: the precondition held, so the first
    step (partition 2, two more groups down) is judged and ROLL-FAULT-003 fails."""
    events, steps = _recorded()
    doctored = [e for e in events if not (e.kind == "Pod" and e.obj.get("name") == "uh-1-1" and e.obj.get("ready"))]
    assert ready_again_when_the_update_moved(doctored, "uh-1-1", steps, 4) is None
    assert [s.partition for s in steps if s.partition < 4][0] == 2
