"""Which requirement each rollout invariant proves, and how a rollout test claims them.

Every rollout test checks every invariant of `lws_conformance.observe` at every event, and each
invariant reports to exactly one catalogued requirement (fixtures/requirements/rollout.yaml), so
a test proves each requirement separately: a SHOULD that fails (ROLL-ATOM-001, a warning) or a
known deviation (ROLL-COND-002) never hides, or is hidden by, a MUST.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lws_conformance.testing import Claims, Event, Failures, Timeline, check, describe

INVARIANT_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "ROLL-SURGE-001": ("group-count-bound", "surge-reclaimed"),
    "ROLL-AVAIL-001": ("availability-bound",),
    "ROLL-ORDER-001": ("update-order", "partition-respected"),
    "ROLL-WHOLE-001": ("group-consistency",),
    "ROLL-DONE-001": ("completion",),
    "ROLL-COND-003": ("conditions",),
    "ROLL-COND-002": ("condition-pairing",),
    "ROLL-ATOM-001": ("group-atomicity",),
}


def proves_invariants[F: Callable[..., object]](fn: F) -> F:
    """Mark a rollout test as proving every invariant requirement."""
    for rid in INVARIANT_REQUIREMENTS:
        fn = pytest.mark.requirement(rid)(fn)
    return fn


def verify_claims(claim: Claims, tl: Timeline, where: Path, name: str, *, final: bool = True) -> list[Event]:
    """Save the recording, then claim each invariant requirement with its own violations, each
    violation a failure message of its own (judged on its own against the known deviations)."""
    checked = check(tl, where, name, final=final)
    for rid, names in INVARIANT_REQUIREMENTS.items():
        with claim(rid):
            found = checked.of(names)
            if found:
                raise Failures([describe([v], checked.paths) for v in found])
    return checked.events
