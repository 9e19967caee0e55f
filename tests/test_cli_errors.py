"""User mistakes end in one line, exit code 2, and nothing left running."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lws_conformance.profile import load_profile
from lws_conformance.providers import process
from lws_conformance.providers.ports import claim_port_range, release_port_range
from lws_conformance.toolchain import ensure_binaries


def lwsc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("lwsc: error:")]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def port() -> Iterator[int]:
    """A base port whose block is free and claimed (as private clusters claim theirs), so these
    tests never collide with a cluster someone else runs on this machine."""
    base = claim_port_range()
    yield base
    release_port_range(base)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {"LWSC_STATE_DIR": str(tmp_path / "state")}
    yield env
    # Nothing may be left running: every process we start names the state dir in its arguments.
    marker = str(tmp_path).encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes():
                pytest.fail(f"process left running: {cmdline.read_bytes().replace(b'\0', b' ')!r}")
        except OSError:
            continue


def test_unknown_profile_key(state: dict[str, str]) -> None:
    assert_one_line_error(lwsc("--set", "topology.rackz=3", "up", env=state), "topology.rackz", "valid keys")


def test_busy_port_names_the_port_and_the_fix(state: dict[str, str], port: int) -> None:
    with socket.socket() as s:
        # as servers do (Go's listeners too): a cluster just killed on this block may have left
        # connections in TIME_WAIT on the port, which refuse a plain bind but not a server's
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port + 2))
        s.listen()
        proc = lwsc("--set", f"network.base_port={port}", "up", env=state)
    assert_one_line_error(proc, str(port + 2), "kube-apiserver", "network.base_port")


def test_base_port_in_the_ephemeral_range_is_refused(state: dict[str, str]) -> None:
    lo, _ = process.ephemeral_ports()
    proc = lwsc("--set", f"network.base_port={lo + 1000}", "up", env=state)
    assert_one_line_error(proc, "ephemeral range", "ip_local_port_range", "network.base_port")


def test_missing_go_toolchain(state: dict[str, str], port: int, tmp_path: Path) -> None:
    env = {**state, "LWSC_CACHE_DIR": str(tmp_path / "empty-cache"), "PATH": "/usr/bin:/bin"}
    assert_one_line_error(lwsc("--set", f"network.base_port={port}", "up", env=env), "Go toolchain")


def test_unobtainable_version_fails_before_any_build(state: dict[str, str], port: int, tmp_path: Path) -> None:
    env = {**state, "LWSC_CACHE_DIR": str(tmp_path / "empty-cache")}
    proc = lwsc("--set", "versions.lws=v0.0.1", "--set", f"network.base_port={port}", "build", env=env)
    assert_one_line_error(proc, "sigs.k8s.io/lws@v0.0.1", "versions.")
    assert not (tmp_path / "empty-cache" / "bin").exists(), "nothing may be built before versions resolve"


def test_component_dying_at_startup_names_it_and_its_log(state: dict[str, str], port: int) -> None:
    ensure_binaries(load_profile(), lambda _m: None)  # cached after `lwsc build`
    proc = lwsc("--set", "binaries.etcd=/bin/false", "--set", f"network.base_port={port}", "up", env=state)
    assert_one_line_error(proc, "etcd exited during start-up", "etcd.log")


def test_certify_refuses_a_partial_selection(state: dict[str, str], port: int) -> None:
    """A certification run is every requirement: --focus / --skip are refused before anything runs."""
    for extra in (["--focus", "LWS-NAME"], ["--skip", "ROLL"]):
        proc = lwsc("--set", f"network.base_port={port}", "run", "--certify", *extra, env=state)
        assert_one_line_error(proc, "--certify", "--focus/--skip")
        assert not list(Path(state["LWSC_STATE_DIR"]).glob("*/pids")), "a cluster was started"


def test_run_input_is_checked_before_any_cluster(state: dict[str, str], port: int, tmp_path: Path) -> None:
    """A bad -n, a missing --product-metadata file, a bad profile or --set: one line, exit 2, before
    anything is built or started (also with --dry-run)."""
    base = ["--set", f"network.base_port={port}", "run"]
    for extra, needle in (
        (["-n", "abc"], "-n/--workers must be a positive number or auto"),
        (["-n", "0"], "-n/--workers must be a positive number or auto"),
        (["--product-metadata", str(tmp_path / "nope.yaml")], "--product-metadata"),
        (["--dry-run", "-n", "abc"], "-n/--workers"),
        (["--dry-run", "--set", "timeouts.scale=abc"], "timeouts.scale"),
        (["--dry-run", "--set", "no.such_key=1"], "unknown profile key"),
        (["--shard", "4/3"], "--shard must look like K/N"),
        (["--certify", "--shard", "1/2"], "drop --shard"),
    ):
        proc = lwsc(*base, *extra, env=state)
        assert_one_line_error(proc, needle)
        assert not list(Path(state["LWSC_STATE_DIR"]).glob("*/pids")), "a cluster was started"


def test_dry_run_exits_0_or_2_never_pytests_own_codes(state: dict[str, str]) -> None:
    assert lwsc("run", "--dry-run", "--focus", "LWS-NAME-001", env=state).returncode == 0
    assert_one_line_error(lwsc("run", "--dry-run", "--focus", "NO_SUCH_TEST_XYZ", env=state), "selects no test")
    assert_one_line_error(lwsc("run", "--dry-run", "--focus", "(((", env=state), "could not be collected")


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    kc = tmp_path / "other.kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: other\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "contexts: [{name: other, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    return kc


def test_cluster_commands_act_on_the_cluster_kubeconfig_names_and_say_which(
    state: dict[str, str], tmp_path: Path
) -> None:
    """Like kubectl: $KUBECONFIG names the cluster when no --kubeconfig or --provider is given; a
    server nobody answers at is one line within seconds, naming server and context."""
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        server = f"https://127.0.0.1:{s.getsockname()[1]}"
        kc = _kubeconfig(tmp_path, server)
        for cmd in (["preflight"], ["discover"], ["cleanup", "--all"]):
            started = time.monotonic()
            proc = lwsc(*cmd, env={**state, "KUBECONFIG": str(kc)})
            assert time.monotonic() - started < 20, cmd
            assert_one_line_error(proc, "cannot reach the API server", server, "context other")
            assert f"cluster: {server} (context other, kubeconfig {kc})" in proc.stderr


def test_a_wrong_context_is_one_line(state: dict[str, str], tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path, "https://127.0.0.1:1")
    for cmd in (["preflight"], ["discover"], ["cleanup", "--all"], ["retrieve"]):
        proc = lwsc(*cmd, "--kubeconfig", str(kc), "--context", "nope", env=state)
        assert_one_line_error(proc, "context 'nope' not in", "it has: other")
