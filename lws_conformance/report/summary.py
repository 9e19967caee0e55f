"""Per-requirement verdicts from per-test outcomes (pure; the plugin collects, this decides).

Each test records, for every requirement it proves, an outcome already classified in the worker
(`lws_conformance.verdicts`: known deviations matched by symptom, SHOULD failures as warnings).
A requirement's row combines its tests' outcomes (`verdicts.combine`), and says where each test
ran: a test that needed a private local cluster (a controller killed, a node failed) is evidence
about LWS/Kueue, never about a kind or existing cluster under test.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import verdicts
from ..catalogue import Requirement
from . import completeness, conclusion

ORDER = verdicts.ORDER


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    duration: float
    outcomes: dict[str, dict[str, str]] = field(default_factory=dict)  # requirement -> Outcome.to_dict()
    ran_on: str = ""  # "" = the cluster under test; else e.g. "private local cluster", "simulated kubelet"

    def merge(self, rid: str, outcome: verdicts.Outcome) -> None:
        """Keep the worst outcome of `rid` over the test's phases."""
        have = self.outcomes.get(rid)
        if have is None or ORDER.index(outcome.verdict) < ORDER.index(have["verdict"]):
            self.outcomes[rid] = outcome.to_dict()


@dataclass
class Row:
    id: str
    area: str
    level: str
    statement: str
    since: dict[str, str]
    sources: list[dict[str, str]]
    verdict: str
    duration: float
    tests: list[dict[str, str]] = field(default_factory=list)  # nodeid, verdict, ran_on
    detail: str = ""
    deviation: str = ""
    ran_on: list[str] = field(default_factory=list)
    suite: str = ""  # suites/<suite>/ of its catalogued tests


def suite_of(req: Requirement) -> str:
    """The suite directory (suites/<suite>/) of a requirement's catalogued tests, or ""."""
    for test in req.tests:
        parts = test.split("/")
        if len(parts) > 2 and parts[0] == "suites":
            return parts[1]
    return ""


def build(
    reqs: dict[str, Requirement], results: list[TestResult], provider: str = "local", *, certify: bool = False
) -> list[Row]:
    """One row per catalogued requirement. Under --certify on a cluster the harness did not
    provide locally, a MUST proven only on a private local cluster is `not-run` there."""
    rows = _rows(reqs, results, provider)
    if certify and provider != "local":
        for r in rows:
            if r.level == "MUST" and r.verdict not in ("not-applicable", "not-run") and private_only(r):
                r.verdict, r.detail = "not-run", f"proven only on a {verdicts.PRIVATE}, not on the {provider} cluster"
    return rows


def _rows(reqs: dict[str, Requirement], results: list[TestResult], provider: str) -> list[Row]:
    by_req: dict[str, list[tuple[TestResult, verdicts.Outcome]]] = {}
    for r in results:
        for rid, o in r.outcomes.items():
            by_req.setdefault(rid, []).append((r, verdicts.Outcome(**o)))
    rows = []
    for rid, req in sorted(reqs.items()):
        mine = by_req.get(rid, [])
        combined = verdicts.combine([o for _r, o in mine])
        where = sorted({_where(r.ran_on, provider) for r, o in mine if o.verdict != "not-run"})
        rows.append(
            Row(
                id=rid,
                area=req.area,
                level=req.level,
                statement=req.statement,
                since=req.since,
                sources=[asdict(s) for s in req.sources],
                verdict=combined.verdict,
                duration=round(sum(r.duration for r, _o in mine), 2),
                tests=[{"nodeid": r.nodeid, "verdict": o.verdict, "ran_on": r.ran_on} for r, o in mine],
                detail=combined.detail[:1500],
                deviation=combined.deviation,
                ran_on=where,
                suite=suite_of(req),
            )
        )
    return rows


def _where(ran_on: str, provider: str) -> str:
    """ "local cluster under test", "private local cluster", "local cluster under test, simulated
    kubelet" (the test wrote the kubelet's reports itself)."""
    here = f"{provider} cluster under test"
    if not ran_on:
        return here
    return f"{here}, {ran_on}" if ran_on == verdicts.SIMULATED else ran_on


