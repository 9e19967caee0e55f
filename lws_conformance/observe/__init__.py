"""Timeline observer: record a namespace's LWS objects (recorder), replay it (replay), check the
rollout invariants over the recording (invariants, pure), read facts off it (facts), and keep the
evidence (timeline JSON, picture SVG).

Typical use in a suite:

    with record(sc.api, sc.namespace) as tl:
        ...create, update, wait...
    verify(tl, artifact_dir(tmp_path), "r4-ms1")   # errors.Failures: one message per violation
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import allure

from .. import errors
from . import facts, invariants, picture
from .invariants import Violation, check_all
from .recorder import Recorder, Source, record, sources
from .timeline import Event, Timeline

__all__ = [
    "Checked",
    "Event",
    "Recorder",
    "Source",
    "Timeline",
    "Violation",
    "artifact_dir",
    "check",
    "check_all",
    "describe",
    "facts",
    "failures",
    "invariants",
    "picture",
    "record",
    "require_complete",
    "saved",
    "sources",
    "verify",
]
ARTIFACT_ENV = "LWSC_ARTIFACT_DIR"


def artifact_dir(default: Path) -> Path:
    """Where timelines and pictures go: $LWSC_ARTIFACT_DIR if set, else `default` (a tmp_path)."""
    env = os.environ.get(ARTIFACT_ENV)
    return Path(env) if env else default


@dataclass(frozen=True)
class Checked:
    """A saved recording and its invariant violations: every distinct one, earliest first."""

    events: list[Event]
    violations: list[Violation]
    paths: str  # "timeline: …\npicture: …", for failure messages

    def of(self, names: Sequence[str]) -> list[Violation]:
        return [v for v in self.violations if v.invariant in names]


def check(
    tl: Timeline,
    where: Path,
    name: str,
    *,
    lws: str | None = None,
    final: bool = True,
    only: Sequence[str] | None = None,
) -> Checked:
    """Save `tl` as <where>/<name>.timeline.json and .svg (the first violation highlighted) and
    check the invariants named in `only` (default: all; `[]`: none, for tests that read the
    stream themselves); `errors.RecordingIncomplete` if the recording is incomplete: nothing can be
    said, and the test's requirements read error, never failed."""
    events = tl.ordered()
    complete = tl.complete and not tl.gaps
    violations = check_all(events, lws, final=final, only=only) if complete and only != [] else []
    paths = _store(tl, events, where, name, violations[0] if violations else None, lws)
    require_complete(tl, f"\n{paths}")
    return Checked(events, violations, paths)


def require_complete(tl: Timeline, evidence: str = "") -> None:
    """`errors.RecordingIncomplete` unless the recorder saw everything (its final sync finished and
    no re-list gap): what the recording would prove cannot be judged, and the requirements read
    error, never failed."""
    if tl.complete and not tl.gaps:
        return
    why = [] if tl.complete else [tl.sync_error or "recorder did not finish its final sync"]
    why += [f"re-listed after a 410 and found writes it had not seen (events possibly missed) at {tl.gaps}"] * bool(
        tl.gaps
    )
    raise errors.RecordingIncomplete(
        f"recording incomplete: {tl.namespace}'s invariants not checked: {'; '.join(why)}{evidence}"
    )


def saved(tl: Timeline, where: Path, name: str, *, lws: str | None = None) -> list[Event]:
    """Keep the evidence of a recording whose events the test checks itself (watch order): save
    it and require it complete, checking no rollout invariant. Returns the ordered events."""
    return check(tl, where, name, lws=lws, only=[]).events


def _store(tl: Timeline, events: list[Event], where: Path, name: str, first: Violation | None, lws: str | None) -> str:
    """Write the timeline JSON and SVG picture, attach both to Allure; return their paths."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]
    json_path = tl.save(where / f"{stem}.timeline.json")
    svg_path = picture.save(where / f"{stem}.svg", events, first, lws)
    allure.attach.file(str(svg_path), f"timeline {name}", allure.attachment_type.SVG)
    allure.attach.file(str(json_path), f"timeline {name} (JSON)", allure.attachment_type.JSON)
    return f"timeline: {json_path}\npicture: {svg_path}"


def describe(violations: Sequence[Violation], paths: str) -> str:
    """A failure message: the first violation, the others, and where the evidence is. Give it one
    violation per message (`failures`) so that each is judged on its own."""
    first, *rest = violations
    more = "".join(f"\n  also: {v.describe()}" for v in rest)
    return f"{first.describe()}{more}\n{paths}"


def verify(
    tl: Timeline,
    where: Path,
    name: str,
    *,
    lws: str | None = None,
    final: bool = True,
    only: Sequence[str] | None = None,
) -> list[Event]:
    """`check`, then fail on any violation of the invariants named in `only` (default: all), each
    violation its own message (`errors.Failures`). Returns the ordered events."""
    checked = check(tl, where, name, lws=lws, final=final, only=only)
    if checked.violations:
        raise failures(checked.violations, checked.paths)
    return checked.events


def failures(violations: Sequence[Violation], paths: str) -> errors.Failures:
    """The failure to raise for `violations`: one message per violation, each naming the evidence."""
    return errors.Failures([describe([v], paths) for v in violations])
