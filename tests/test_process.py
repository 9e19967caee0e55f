"""Stopping the local cluster's processes: gracefully one by one, or all at once for a cluster
being discarded."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from lws_conformance.providers import process


def _stubborn(tmp_path: Path, name: str) -> process.ProcRecord:
    """A process group that ignores SIGTERM, as a controller stuck retrying a stopped apiserver."""
    sh = shutil.which("sh") or "/bin/sh"
    ready = tmp_path / f"{name}.trapped"
    script = f"trap '' TERM; touch {ready}; while :; do sleep 0.05; done"
    rec = process.start(name, [sh, "-c", script], tmp_path / f"{name}.log", tmp_path)
    deadline = time.monotonic() + 5
    while not ready.exists() and time.monotonic() < deadline:  # the trap is set before the file
        time.sleep(0.01)
    return rec


def test_stop_escalates_to_sigkill_after_the_grace(tmp_path: Path) -> None:
    rec = _stubborn(tmp_path, "stubborn")
    started = time.monotonic()
    process.stop(rec, grace=0.5)
    assert not process.alive(rec) and 0.5 <= time.monotonic() - started < 3


def test_kill_all_discards_every_process_at_once(tmp_path: Path) -> None:
    recs = [_stubborn(tmp_path, f"p{i}") for i in range(3)]
    started = time.monotonic()
    process.kill_all(recs)
    assert not any(process.alive(r) for r in recs) and time.monotonic() - started < 1