def private_only(row: Row) -> bool:
    """Every test of the row that ran did so on a private local cluster."""
    ran = [t for t in row.tests if t["verdict"] != "not-run"]
    return bool(ran) and all(t["ran_on"].split(", ")[0] == verdicts.PRIVATE for t in ran)


def totals(rows: list[Row]) -> dict[str, int]:
    return {v: sum(1 for r in rows if r.verdict == v) for v in ORDER}


def levels(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Per level, the count of each verdict (a release manager reads the MUST line)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r.level, {}).setdefault(r.verdict, 0)
        out[r.level][r.verdict] += 1
    return out


def mode_text(meta: dict[str, Any]) -> str:
    """ "certify, known deviations accepted (--accept-known-deviations)": how the run was gated."""
    gate = meta.get("gate") or {}
    words = [str(meta.get("mode") or "standard")]
    if gate.get("accept_known_deviations"):
        words.append("known deviations accepted (--accept-known-deviations)")
    if gate.get("strict"):
        words.append("strict (a listed deviation that no longer reproduces fails)")
    if meta.get("shard"):
        words.append(f"shard {meta['shard']}")
    return ", ".join(words)


def facts(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """What a run's verdict is about, as summary.md and index.html state it under the conclusion."""
    harness = meta.get("harness") or {}
    versions = ", ".join(f"{k} {v}" for k, v in sorted((meta.get("versions") or {}).items()))
    started, finished = str(meta.get("started") or ""), str(meta.get("finished") or "")
    return [
        ("mode", mode_text(meta)),
        ("provider", str(meta.get("provider") or "not recorded")),
        ("cluster", str(meta.get("cluster") or "not recorded")),
        ("profile", str(meta.get("profile") or "not recorded")),
        ("versions", versions or "not recorded"),
        ("harness", f"lws-conformance {harness.get('version', '?')}, commit {harness.get('commit', '?')}"),
        ("date", f"{started} to {finished}" if started and finished else started or finished or "not recorded"),
        ("run", str(meta.get("run_id") or "")),
    ]


def _known_section(end: conclusion.Conclusion) -> list[str]:
    """Each MUST promise the installed versions break through a listed upstream bug, up front."""
    if not end.known:
        return []
    title = "MUST promises broken by listed upstream bugs" + (" (accepted)" if end.accepted else "")
    return [f"## {title}", "", *[f"- {k}" for k in end.known], ""]


def _source_md(s: dict[str, str]) -> str:
    return f"[{s['kind']}]({s['url']})"


def write(out: Path, rows: list[Row], meta: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    dicts = [asdict(r) for r in rows]
    end = conclusion.conclude(dicts, conclusion.Policy.from_meta(meta), gaps=completeness.gaps(meta))
    whole = {k: v for k, v in meta.items() if k != "collected"} | (
        {"collected": len(meta["collected"])} if "collected" in meta else {}
    )  # the test ids stay in results.json
    doc = {**whole, "conclusion": end.to_dict(), "totals": totals(rows), "levels": levels(rows), "requirements": dicts}
    (out / "summary.json").write_text(json.dumps(doc, indent=2))
    lines = [
        f"# lws-conformance run {meta.get('run_id', '')}",
        "",
        f"**{end.line}** (exit {end.code})",
        "",
        "| run | |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in facts(meta)],
        "",
        *_known_section(end),
        "| component | version |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(meta.get("versions", {}).items())],
        "",
        *[f"{lv}: " + ", ".join(f"{v} {n}" for v, n in sorted(c.items())) for lv, c in sorted(levels(rows).items())],
        "",
        "| requirement | level | verdict | since | statement | sources | ran on | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (ORDER.index(r.verdict), r.level, r.id)):
        since = ", ".join(f"{k} {v}" for k, v in r.since.items())
        note = f" — {r.detail.splitlines()[0][:200]}" if r.detail and r.verdict != "passed" else ""
        sources = " ".join(_source_md(s) for s in r.sources)
        lines.append(
            f"| {r.id} | {r.level} | **{r.verdict}**{note} | {since} | {r.statement} | {sources} | "
            f"{', '.join(r.ran_on)} | {r.duration} |"
        )
    (out / "summary.md").write_text("\n".join(lines) + "\n")
