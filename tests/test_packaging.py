"""The wheel carries suites/, fixtures/, chaos/ and docs/upstream/, and an installed copy finds them
from any directory through `lws_conformance.resources` (no checkout needed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from lws_conformance import resources
from lws_conformance.toolchain.cache import locked

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built in the checkout (setuptools' build/ and egg-info there): two builds at once collide
    ("File exists: build/bdist…"), so xdist workers and other runs take turns."""
    out = tmp_path_factory.mktemp("dist")
    with locked("wheel-build"):
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert built.returncode == 0, f"pip wheel: exit {built.returncode}\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    (whl,) = out.glob("lws_conformance-*.whl")
    return whl


def test_locator_points_at_the_checkout_or_the_installed_copy() -> None:
    if resources.PACKAGE.parent == ROOT:  # editable install / checkout on sys.path
        assert resources.root() == ROOT and not resources.installed()
        assert resources.suites() == ROOT / "suites" and resources.chaos() == ROOT / "chaos"
    else:  # tox: the package comes from a wheel installed in the env
        assert resources.installed() and resources.root() == resources.PACKAGE / "_data"
    assert (resources.suites() / "lws").is_dir() and (resources.fixtures() / "profiles" / "default.yaml").is_file()


def test_wheel_contains_the_data_trees_license_and_pytest_config(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = "lws_conformance/_data/"
    for tree in resources.TREES:
        in_checkout = {p.relative_to(ROOT).as_posix() for p in (ROOT / tree).rglob("*") if p.is_file()}
        in_checkout = {p for p in in_checkout if "__pycache__" not in p}
        assert in_checkout and {data + p for p in in_checkout} <= names, tree
    assert {data + "pytest.ini", data + "BUILD.json"} <= names
    package_files = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "lws_conformance").rglob("*")
        if p.is_file() and p.suffix != ".pyc" and "__pycache__" not in p.parts
    }
    assert package_files <= names, sorted(package_files - names)  # e.g. toolchain/kindnode/*, not Python
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta and any(n.endswith("licenses/LICENSE") for n in names)
    build = json.loads(zipfile.ZipFile(wheel).read(data + "BUILD.json"))
    assert len(build["commit"].split("-")[0]) == 40


