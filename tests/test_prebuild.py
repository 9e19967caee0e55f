"""Nothing builds inside a test: `lwsc build` and `lwsc run` obtain, before pytest starts, every
binary the selected tests need (the upgrade start versions, the private clusters' variants); in a
suites run a binary not built is an `error` at once, naming its build and log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lws_conformance import prebuild, resources, selection
from lws_conformance.errors import InfraError
from lws_conformance.profile import load_profile
from lws_conformance.providers.base import ClusterHandle
from lws_conformance.toolchain import cache, ensure_binaries
from lws_conformance.toolchain.gobuild import NO_BUILD_ENV, build


def test_the_selection_names_the_upgrade_starts_and_private_clusters_it_needs() -> None:
    default = load_profile()
    upgrade = selection.collect(["-k", "LWS-UPGRADE"], default)
    assert upgrade.upgrade_starts == [("lws", "v0.7.0"), ("lws", "v0.8.0")]
    assert upgrade.private == [[]] and upgrade.requirements == ["LWS-UPGRADE-001", "LWS-UPGRADE-002"]
    first, second = (selection.collect(["-k", "LWS-UPGRADE"], default, shard=f"{k}/2") for k in (1, 2))
    assert sorted([*first.upgrade_starts, *second.upgrade_starts]) == upgrade.upgrade_starts  # each shard its own
    assert len(first.tests) == len(second.tests) == 1
    plain = selection.collect(["-k", "LWS-NAME-001"], default)
    assert plain.upgrade_starts == [] and plain.private == []
    variant = selection.collect(["-k", "KUEUE-UNQUEUED-002"], default)
    assert variant.private == [["kueue.manage_jobs_without_queue_name=true"]]
    other = selection.collect(["-k", "LWS-UPGRADE"], default.with_overrides(["upgrade.lws_from=[v0.8.0]"]))
    assert other.upgrade_starts == [("lws", "v0.8.0")]


def test_a_collection_that_does_not_end_is_exit_3_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """An overloaded machine can stall `pytest --collect-only`: that is the harness unable to tell
    (exit 3, one line), never exit 1, which reads as a MUST failure."""
    monkeypatch.setattr(selection, "COLLECT_TIMEOUT_S", 0.01)
    with pytest.raises(InfraError, match=r"did not end within 0.01 s") as caught:
        selection.collect(["-k", "LWS-NAME-001"], load_profile())
    assert caught.value.exit_code == 3


def test_what_is_built_follows_the_provider() -> None:
    profile = load_profile()
    sel = selection.Selection(
        {"t": ["LWS-UPGRADE-001"]}, [[], ["kueue.feature_gates.ShortWorkloadNames=true"]], [("lws", "v0.7.0")]
    )
    local = prebuild.needs(profile, "local", sel)
    assert [n.why for n in local] == [
        "the cluster under test",
        "private clusters",
        "private clusters with kueue.feature_gates.ShortWorkloadNames=true",
        "the upgrade start lws v0.7.0",
    ]
    assert local[-1].profile.versions["lws"] == "v0.7.0" and local[-1].profile.sources["lws"] is None
    assert local[2].profile.kueue_feature_gates == {"ShortWorkloadNames": True}  # the run's profile, with its settings
    assert local[1].profile.node_grace_seconds == profile.private_node_grace_seconds
    assert [n.why for n in prebuild.needs(profile, "existing", sel)] == [n.why for n in local[1:]]
    assert prebuild.needs(profile, "kind", sel) == []  # those tests do not run on kind


def test_a_forbidden_build_is_an_error_at_once_naming_the_build_and_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(NO_BUILD_ENV, "1")
    start = load_profile().upgrade_start("lws", "v0.7.0")
    started = time.monotonic()
    with pytest.raises(InfraError) as err:
        ensure_binaries(start, lambda _m: None)
    said = str(err.value)
    assert "lws v0.7.0" in said and "nothing builds inside a test run" in said and "`lwsc build`" in said
    assert str(tmp_path / "cache" / "build") in said and "build.log" in said
    with pytest.raises(InfraError, match=r"kind v0\.33\.0 is not built.*lwsc build"):
        build("kind", "v0.33.0", None, lambda _m: None)
    assert time.monotonic() - started < 5
    assert not (tmp_path / "cache" / "bin").exists(), "nothing may be built"


def test_inside_a_run_a_directory_source_uses_the_build_made_before_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory source (a mutant, a pull request's tree) is brought up to date by every build
    outside a run; inside one, its build made before pytest started is used as it is, never
    refused as "not built" (the upgrade failure proof and the history benchmark's restart tests)."""
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "lws-tree"
    src.mkdir()
    out = cache.bin_dir("lws", "v0.9.0", str(src))
    out.mkdir(parents=True)
    (out / "lws").write_bytes(b"\x7fELF built before pytest")
    monkeypatch.setattr(cache, "damaged", lambda _out, _bins: None)
    monkeypatch.setenv(NO_BUILD_ENV, "1")
    assert build("lws", "v0.9.0", str(src), lambda _m: None) == out


