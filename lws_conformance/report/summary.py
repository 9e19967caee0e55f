"""Per-requirement verdicts from per-test results (pure; the plugin collects, this decides).

A requirement's verdict: failed if any proving test failed or errored (including a strict xfail
that passed); xfail if its tests are expected failures (a known upstream bug, named);
not-applicable if gated off by version; passed if every proving test passed (a non-strict xfail
that passed counts as passed); not-run if none of its tests ran (deselected or not collected).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..catalogue import Requirement

ORDER = ("failed", "xfail", "passed", "not-applicable", "not-run")


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    outcome: str  # passed | failed | skipped | xfail | xpass | error
    duration: float
    requirements: list[str]
    detail: str = ""


@dataclass
class Row:
    id: str
    area: str
    must: str
    since: dict[str, str]
    verdict: str
    duration: float
    tests: list[str] = field(default_factory=list)
    detail: str = ""


def verdict(results: list[TestResult]) -> tuple[str, str]:
    if not results:
        return "not-run", ""
    outcomes = {r.outcome for r in results}
    # A strict xfail that passes is reported failed by pytest itself; "xpass" here is a
    # non-strict one (a race that did not reproduce this time), which proves the requirement.
    for bad in ("failed", "error"):
        if bad in outcomes:
            return "failed", next(r.detail for r in results if r.outcome == bad)
    if "xfail" in outcomes:
        return "xfail", next(r.detail for r in results if r.outcome == "xfail")
    if outcomes == {"skipped"}:
        detail = results[0].detail
        return ("not-applicable" if detail.startswith("not-applicable") else "not-run"), detail
    return "passed", ""


def build(reqs: dict[str, Requirement], results: list[TestResult]) -> list[Row]:
    by_req: dict[str, list[TestResult]] = {}
    for r in results:
        for rid in r.requirements:
            by_req.setdefault(rid, []).append(r)
    rows = []
    for rid, req in sorted(reqs.items()):
        mine = by_req.get(rid, [])
        v, detail = verdict(mine)
        rows.append(
            Row(
                rid,
                req.area,
                req.must,
                req.since,
                v,
                round(sum(r.duration for r in mine), 2),
                [r.nodeid for r in mine],
                detail[:500],
            )
        )
    return rows


def totals(rows: list[Row]) -> dict[str, int]:
    return {v: sum(1 for r in rows if r.verdict == v) for v in ORDER}


def write(out: Path, rows: list[Row], meta: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {**meta, "totals": totals(rows), "requirements": [asdict(r) for r in rows]}
    (out / "summary.json").write_text(json.dumps(doc, indent=2))
    lines = [
        f"# lws-conformance run {meta.get('run_id', '')}",
        "",
        "| component | version |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(meta.get("versions", {}).items())],
        "",
        "Totals: " + ", ".join(f"{v} {n}" for v, n in totals(rows).items()),
        "",
        "| requirement | verdict | since | MUST | duration (s) |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (ORDER.index(r.verdict), r.id)):
        since = ", ".join(f"{k} {v}" for k, v in r.since.items())
        note = f" — {r.detail.splitlines()[0][:160]}" if r.detail and r.verdict != "passed" else ""
        lines.append(f"| {r.id} | **{r.verdict}**{note} | {since} | {r.must} | {r.duration} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