def test_installed_copy_runs_from_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    site, empty = tmp_path / "site", tmp_path / "empty"
    zipfile.ZipFile(wheel).extractall(site)
    empty.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop(resources.ENV, None)
    probe = (
        "import json; from lws_conformance import resources, profile, catalogue, deviations, workloads, provenance; "
        "from lws_conformance.providers import boot; from lws_conformance.chaos import runner; "
        "print(json.dumps({'file': resources.__file__, 'root': str(resources.root()), "
        "'installed': resources.installed(), 'profile': profile.load_profile('default').name, "
        "'requirements': len(catalogue.default()), 'deviations': len(deviations.default()), "
        "'manifest': workloads.MANIFESTS.is_dir(), 'stage': boot.POD_DELETE_STAGE.is_file(), "
        "'chaos': len(list(runner.EXPERIMENTS.glob('*.yaml'))), 'commit': provenance.commit()}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=empty, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["file"].startswith(str(site)) and got["installed"] and got["root"] == str(site / "lws_conformance/_data")
    assert got["profile"] == "default" and got["requirements"] > 50 and got["deviations"] >= 1
    assert got["manifest"] and got["stage"] and got["chaos"] == len(list((ROOT / "chaos").glob("*.yaml")))
    assert got["commit"] == json.loads((site / "lws_conformance/_data/BUILD.json").read_text())["commit"]
    dry = subprocess.run(
        [sys.executable, "-m", "lws_conformance.cli", "run", "--dry-run", "--focus", "LWS-NAME"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "suites/lws/test_identity.py::test_objects_are_named_from_the_lws_and_group_ordinals" in dry.stdout
    assert not (empty / "reports").exists() and list(empty.iterdir()) == []  # nothing written to the cwd


def test_version_flag() -> None:
    out = subprocess.run([sys.executable, "-m", "lws_conformance.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("lwsc 0.") and "commit" in out.stdout


def test_an_installed_copy_loads_its_pytest_plugin_only_where_asked(wheel: Path, tmp_path: Path) -> None:
    """No `pytest11` entry point: another pytest session of the environment imports neither the
    plugin nor kubernetes or chaostoolkit (allure comes with allure-pytest's own entry point);
    `-p lws_conformance.plugin` (what `lwsc run` passes) and the suites' conftest load it."""
    site, work, deps = tmp_path / "site", tmp_path / "work", tmp_path / "deps"
    zipfile.ZipFile(wheel).extractall(site)
    work.mkdir()
    deps.mkdir()
    # the environment's packages without this checkout's own install (its metadata may still name
    # an entry point): a fresh install of the wheel, as `pip install lws-conformance` leaves it
    packages = Path(pytest.__file__).resolve().parent.parent
    for entry in packages.iterdir():
        if not entry.name.startswith(("lws_conformance", "__editable__")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    names = zipfile.ZipFile(wheel).namelist()
    entry_points = next((n for n in names if n.endswith(".dist-info/entry_points.txt")), None)
    assert entry_points is None or "pytest11" not in zipfile.ZipFile(wheel).read(entry_points).decode()
    (work / "test_other.py").write_text(
        "import sys\n\ndef test_nothing_of_the_harness_is_imported():\n"
        "    loaded = [m for m in ('lws_conformance.plugin', 'kubernetes', 'chaoslib') if m in sys.modules]\n"
        "    assert loaded == []\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(deps)])}
    env.pop(resources.ENV, None)
    env.pop("PYTEST_PLUGINS", None)

    def pytest_(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    other = pytest_("test_other.py")
    assert other.returncode == 0, other.stdout + other.stderr
    asked = pytest_("-p", "lws_conformance.plugin", "test_other.py")
    assert asked.returncode == 1 and "'lws_conformance.plugin'" in asked.stdout, asked.stdout + asked.stderr
    options = pytest_("-p", "lws_conformance.plugin", "--help")
    assert "--lwsc-kubeconfig" in options.stdout
    suites = site / "lws_conformance" / "_data" / "suites"
    keyword = pytest_(str(suites), "--collect-only", "-k", "LWS-NAME-001")  # requirement ids: the plugin's keywords
    assert keyword.returncode == 0 and "test_objects_are_named" in keyword.stdout, keyword.stdout[-2000:]


def _pins(text: str) -> dict[str, str]:
    """{normalized name: version} of every `name==version` line."""
    found = re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", text, re.M)
    return {re.sub(r"[-_.]+", "-", m.group(1)).lower(): m.group(2) for m in found}


def test_the_hash_lock_pins_what_constraints_pin_and_ships_in_the_sdist(tmp_path: Path) -> None:
    lock = (ROOT / "requirements.lock").read_text()
    in_lock, pinned = _pins(lock), _pins((ROOT / "constraints.txt").read_text())
    assert in_lock and {name: pinned.get(name) for name in in_lock} == in_lock  # no version of its own
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.sub(r"[-_.]+", "-", re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0]).lower() for d in runtime}
    assert names <= set(in_lock), names - set(in_lock)
    blocks = [b for b in re.split(r"\n(?=[A-Za-z0-9])", lock) if re.match(r"[A-Za-z0-9].*==", b)]
    assert len(blocks) == len(in_lock) and all("--hash=sha256:" in b for b in blocks), "each pin carries its hashes"
    assert "--find-links" not in lock and "--index-url" not in lock  # nothing of the machine that wrote it
    with locked("wheel-build"):  # setuptools writes egg-info into the checkout: one build at a time
        built = subprocess.run(
            [sys.executable, "-m", "build", "--sdist", "-o", str(tmp_path), str(ROOT)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (sdist,) = tmp_path.glob("lws_conformance-*.tar.gz")
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        for name in ("constraints.txt", "requirements.lock"):
            member = tar.extractfile(f"{top}/{name}")
            assert member is not None and member.read().decode() == (ROOT / name).read_text(), name
