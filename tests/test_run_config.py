"""`lwsc` resolves its configuration once: the profile merged with --set is loaded a single time
per invocation and handed down to the provider and the commands; bad input is refused before
any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_conformance import cli
from lws_conformance.profile import Profile, load_profile
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.providers.local import LocalCluster


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...]]]:
    seen: list[tuple[str, tuple[str, ...]]] = []

    def counting(name: str = "default", overrides: list[str] | None = None) -> Profile:
        seen.append((name, tuple(overrides or ())))
        return load_profile(name, overrides)

    monkeypatch.setattr(cli, "load_profile", counting)
    return seen


def test_a_run_loads_its_profile_once(
    loads: list[tuple[str, tuple[str, ...]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The whole `lwsc run` path on the local provider: target, bring-up, suites, release."""
    seen_profiles: list[Profile] = []

    def up(self: LocalCluster, progress: Any) -> ClusterHandle:
        seen_profiles.append(self.profile)
        return ClusterHandle("local", tmp_path / "kubeconfig", {}, self.profile.topology, "t", "f")

    monkeypatch.setattr(LocalCluster, "up", up)
    monkeypatch.setattr(LocalCluster, "running", lambda self: False)
    monkeypatch.setattr(LocalCluster, "down", lambda self, keep_logs=False: None)
    monkeypatch.setattr(cli, "_suites", lambda *a, **k: 0)
    monkeypatch.setattr(cli.prebuild, "build", lambda needs, progress: [])  # what the tests need: built already
    monkeypatch.setattr(cli.cli_certify, "write_archive", lambda out: out / "x.tar.gz")
    code = cli.main(["--set", "timeouts.scale=2", "run", "--reports", str(tmp_path / "reports"), "--set", "x.y=1"])
    assert code == 2  # x.y is no profile key: refused before anything came up
    assert loads == [("default", ("timeouts.scale=2", "x.y=1"))] and not seen_profiles
    loads.clear()
    code = cli.main(["--set", "timeouts.scale=2", "run", "--reports", str(tmp_path / "reports")])
    assert code == 3  # the stubbed suites wrote no summary: inconclusive
    assert loads == [("default", ("timeouts.scale=2",))]
    assert len(seen_profiles) == 1 and seen_profiles[0].timeout_scale == 2.0


def test_dry_run_validates_the_profile(loads: list[tuple[str, tuple[str, ...]]]) -> None:
    assert cli.main(["--profile", "no-such-profile", "run", "--dry-run"]) == 2
    assert cli.main(["run", "--dry-run", "--set", "timeouts.scale=abc"]) == 2
    assert len(loads) == 2


def test_a_named_cluster_gets_ports_of_its_own_unless_the_user_chose_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))

    def cluster(*argv: str) -> LocalCluster:
        return cli._cluster(cli.resolve(cli.cli_conventions.finish(cli.parser().parse_args(list(argv)))))

    assert cluster("up").profile.base_port == 16000  # the default cluster keeps the profile's ports
    dev = cluster("--name", "dev", "up")
    assert dev.profile.base_port != 16000 and 19000 <= dev.profile.base_port < 29000
    assert cluster("--name", "dev", "--set", "network.base_port=17000", "up").profile.base_port == 17000
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "base_port").write_text("21300")  # what `up` leaves in its state
    for command in ("status", "down", "kubeconfig", "up"):
        assert cluster("--name", "dev", command).profile.base_port == 21300, command
    assert cluster("--name", "other", "status").profile.base_port == 16000  # not up: nothing to claim


_SEES_SCALE = """
import os

def test_scale():
    print("scale=" + os.environ["LWSC_TIMEOUT_SCALE"])
"""


@pytest.mark.parametrize(
    ("exported", "derived", "seen"),
    [
        ("1.0", "LWSC_IMAGE_REGISTRY,LWSC_TIMEOUT_SCALE", "2.0"),  # an outer run's value: the kind profile's own
        ("1.5", "", "1.5"),  # the user's export wins over the profile
    ],
)
def test_a_nested_run_takes_timeouts_scale_from_its_own_profile(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, exported: str, derived: str, seen: str
) -> None:
    """`pytest tests` runs `lwsc --profile kind run`: the inner run must not inherit the outer
    default profile's timeouts.scale (1.0) in place of kind's (2.0)."""
    monkeypatch.setenv("LWSC_TIMEOUT_SCALE", exported)
    monkeypatch.setenv("LWSC_ENV_FROM_PROFILE", derived)
    pytester.makepyfile(test_scale=_SEES_SCALE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0", "-s", "--lwsc-profile", "kind")
    result.stdout.fnmatch_lines([f"*scale={seen}*"])
