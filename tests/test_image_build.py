"""The harness image builds offline and from pinned versions: `scripts/build-image` makes the
wheelhouse (the package with its commit, every dependency at the version constraints.txt pins),
and the Containerfile's own install command, run as written in a fresh venv with no package index,
installs a working `lwsc` from it alone. The engine step (`--network=none`) needs podman or docker,
which this test does not; it checks the script asks for it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lws_conformance.toolchain.cache import locked

ROOT = Path(__file__).resolve().parent.parent
NO_INDEX_ENV = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[canonicalize_name(name)] = version
    return pins


def _closure(dist: str, extras: tuple[str, ...] = ()) -> set[str]:
    """Every distribution `dist` (with `extras`) needs, transitively, as installed here."""
    seen: set[str] = set()
    todo = [(dist, extras)]
    while todo:
        name, want = todo.pop()
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            env = [{"extra": e} for e in want] or [{"extra": ""}]
            if req.marker and not any(req.marker.evaluate(e) for e in env):
                continue
            key = canonicalize_name(req.name)
            if key not in seen:
                seen.add(key)
                todo.append((req.name, tuple(req.extras)))
    return seen


def test_constraints_pin_every_dependency_within_pyproject_ranges() -> None:
    pins = _pins()
    needed = _closure("lws-conformance", ("dev",))
    assert needed - set(pins) == set(), "not pinned in constraints.txt"
    for text in metadata.requires("lws-conformance") or []:
        req = Requirement(text)
        if canonicalize_name(req.name) in pins:
            assert req.specifier.contains(pins[canonicalize_name(req.name)]), (req, pins[canonicalize_name(req.name)])


def _containerfile_install() -> list[str]:
    """The pip arguments of the Containerfile's RUN line (after `python3 -m pip install`)."""
    text = (ROOT / "Containerfile").read_text().replace("\\\n", " ")
    run = next(line for line in text.splitlines() if line.startswith("RUN ") and "pip install" in line)
    first = run.removeprefix("RUN ").split("&&")[0]
    words = shlex.split(first)
    assert words[:4] == ["python3", "-m", "pip", "install"], words
    return words[4:]


def test_the_image_installs_from_its_wheelhouse_with_no_index(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    env = {**os.environ, "WHEELS_ONLY": "1", "WHEELS": str(wheels), "PYTHON": sys.executable}
    with locked("wheel-build"):  # pip wheel . writes build/ in the checkout
        built = subprocess.run(
            [str(ROOT / "scripts/build-image")], capture_output=True, text=True, env=env, timeout=900, cwd=ROOT
        )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (wheels / "constraints.txt").is_file()
    args = [a.replace("/tmp/wheels", str(wheels)) for a in _containerfile_install()]
    assert "--no-index" in args
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    offline = {k: v for k, v in os.environ.items() if k not in NO_INDEX_ENV}
    install = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", *args],
        capture_output=True,
        text=True,
        env=offline,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    version = subprocess.run([str(venv / "bin/lwsc"), "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert re.search(r"\(commit [0-9a-f]{40}(-dirty)?\)", version.stdout), version.stdout
    frozen = subprocess.run([str(venv / "bin/python"), "-m", "pip", "freeze"], capture_output=True, text=True).stdout
    pins = _pins()
    for line in frozen.splitlines():
        name, _, got = line.partition("==")
        if got and canonicalize_name(name) in pins:
            assert got == pins[canonicalize_name(name)], line


def test_the_engine_builds_with_no_network_and_nothing_else_downloads() -> None:
    script = (ROOT / "scripts/build-image").read_text()
    assert re.search(r'"\$ENGINE" build --network=none .*-f Containerfile', script.replace("\\\n", " "))
    container = (ROOT / "Containerfile").read_text()
    steps = [line for line in container.splitlines() if line and not line.startswith("#")]
    assert not [s for s in steps if re.search(r"\b(curl|wget|apt-get|apk|dnf|yum)\b", s)], steps


@pytest.mark.parametrize("doc", ["docs/providers.md", "README.md"])
def test_docs_say_to_build_the_image_yourself(doc: str) -> None:
    text = (ROOT / doc).read_text()
    assert "scripts/build-image" in text