def test_an_upgrade_test_without_its_start_version_errors_at_once(tmp_path: Path) -> None:
    """The suites as `lwsc run` starts them (a handle of a running cluster): LWS-UPGRADE-001's setup
    needs LWS v0.7.0, not built in this cache; it errors in seconds naming the build and its log
    instead of building under the test's timeout."""
    handle = tmp_path / "handle.json"
    handle.write_text(
        ClusterHandle(
            "local",
            tmp_path / "kubeconfig",
            {"lws": "v0.9.0", "kueue": "v0.17.0"},
            load_profile().topology,
            "default",
            "tas-flavor",
        ).to_json()
    )
    env = {**os.environ, "LWSC_CACHE_DIR": str(tmp_path / "cache"), "LWSC_STATE_DIR": str(tmp_path / "state")}
    env.pop(NO_BUILD_ENV, None)
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(resources.suites()),
            "-k",
            "LWS-UPGRADE",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            f"--lwsc-handle={handle}",
            f"--lwsc-report-dir={tmp_path / 'out'}",
            "-q",
            "-rE",
        ],
        cwd=resources.root(),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert time.monotonic() - started < 120
    assert "2 errors" in proc.stdout, proc.stdout[-3000:]
    assert "lws v0.7.0" in proc.stdout and "lws v0.8.0" in proc.stdout, proc.stdout[-3000:]
    assert "nothing builds inside a test run" in proc.stdout and "build.log" in proc.stdout
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert {o["verdict"] for r in results for o in r["outcomes"].values()} == {"error"}, results
    assert not (tmp_path / "cache" / "bin").exists(), "a test built something"


def test_run_and_build_obtain_the_upgrade_starts_before_pytest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lwsc run --focus LWS-UPGRADE` and `lwsc build`: the start versions v0.7.0 and v0.8.0 are
    obtained first, then the cluster comes up, then pytest starts (stubs record the order)."""
    from lws_conformance import cli
    from lws_conformance.providers.local import LocalCluster

    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached: everything is to build
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    order: list[str] = []

    def obtain(profile: object, progress: object) -> dict[str, Path]:
        order.append(f"build lws {profile.versions['lws']}")  # type: ignore[attr-defined]
        return {"lws": Path("/bin/true")}

    def up(self: LocalCluster, progress: object) -> ClusterHandle:
        order.append("up")
        return ClusterHandle("local", tmp_path / "kubeconfig", {}, self.profile.topology, "t", "f")

    monkeypatch.setattr(prebuild, "ensure_binaries", obtain)
    monkeypatch.setattr(LocalCluster, "up", up)
    monkeypatch.setattr(LocalCluster, "running", lambda self: False)
    monkeypatch.setattr(LocalCluster, "down", lambda self, keep_logs=False: None)
    monkeypatch.setattr(cli, "_suites", lambda *a, **k: order.append("pytest") or 0)
    monkeypatch.setattr(cli.cli_certify, "write_archive", lambda out: out / "x.tar.gz")
    cli.main(["run", "--focus", "LWS-UPGRADE"])
    assert order == ["build lws v0.9.0", "build lws v0.7.0", "build lws v0.8.0", "up", "pytest"]
    order.clear()
    monkeypatch.setattr("lws_conformance.toolchain.ensure_binaries", obtain)
    monkeypatch.setattr(cli.html, "install_allure", lambda _d: None)
    assert cli.main(["build", "--focus", "LWS-UPGRADE"]) == 0
    assert {"build lws v0.7.0", "build lws v0.8.0"} <= set(order)


def test_an_unobtainable_start_version_is_one_line_before_any_build(tmp_path: Path) -> None:
    """`upgrade.lws_from` naming a version the module proxy does not serve: `lwsc build` and
    `lwsc run` say so in one line, exit 2, before anything is built, started or written."""
    env = {**os.environ, "LWSC_CACHE_DIR": str(tmp_path / "cache"), "LWSC_STATE_DIR": str(tmp_path / "state")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # this checkout's harness, from another cwd
    bad = ["--set", "upgrade.lws_from=[v0.0.1]"]
    for argv in (["build", "--focus", "LWS-UPGRADE"], ["run", "--focus", "LWS-UPGRADE"]):
        proc = subprocess.run(
            [sys.executable, "-m", "lws_conformance.cli", *bad, *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("lwsc: error:")]
        assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "sigs.k8s.io/lws@v0.0.1" in errors[0] and "--set versions." in errors[0], errors[0]
        assert proc.stderr.splitlines() == errors, "a usage error says nothing else"
    assert not (tmp_path / "cache" / "bin").exists() and not (tmp_path / "state").exists()
    assert list(tmp_path.iterdir()) == []  # no reports/, nothing cached


def test_one_command_builds_a_directory_source_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lwsc run` builds a directory source before pytest starts and brings its cluster up with
    that build, not with a second `go mod tidy` and link of the same tree (minutes for Kueue); the
    next command brings the tree up to date."""
    from lws_conformance.toolchain import gobuild

    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "kueue-tree"
    src.mkdir()
    steps: list[str] = []

    def go(cmd: list[str], cwd: Path, log: Path, label: str, progress: object, expected: int | None = None) -> int:
        steps.append(cmd[1])
        if cmd[1] == "build":
            Path(cmd[cmd.index("-o") + 1]).write_bytes(b"\x7fELF kueue")
        return 3

    monkeypatch.setattr(gobuild, "_run_with_progress", go)
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")
    monkeypatch.setattr(gobuild, "_BUILT_HERE", set())
    first = build("kueue", "v0.17.0", str(src), lambda _m: None)
    assert build("kueue", "v0.17.0", str(src), lambda _m: None) == first
    assert steps == ["mod", "build"]
    monkeypatch.setattr(gobuild, "_BUILT_HERE", set())  # another command
    assert build("kueue", "v0.17.0", str(src), lambda _m: None) == first
    assert steps == ["mod", "build", "mod", "build"]
