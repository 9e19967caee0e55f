"""Every build path records the commit the package was built from (`_data/BUILD.json`, what
`lwsc --version`, summary.json and the results manifest report): `python -m build` (the sdist,
then the wheel built from the unpacked sdist, where there is no git), `pip wheel` of an sdist
unpacked inside some other git repository (not that repository's HEAD), and a source tree without
git given `LWSC_BUILD_COMMIT`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from lws_conformance.toolchain.cache import locked

ROOT = Path(__file__).resolve().parent.parent
RECORD = "lws_conformance/_data/BUILD.json"


def _head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _wheel_commit(whl: Path) -> str:
    return str(json.loads(zipfile.ZipFile(whl).read(RECORD))["commit"])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build` of the checkout: an sdist and the wheel built from it."""
    out = tmp_path_factory.mktemp("build")
    with locked("wheel-build"):  # setuptools writes build/ and *.egg-info in the checkout
        proc = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_python_m_build_records_the_commit_in_the_sdist_and_the_wheel(built: Path) -> None:
    head = _head()
    assert len(head) == 40
    (whl,) = built.glob("lws_conformance-*.whl")
    assert _wheel_commit(whl).removesuffix("-dirty") == head
    (sdist,) = built.glob("lws_conformance-*.tar.gz")
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(RECORD))
        recorded = tar.extractfile(member)
        assert recorded is not None and json.loads(recorded.read())["commit"] == _wheel_commit(whl)


def _unpacked_sdist(built: Path, into: Path) -> Path:
    (sdist,) = built.glob("lws_conformance-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(into, filter="data")
    (tree,) = into.glob("lws_conformance-*")
    return tree


def _pip_wheel(tree: Path, out: Path, env: dict[str, str]) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (whl,) = out.glob("lws_conformance-*.whl")
    return whl


def test_an_sdist_inside_another_repository_keeps_its_own_commit(built: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-repo"
    other.mkdir()
    git = ["git", "-C", str(other), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    tree = _unpacked_sdist(built, other)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "vendored"], check=True)
    env = {k: v for k, v in os.environ.items() if k != "LWSC_BUILD_COMMIT"}
    whl = _pip_wheel(tree, tmp_path / "dist", env)
    assert _wheel_commit(whl).removesuffix("-dirty") == _head()


def test_a_tree_without_git_takes_the_commit_from_the_environment(built: Path, tmp_path: Path) -> None:
    tree = _unpacked_sdist(built, tmp_path)
    (tree / RECORD).unlink()  # e.g. a release tarball of the repository: no git, no record
    env = {**os.environ, "LWSC_BUILD_COMMIT": "0123456789abcdef0123456789abcdef01234567"}
    whl = _pip_wheel(tree, tmp_path / "dist", env)
    assert _wheel_commit(whl) == "0123456789abcdef0123456789abcdef01234567"
