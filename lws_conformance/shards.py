"""`lwsc run --shard K/N`: a deterministic 1/N of the selected tests, balanced by recorded durations.

Every test gets its recorded duration (`fixtures/test-durations.json`, written from a run by
`scripts/record-durations`; a test not recorded counts as the median), then the tests are dealt
longest first to the shard with the least total so far (ties: the lower shard, then the node id).
The same selection gives every machine the same split, so N machines each running their K cover
every test exactly once; `lwsc report --merge` joins their run directories into one report.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from pathlib import Path
from typing import Any

from . import resources
from .errors import UserError

DURATIONS = resources.fixtures() / "test-durations.json"
SPEC = re.compile(r"^(\d+)/(\d+)$")


def parse(spec: str) -> tuple[int, int]:
    """(K, N) of "K/N", 1 <= K <= N; one line naming the fix otherwise."""
    m = SPEC.match(spec.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UserError(f"--shard must look like K/N with 1 <= K <= N (e.g. 2/3), got {spec!r}")
    return int(m.group(1)), int(m.group(2))


def durations(path: Path | None = None) -> dict[str, float]:
    path = path or DURATIONS
    return {str(k): float(v) for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def _weights(nodeids: list[str], recorded: dict[str, float]) -> dict[str, float]:
    """Each test's recorded duration; a test not recorded counts as the median of those that are."""
    known = [recorded[i] for i in nodeids if i in recorded]
    default = statistics.median(known) if known else 1.0
    return {i: recorded.get(i, default) for i in nodeids}


def longest_first(nodeids: list[str], recorded: dict[str, float]) -> list[str]:
    """The node ids, longest recorded duration first (ties keep the given order): the order a run
    hands tests to its xdist workers, so the slowest promise starts at once instead of last."""
    weight = _weights(nodeids, recorded)
    return sorted(nodeids, key=lambda i: -weight[i])


def assign(nodeids: list[str], n: int, recorded: dict[str, float]) -> list[list[str]]:
    """The N shards' node ids (each in the order given), longest-processing-time first."""
    weight = _weights(nodeids, recorded)
    totals = [0.0] * n
    chosen: dict[str, int] = {}
    for nodeid in sorted(nodeids, key=lambda i: (-weight[i], i)):
        k = min(range(n), key=lambda s: (totals[s], s))
        chosen[nodeid] = k
        totals[k] += weight[nodeid]
    return [[i for i in nodeids if chosen[i] == k] for k in range(n)]


def selection(nodeids: list[str]) -> dict[str, Any]:
    """What a run selected before it was sharded: the count and a digest of the sorted node ids.
    Shards of one gate carry the same; `report --merge` refuses shards of different selections."""
    digest = hashlib.sha256("\n".join(sorted(nodeids)).encode()).hexdigest()[:16]
    return {"count": len(nodeids), "digest": digest}
