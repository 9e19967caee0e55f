"""Fixtures shared by the harness's own tests."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from lws_conformance.resources import PLUGIN, plugin_args

# The harness's own tests use its plugin's fixtures and options (lwsc_cluster, k8s,
# --lwsc-kubeconfig); no entry point loads it into every pytest session, so it is loaded here,
# and in the pytest runs that tests start themselves (PYTEST_PLUGINS below, or `-p`).
pytest_plugins = plugin_args()[1:]


@pytest.fixture(autouse=True)
def _plugin_in_pytester_runs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester's runs (in process or in a subprocess) load the plugin as `lwsc run`'s pytest does:
    explicitly (PYTEST_PLUGINS, read by pytest like `-p`)."""
    if plugin_args() and ("pytester" in request.fixturenames or "plugin_pytester" in request.fixturenames):
        monkeypatch.setenv("PYTEST_PLUGINS", PLUGIN)


@pytest.fixture
def sigint_is_ctrl_c() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt during the test, as in an interactive shell. A process
    started in the background by a non-interactive shell inherits SIGINT *ignored*, and Python
    keeps that, so a test that presses Ctrl-C with `raise_signal(SIGINT)` would see nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# A conftest for pytester runs of the plugin: the cluster fixture replaced by a handle with fixed
# versions (LWS v0.9.0, Kueue v0.17.0); nothing else is faked.
FIXED_HANDLE = """
import pytest
from pathlib import Path
from lws_conformance.profile import load_profile
from lws_conformance.providers.base import ClusterHandle

@pytest.fixture(scope="session")
def lwsc_cluster():
    return ClusterHandle("local", Path("/nonexistent"), {"lws": "v0.9.0", "kueue": "v0.17.0"},
                         load_profile().topology, "default", "tas-flavor")
"""


@pytest.fixture
def plugin_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """`pytester` whose runs see a cluster handle with fixed versions (FIXED_HANDLE)."""
    pytester.makeconftest(FIXED_HANDLE)
    return pytester


def repo_files() -> list[str]:
    """The project's files as git sees them: tracked, and new ones not ignored (sorted names)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(set(filter(None, out.split("\0"))))


def benchmark_module(relpath: str) -> ModuleType:
    """The file `relpath` of benchmarks/ (e.g. "cpu_ab.py", "mutation/mutlib.py") as a module
    named for its stem, loaded once per process: the benchmarks are scripts, not a package."""
    name = Path(relpath).stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / "benchmarks" / relpath)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
