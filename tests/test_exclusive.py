"""`@pytest.mark.exclusive(name)`: the same name never runs at the same time on two xdist workers
(pytest-xdist's loadgroup groups nothing on pytest 9.2, pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = """
import os, time, pytest

def _spell(tag):
    start = time.monotonic()
    time.sleep(1.0)
    with open(os.environ["SPELLS"], "a") as fh:
        fh.write(f"{tag} {start} {time.monotonic()}\\n")

@pytest.mark.exclusive("x")
@pytest.mark.parametrize("i", range(4))
def test_x(i):
    _spell("x")

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    _spell("free")
"""


def _overlaps(spells: list[tuple[float, float]]) -> int:
    ordered = sorted(spells)
    return sum(b0 < a1 for (_, a1), (b0, _) in zip(ordered, ordered[1:], strict=False))


def test_exclusive_tests_never_overlap_while_others_run_in_parallel(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spells = tmp_path / "spells"
    monkeypatch.setenv("SPELLS", str(spells))
    monkeypatch.setenv("LWSC_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makepyfile(test_x=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--lwsc-run-id=t1")
    result.assert_outcomes(passed=8)
    rows = [line.split() for line in spells.read_text().splitlines()]
    by = {tag: [(float(a), float(b)) for t, a, b in rows if t == tag] for tag in ("x", "free")}
    assert len(by["x"]) == 4 and _overlaps(by["x"]) == 0, by["x"]
    assert _overlaps(by["free"]) > 0, "the workers never ran two tests at once: the check above proves nothing"
