"""Did a run judge every test it collected? (pure)

results.json records pytest's exit status (`pytest_exit`), the tests the run collected
(`collected`) and each of them that ended without a verdict (`unjudged`: never reported, as the
tests of a lost xdist worker, or failed with no requirement recording why). A run that cannot vouch
for every collected test is inconclusive whatever its verdicts say: a green needs every check to
have run.
"""

from __future__ import annotations

from typing import Any

PYTEST_EXIT = {
    0: "all passed",
    1: "tests failed",
    2: "interrupted",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}


def gaps(meta: dict[str, Any]) -> list[str]:
    """Why the run is not whole, one line each; [] when it is. A results.json without
    `pytest_exit` (written before it was recorded) is judged by its verdicts alone."""
    if "pytest_exit" not in meta:
        return []
    out = []
    rc = int(meta["pytest_exit"])
    empty_shard = rc == 5 and bool(meta.get("shard")) and not meta.get("collected")
    if rc not in (0, 1) and not empty_shard:
        out.append(f"pytest exited {rc} ({PYTEST_EXIT.get(rc, 'unknown status')})")
    unjudged: dict[str, str] = meta.get("unjudged") or {}
    if unjudged:
        first, why = next(iter(unjudged.items()))
        out.append(f"{len(unjudged)} collected test(s) ended without a verdict, first {first}: {why}")
    return out
