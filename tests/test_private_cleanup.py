"""After a suite run, lwsc stops the private clusters its tests left running."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lws_conformance.profile import load_profile
from lws_conformance.providers import process
from lws_conformance.providers.components import state_root
from lws_conformance.providers.local import down_private


def test_private_clusters_of_the_run_are_stopped_and_others_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    sleep = shutil.which("sleep") or "/bin/sleep"
    left = {}
    for name in ("private-r1-gw0", "private-r1-lwsv070", "private-r2-gw0"):
        d = state_root() / name
        left[name] = process.start("etcd", [sleep, "60"], d / "logs" / "etcd.log", d / "pids")
    run = load_profile()
    assert down_private("r1", run) == ["private-r1-gw0", "private-r1-lwsv070"]
    assert not process.alive(left["private-r1-gw0"]) and not process.alive(left["private-r1-lwsv070"])
    assert not (state_root() / "private-r1-gw0").exists()
    assert process.alive(left["private-r2-gw0"])  # another run's
    assert down_private("r2", run) == ["private-r2-gw0"] and not process.alive(left["private-r2-gw0"])
