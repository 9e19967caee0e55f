"""One `lwsc run` loads its profile once: the CLI resolves it (`load_profile`), each pytest it
starts reads exactly the file it wrote (`profile.resolved.yaml`), xdist workers take the
controller's; private-cluster, upgrade and MultiKueue profiles are derived from it. Counted for
real across processes through $LWSC_PROFILE_LOADS, and by reading the code."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lws_conformance import cli, resources
from lws_conformance.profile import LOADS_ENV, RESOLVED_FILE, Profile, load_profile, read_resolved
from lws_conformance.providers.base import ClusterHandle


@dataclass
class _Adopted:
    """A cluster that is there already (so `lwsc run` releases it instead of bringing it down):
    its handle names the profile's versions and a kubeconfig no test gets to use."""

    out: Path
    profile: Profile
    creates = False

    @property
    def handle_file(self) -> Path:
        return self.out / "handle.json"

    def running(self) -> bool:
        return True

    def up(self, progress: Callable[[str], None]) -> ClusterHandle:
        versions, topology = dict(self.profile.versions), self.profile.topology
        handle = ClusterHandle("local", self.out / "no-kubeconfig", versions, topology, "t", "f")
        self.handle_file.write_text(handle.to_json())
        return handle

    def down(self) -> None:
        raise AssertionError("an adopted cluster is never brought down")

    def release(self, run_id: str) -> list[str]:
        return []


def test_a_whole_run_resolves_its_profile_once_and_pytest_reads_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lwsc run` with --set, up to the suites' end: the CLI's one resolution, one read of the
    resolved file by the selection's collect-only pytest and one by the run's pytest, none by its
    two xdist workers (each collects every suite, which needs the profile: the upgrade tests are
    parametrized by its `upgrade.*_from`). Nothing else loads a profile."""
    loads = tmp_path / "loads"
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    default = load_profile()  # for the handle's versions; before the count starts

    def target(cfg: object, choice: object, out: Path | None = None) -> _Adopted:
        assert out is not None
        return _Adopted(out, default)

    monkeypatch.setattr(cli, "_target", target)
    monkeypatch.setattr(cli.prebuild, "check", lambda needs: None)  # binaries: not what is counted here
    monkeypatch.setattr(cli.prebuild, "build", lambda needs, progress: [])
    monkeypatch.setattr(cli.render, "render", lambda out, tools: {})
    monkeypatch.setenv(LOADS_ENV, str(loads))
    reports = tmp_path / "reports"
    argv = ["--set", "timeouts.scale=2", "run", "--focus", "SCALE-GANG-001", "-n", "2", "--reports", str(reports)]
    cli.main(argv)
    monkeypatch.delenv(LOADS_ENV)
    (run_dir,) = [d for d in reports.iterdir() if d.is_dir() and not d.is_symlink()]
    lines = [ln.split(" ", 2) for ln in loads.read_text().splitlines()]
    assert [(kind, pid == str(os.getpid())) for pid, kind, _ in lines] == [
        ("resolve", True),  # the CLI, in this process
        ("read", False),  # the selection's collect-only pytest: a resolved file of its own (a temporary one)
        ("read", False),  # the run's pytest: <run>/profile.resolved.yaml
    ], lines
    assert lines[0][2] == "default timeouts.scale=2" and lines[2][2] == str(run_dir / RESOLVED_FILE)
    assert lines[1][0] != lines[2][0]  # two pytest processes
    resolved = read_resolved(run_dir / RESOLVED_FILE)
    assert resolved == load_profile(overrides=["timeouts.scale=2"]) and resolved.timeout_scale == 2.0
    log = (run_dir / "e2e.log").read_text()
    assert "created: 2/2 workers" in log and "2 workers [1 item]" in log, log[-3000:]  # both collected


LOAD_CALL = re.compile(r"\bload_profile\(")


def test_only_the_cli_and_the_plugin_load_a_profile() -> None:
    """In the harness and the suites, `load_profile` is called in two places: `cli.resolve` (every
    `lwsc` command) and the session profile of a plain `pytest suites` without lwsc; nothing
    builds a cluster handle from the default profile."""
    root = resources.root()
    sources = {
        path.relative_to(root).as_posix(): path.read_text()
        for top in (Path(cli.__file__).parent, resources.suites())
        for path in sorted(top.rglob("*.py"))
    }
    calls = [
        f"{name}:{text.count(chr(10), 0, m.start()) + 1}"
        for name, text in sources.items()
        for m in LOAD_CALL.finditer(text)
        if not text[: m.start()].endswith("def ")
    ]
    assert [c.split(":")[0] for c in calls] == ["lws_conformance/cli.py", "lws_conformance/session_profile.py"], calls
    assert not [name for name, text in sources.items() if 'load_profile("default"' in text]
