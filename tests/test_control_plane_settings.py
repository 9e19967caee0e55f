"""The local cluster's control-plane settings: Go GC and threads per component, KCM's controllers,
authorization."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lws_conformance.profile import load_profile
from lws_conformance.providers import boot, components
from lws_conformance.providers.components import GO_GC, GO_MEMORY_LIMIT, ORDER, ClusterState, go_procs
from lws_conformance.toolchain import cache as bincache


def test_every_component_starts_with_the_go_gc_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    monkeypatch.delenv("GOMAXPROCS", raising=False)
    monkeypatch.setattr(components, "usable_cores", lambda: 2.0)
    state = ClusterState(load_profile(), name="c1")
    for component in ORDER:
        want = {"GOGC": GO_GC, "GOMEMLIMIT": GO_MEMORY_LIMIT[component], "GOMAXPROCS": "1"}
        assert state.process_env(component) == want


def test_go_threads_are_limited_only_where_measured() -> None:
    assert go_procs(1.0) == go_procs(2.0) == "1"
    assert go_procs(2.5) == go_procs(8.0) == ""  # Go's default: not measured on more cores


def test_gc_settings_in_lwscs_environment_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("GOGC", "100")
    monkeypatch.setenv("GOMAXPROCS", "2")
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    env = ClusterState(load_profile(), name="c1").process_env("kube-apiserver")
    assert env == {"GOMEMLIMIT": GO_MEMORY_LIMIT["kube-apiserver"]}  # GOGC and GOMAXPROCS inherited from lwsc's


def test_coverage_env_still_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSC_STATE_DIR", str(tmp_path / "state"))
    prof = load_profile("default", ["build.coverage=true", f"build.coverage_dir={tmp_path / 'cov'}"])
    assert ClusterState(prof, name="c2").process_env("lws")["GOCOVERDIR"] == str(tmp_path / "cov")


def test_kcm_controllers_are_known_to_the_pinned_kcm() -> None:
    """A misspelt name would make KCM refuse to start; read its own list of controllers."""
    version = load_profile().versions["kubernetes"]
    kcm = bincache.cache_root() / "bin" / "kubernetes" / version / "kube-controller-manager"
    if not kcm.is_file():
        pytest.skip(f"kube-controller-manager {version} is not built here (`lwsc build`)")
    out = subprocess.run([str(kcm), "--help"], capture_output=True, text=True, timeout=60).stdout
    known = out.split("All controllers:", 1)[1].split("\n", 1)[0]
    names = {n.strip() for n in known.split(",")}
    assert set(boot.KCM_CONTROLLERS) <= names, set(boot.KCM_CONTROLLERS) - names
    assert len(set(boot.KCM_CONTROLLERS)) == len(boot.KCM_CONTROLLERS)


def test_kcm_keeps_what_the_in_cluster_job_test_needs() -> None:
    """tests/e2e/test_incluster_rbac.py launches a Job held back by a ResourceQuota of no pods."""
    assert {"job-controller", "resourcequota-controller"} <= set(boot.KCM_CONTROLLERS)
