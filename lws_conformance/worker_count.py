"""How many pytest-xdist workers `lwsc run -n auto` (the default) starts: as many as keep the
machine's usable cores busy, from the measured CPU one worker keeps busy, never more than the
largest count whose verdicts were measured identical to `-n 3`'s.

A worker is mostly waiting for the cluster: one test's controllers, API server and the harness's
own watches keep `CORE_PER_WORKER` of a core busy (docs/performance.md, "CPU-seconds and wall time
by -n"). Usable cores are the CPUs this process may run on, lowered by a cgroup CPU quota (a CI
container limited to 2 CPUs on a 64-core host counts 2).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

# The share of a core one worker keeps busy: 483 CPU-s over 402 s of wall with 2 workers (full
# run, 2 cores, idle, benchmarks/results/run-cpu-2026-12-03-1718.json).
CORE_PER_WORKER = 0.6
# The largest -n whose full runs read the same verdicts as -n 3, but for listed races
# (benchmarks/results/run-cpu-2026-12-06-0932.json); a machine with more cores gets no more.
CHECKED_MAX = 3
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


@dataclass(frozen=True)
class Workers:
    count: int
    why: str

    def __str__(self) -> str:
        return str(self.count)


def usable_cores(cpu_max: Path = CGROUP_CPU_MAX) -> float:
    """CPUs this process may use: its affinity mask, lowered by a cgroup v2 quota if one is set."""
    cores = float(len(os.sched_getaffinity(0)))
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        return cores
    if quota == "max":
        return cores
    return max(0.5, min(cores, int(quota) / int(period)))


def resolve(text: str, cores: float | None = None) -> Workers:
    """A positive number as given; `auto` from the usable cores (see the module docstring)."""
    if text != "auto":
        if not (text.isdigit() and int(text) >= 1):
            raise UserError(f"-n/--workers must be a positive number or auto, got {text!r}")
        return Workers(int(text), "as given")
    have = usable_cores() if cores is None else cores
    wanted = max(1, math.floor(have / CORE_PER_WORKER + 0.5))
    count = min(wanted, CHECKED_MAX)
    capped = f", capped at {CHECKED_MAX} (the largest -n with measured verdicts)" if wanted > count else ""
    return Workers(count, f"auto: {have:g} usable core(s) / {CORE_PER_WORKER} core per worker{capped}")
