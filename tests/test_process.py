"""Stopping the local cluster's processes: gracefully one by one, or all at once for a cluster
being discarded."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from lws_conformance.errors import UserError
from lws_conformance.providers import process
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.health import dead_components


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


def test_a_controller_counts_as_started_only_once_its_webhook_port_listens(tmp_path: Path) -> None:
    """Ready is not serving admission (a restarted LWS answered /readyz while its webhook port
    still refused connections): the wait ends at the first accepted connection, and fails fast,
    naming the process, when it exits."""
    rec = _stubborn(tmp_path, "ctl")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(UserError, match="did not listen on 127.0.0.1"):
            process.wait_listening(rec, port, time.monotonic() + 0.3)  # bound, not listening yet
        s.listen()
        process.wait_listening(rec, port, time.monotonic() + 5)
    process.kill_all([rec])
    with pytest.raises(UserError):
        process.wait_listening(rec, port, time.monotonic() + 5)


def test_a_dead_component_breaks_the_cluster_one_stopped_on_purpose_does_not(tmp_path: Path) -> None:
    """The health check behind `error` verdicts: a controller that died is named; one a fault hook
    stopped (`LocalCluster.stop_component`) is not dead, so a failure meanwhile stays a verdict."""
    logs = tmp_path / "logs"
    logs.mkdir()
    pid_dir = tmp_path / "pids"
    handle = cast(ClusterHandle, SimpleNamespace(provider="local", logs={"etcd": str(logs / "etcd.log")}))
    recs = [_stubborn(pid_dir, name) for name in ("etcd", "lws")]
    assert dead_components(handle) is None
    process.kill_all(recs[1:])
    assert "lws (pid" in (dead_components(handle) or "")
    dataclasses.replace(recs[1], stopped=True).save(pid_dir)
    assert dead_components(handle) is None
    process.kill_all(recs)
