"""The coverage build option (profile key build.coverage): flags, cache keys, which controllers
are instrumented, GOCOVERDIR for their processes, and a graceful stop before the cluster is
discarded (counters are written only at a normal exit)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lws_conformance.errors import UserError
from lws_conformance.profile import load_profile
from lws_conformance.providers import process
from lws_conformance.providers.components import COVERAGE_MARK, ClusterState
from lws_conformance.toolchain import cache, coverage_dir, covered
from lws_conformance.toolchain.recipes import RECIPES, cover_flags


def test_cover_flags_count_the_component_module_only() -> None:
    assert cover_flags(RECIPES["lws"]) == ["-cover", "-covermode=atomic", "-coverpkg=sigs.k8s.io/lws/..."]
    assert cover_flags(RECIPES["kueue"])[-1] == "-coverpkg=sigs.k8s.io/kueue/..."
    with pytest.raises(ValueError):
        cover_flags(RECIPES["kubernetes"])


def test_instrumented_binaries_have_their_own_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path))
    plain, cover = cache.bin_dir("lws", "v0.9.0"), cache.bin_dir("lws", "v0.9.0", coverage=True)
    assert plain.name == "v0.9.0" and cover.name == "v0.9.0-cover" and plain.parent == cover.parent
    src = cache.bin_dir("lws", "v0.9.0", "/src/lws", True)
    assert src.name == cache.source_key("/src/lws") + "-cover"


def test_coverage_is_off_by_default_and_covers_the_controllers_only() -> None:
    assert not any(covered(load_profile(), c) for c in RECIPES)
    on = load_profile(overrides=["build.coverage=true"])
    assert [c for c in RECIPES if covered(on, c)] == ["lws", "kueue"]
    only = load_profile(overrides=["build.coverage=[kueue]"])
    assert [c for c in RECIPES if covered(only, c)] == ["kueue"]


def test_an_upgrade_start_version_is_not_instrumented() -> None:
    on = load_profile(overrides=["build.coverage=true"])
    start = on.upgrade_start("lws", "v0.8.0")
    assert not covered(start, "lws") and covered(start, "kueue")
    assert covered(on, "lws"), "the profile under test keeps its coverage"


def test_bad_coverage_value_is_a_user_error() -> None:
    with pytest.raises(UserError, match="build.coverage"):
        load_profile(overrides=["build.coverage=sometimes"])
    with pytest.raises(UserError, match="build.coverage"):
        load_profile(overrides=["build.coverage=[etcd]"])


def test_coverage_dir_is_the_given_one_or_per_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    assert coverage_dir(load_profile(overrides=["build.coverage=true"]), "c1") == tmp_path / "cache" / "coverage" / "c1"
    given = load_profile(overrides=["build.coverage=true", f"build.coverage_dir={tmp_path / 'cov'}"])
    assert coverage_dir(given, "c1") == tmp_path / "cov"


def test_only_instrumented_controllers_get_gocoverdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    plain = ClusterState(load_profile(), name="c1")
    assert plain.coverage_env("lws") == {} and not (plain.dir / COVERAGE_MARK).exists()
    prof = load_profile(overrides=["build.coverage=true", f"build.coverage_dir={tmp_path / 'cov'}"])
    state = ClusterState(prof, name="c2")
    assert state.coverage_env("etcd") == {}
    assert state.coverage_env("kueue") == {"GOCOVERDIR": str(tmp_path / "cov")}
    assert (tmp_path / "cov").is_dir() and (state.dir / COVERAGE_MARK).read_text() == str(tmp_path / "cov")


def test_down_stops_instrumented_controllers_with_sigterm_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A controller stand-in that writes a file when SIGTERM lets it exit normally: `down`
    gives it the chance; without the coverage mark it is killed outright (as before)."""
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    script = (
        "import signal, sys, time, pathlib\n"
        "def bye(*_):\n    pathlib.Path(sys.argv[1]).write_text('flushed'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    )
    for name, mark in (("c-cover", True), ("c-plain", False)):
        state = ClusterState(load_profile(), name=name)
        state.dir.mkdir(parents=True)
        if mark:
            (state.dir / COVERAGE_MARK).write_text(str(tmp_path))
        flag = tmp_path / f"{name}.flushed"
        rec = process.start("lws", [sys.executable, "-c", script, str(flag)], state.log("lws"), state.pid_dir)
        state.wait_log("lws", ("ready",), 0, 30)
        state.down()
        assert not process.alive(rec)
        assert flag.is_file() == mark, name


def test_gobuild_passes_the_cover_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The build command of a coverage build (the go command itself is replaced)."""
    from lws_conformance.toolchain import gobuild

    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path))
    seen: list[list[str]] = []

    def fake_run(cmd: list[str], cwd: Path, log: Path, label: str, progress: object, expected: object = None) -> int:
        seen.append(cmd)
        if cmd[1] == "build":
            out = Path(cmd[cmd.index("-o") + 1])
            out.write_bytes(b"binary")
        return 100

    monkeypatch.setattr(gobuild, "_run_with_progress", fake_run)
    monkeypatch.setattr(gobuild, "module_download", lambda m, v: {"Dir": str(tmp_path), "GoMod": ""})
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")
    out = gobuild.build("lws", "v0.9.0", None, lambda _msg: None, coverage=True)
    assert out == cache.bin_dir("lws", "v0.9.0", coverage=True) and (out / "lws").is_file()
    build_cmd = next(c for c in seen if c[1] == "build")
    assert "-coverpkg=sigs.k8s.io/lws/..." in build_cmd and "-covermode=atomic" in build_cmd
    assert not cache.bin_dir("lws", "v0.9.0").exists(), "the plain entry is untouched"


def test_go_tool_covdata_exists() -> None:
    """The report needs `go tool covdata` (part of every Go >= 1.20 toolchain)."""
    if not shutil.which("go"):
        pytest.skip("no Go toolchain")
    go = subprocess.run(["go", "tool", "-n", "covdata"], capture_output=True, text=True)
    assert go.returncode == 0, go.stderr
