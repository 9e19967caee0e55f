"""`-n auto`: workers from the usable cores and the measured share of a core per worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from lws_conformance import worker_count
from lws_conformance.errors import UserError


@pytest.mark.parametrize(
    ("cores", "count"),
    [
        (1, 2),
        (2, min(3, worker_count.CHECKED_MAX)),
        (0.5, 1),
        (64, worker_count.CHECKED_MAX),
    ],
)
def test_auto_keeps_the_cores_busy_up_to_the_checked_count(cores: float, count: int) -> None:
    got = worker_count.resolve("auto", cores=cores)
    assert got.count == count
    assert got.why.startswith(f"auto: {cores:g} usable core(s)")
    assert ("capped at" in got.why) == (cores / worker_count.CORE_PER_WORKER > worker_count.CHECKED_MAX + 0.5)


def test_a_number_is_taken_as_given() -> None:
    assert (worker_count.resolve("7").count, worker_count.resolve("7").why) == (7, "as given")


@pytest.mark.parametrize("text", ["0", "abc", "-1", "logical", ""])
def test_anything_else_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(UserError, match=r"-n/--workers must be a positive number or auto"):
        worker_count.resolve(text)


@pytest.mark.parametrize(
    ("cpu_max", "cores"), [("max 100000\n", None), ("150000 100000\n", 1.5), ("20000 100000\n", 0.5)]
)
def test_a_cgroup_quota_lowers_the_usable_cores(tmp_path: Path, cpu_max: str, cores: float | None) -> None:
    f = tmp_path / "cpu.max"
    f.write_text(cpu_max)
    import os

    affinity = float(len(os.sched_getaffinity(0)))
    assert worker_count.usable_cores(f) == (min(affinity, cores) if cores is not None else affinity)
    assert worker_count.usable_cores(tmp_path / "absent") == affinity
