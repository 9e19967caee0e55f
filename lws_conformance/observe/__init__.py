"""Timeline observer: record a namespace's LWS objects (recorder), check rollout invariants over
the recording (invariants, pure), and keep the evidence (timeline JSON, picture SVG).

Typical use in a suite:

    with record(sc.api, sc.namespace) as tl:
        ...create, update, wait...
    verify(tl, artifact_dir(tmp_path), "r4-ms1")   # AssertionError naming event, time, objects
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import allure

from . import invariants, picture
from .invariants import Violation, check_all
from .recorder import Recorder, Source, record, sources
from .timeline import Event, Timeline

__all__ = [
    "Event",
    "Recorder",
    "Source",
    "Timeline",
    "Violation",
    "artifact_dir",
    "check_all",
    "invariants",
    "picture",
    "record",
    "sources",
    "verify",
]
ARTIFACT_ENV = "LWSC_ARTIFACT_DIR"


def artifact_dir(default: Path) -> Path:
    """Where timelines and pictures go: $LWSC_ARTIFACT_DIR if set, else `default` (a tmp_path)."""
    env = os.environ.get(ARTIFACT_ENV)
    return Path(env) if env else default


def verify(
    tl: Timeline,
    where: Path,
    name: str,
    *,
    lws: str | None = None,
    final: bool = True,
    only: Sequence[str] | None = None,
    skip: Sequence[str] = (),
) -> list[Event]:
    """Save `tl` as <where>/<name>.timeline.json and .svg, then fail on an incomplete recording
    or on any invariant violation (the message names the event, time, objects and invariant and
    points at both files). `only`/`skip` choose invariants by name (`invariants.ALL`); a test that
    skips one must say which other test asserts it. Returns the ordered events."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]
    events = tl.ordered()
    names = [n for n in (only if only is not None else list(invariants.ALL)) if n not in skip]
    violations = check_all(events, lws, final=final, only=names) if tl.complete and not tl.gaps else []
    first = violations[0] if violations else None
    json_path = tl.save(where / f"{stem}.timeline.json")
    svg_path = picture.save(where / f"{stem}.svg", events, first, lws)
    allure.attach.file(str(svg_path), f"timeline {name}", allure.attachment_type.SVG)
    allure.attach.file(str(json_path), f"timeline {name} (JSON)", allure.attachment_type.JSON)
    paths = f"timeline: {json_path}\npicture: {svg_path}"
    if not tl.complete or tl.gaps:
        why = tl.sync_error or "recorder did not finish its final sync"
        gaps = f"; re-listed (events possibly missed) at {tl.gaps}" if tl.gaps else ""
        raise AssertionError(f"recording of {tl.namespace} is incomplete, invariants not checked: {why}{gaps}\n{paths}")
    if first:
        more = "".join(f"\n  also: {v.describe()}" for v in violations[1:])
        raise AssertionError(f"{first.describe()}{more}\n{paths}")
    return events
