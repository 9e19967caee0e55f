"""Generated mutants: the pure part of benchmarks/mutation/run.

Mutants come from benchmarks/mutation/gen (one JSON object per line: file, line, operator, edits).
Here: their identity (a hash of the module version, file and edits), applying one to a file's
bytes, where a mutant lies with respect to the suites' coverage (a line some test ran, a line of
statements no test ran, or outside any statement), the stratified sample, the requirement
families whose tests reach a line, the classification of a run against the baseline, and the
scores per package.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

# Verdicts of summary.json that mean a promise did not hold (as benchmarks/mutants/run counts them).
RED = frozenset({"failed", "warning", "error"})
# Statuses: killed-must (a MUST requirement failed), killed-should (only SHOULD requirements went
# red: warning), killed-error (only `error`: the harness saw the controller or the cluster break),
# survived (every requirement as in the baseline), survived-not-reached (no test runs the line, so
# it was not run: it cannot be killed), build-failed (the mutant does not compile: not counted),
# no-result (the run produced no summary).
KILLED = ("killed-must", "killed-should", "killed-error")
SURVIVED = ("survived", "survived-not-reached")


@dataclass(frozen=True)
class Mutant:
    component: str
    version: str
    file: str
    line: int
    col: int
    end_line: int
    operator: str
    original: str
    mutated: str
    func: str
    edits: tuple[tuple[int, int, str], ...]

    @property
    def id(self) -> str:
        key = json.dumps([self.component, self.version, self.file, self.edits], separators=(",", ":"))
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @property
    def package(self) -> str:
        return str(PurePosixPath(self.file).parent)

    def describe(self) -> str:
        return f"{self.file}:{self.line} {self.operator}: {self.original} => {self.mutated}"


def parse(lines: Iterable[str], component: str, version: str) -> list[Mutant]:
    out = []
    for raw in lines:
        if not raw.strip():
            continue
        d = json.loads(raw)
        out.append(
            Mutant(
                component=component,
                version=version,
                file=d["file"],
                line=int(d["line"]),
                col=int(d["col"]),
                end_line=int(d["end_line"]),
                operator=d["operator"],
                original=d["original"],
                mutated=d["mutated"],
                func=d.get("func") or "",
                edits=tuple((int(e["start"]), int(e["end"]), str(e["text"])) for e in d["edits"]),
            )
        )
    return out


def apply(source: bytes, edits: Iterable[tuple[int, int, str]]) -> bytes:
    """The file with each edit's byte range [start, end) replaced (ranges sorted, disjoint)."""
    out, at = bytearray(), 0
    for start, end, text in sorted(edits):
        if start < at or end < start or end > len(source):
            raise ValueError(f"edit {start}..{end} overlaps or lies outside the file ({len(source)} bytes)")
        out += source[at:start] + text.encode()
        at = end
    out += source[at:]
    return bytes(out)


# -- coverage -----------------------------------------------------------------------------------
def expand(runs: Iterable[Iterable[int]]) -> set[int]:
    out: set[int] = set()
    for first, last in runs:
        out.update(range(first, last + 1))
    return out


@dataclass
class Reach:
    """A coverage results document (benchmarks/coverage/run) indexed for mutants."""

    covered: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    uncovered: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    families: dict[tuple[str, str], dict[str, set[int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Reach:
        r = cls()
        for f in doc.get("files") or []:
            key = (f["component"], f["file"])
            r.covered[key] = expand(f.get("covered_lines") or [])
            r.uncovered[key] = expand(f.get("uncovered_lines") or [])
            r.families[key] = {name: expand(runs) for name, runs in (f.get("family_lines") or {}).items()}
        return r

    def where(self, m: Mutant) -> str:
        """covered (a test ran the line), not-reached (statements there, none ran), outside (no
        statement on the line: a declaration, a package-level constant)."""
        key = (m.component, m.file)
        if m.line in self.covered.get(key, set()):
            return "covered"
        if m.line in self.uncovered.get(key, set()):
            return "not-reached"
        return "outside"

    def families_for(self, m: Mutant) -> list[str]:
        """The families whose tests ran the mutant's line; outside a statement, those that ran
        any line of its file."""
        fams = self.families.get((m.component, m.file), {})
        hit = sorted(name for name, lines in fams.items() if m.line in lines)
        return hit or sorted(name for name, lines in fams.items() if lines)


def rank_families(families: list[str], cov: dict[str, Any], m: Mutant) -> list[str]:
    """Most relevant first: the families that cover more statements of the mutant's file, then
    the quicker ones (their run's wall time in the coverage results)."""
    row = next((f for f in cov.get("files") or [] if (f["component"], f["file"]) == (m.component, m.file)), {})
    by_family = row.get("by_family") or {}
    runs = cov.get("families") or {}
    return sorted(families, key=lambda f: (-int(by_family.get(f, 0)), float(runs.get(f, {}).get("seconds", 0)), f))


# -- sampling -----------------------------------------------------------------------------------
def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """n slots over strata proportional to their sizes (largest remainder; ties by name), never
    more than a stratum holds."""
    total = sum(sizes.values())
    if total == 0 or n <= 0:
        return {k: 0 for k in sizes}
    n = min(n, total)
    exact = {k: n * v / total for k, v in sizes.items()}
    alloc = {k: int(x) for k, x in exact.items()}
    rest = sorted(sizes, key=lambda k: (-(exact[k] - alloc[k]), k))
    i = 0
    while sum(alloc.values()) < n:
        k = rest[i % len(rest)]
        if alloc[k] < sizes[k]:
            alloc[k] += 1
        i += 1
    return alloc


def sample(
    mutants: list[Mutant], reach: Reach, n: int, seed: int, not_reached_share: float
) -> list[tuple[Mutant, str]]:
    """Stratified by file: (1 - share) of n from mutants on lines the suites reach (covered, or
    outside any statement of a file they reach), share of n from lines they do not; within each
    pool, slots per file proportional to its mutants; within a file, a seeded random choice.
    Returns (mutant, where) in a seeded random order."""
    pools: dict[str, dict[str, list[Mutant]]] = {"reached": defaultdict(list), "not-reached": defaultdict(list)}
    where = {}
    for m in mutants:
        w = reach.where(m)
        if w == "outside" and not reach.families_for(m):
            w = "not-reached"  # a file no test reaches at all
        where[m.id] = w
        pools["not-reached" if w == "not-reached" else "reached"][f"{m.component}:{m.file}"].append(m)
    n_not = round(n * not_reached_share)
    quota = {"reached": n - n_not, "not-reached": n_not}
    rng = random.Random(seed)
    chosen: list[Mutant] = []
    for pool in ("reached", "not-reached"):
        files = pools[pool]
        alloc = allocate({k: len(v) for k, v in files.items()}, quota[pool])
        for key in sorted(files):
            members = sorted(files[key], key=lambda m: m.id)
            chosen += random.Random(f"{seed}:{pool}:{key}").sample(members, alloc[key])
    chosen.sort(key=lambda m: m.id)
    rng.shuffle(chosen)
    return [(m, where[m.id]) for m in chosen]


def run_order(picked: list[tuple[Mutant, str]], priority: dict[str, list[str]]) -> list[tuple[Mutant, str]]:
    """Mutants of the priority files first (in their listed order), the rest as sampled."""
    rank = {(c, f): i for c, files in priority.items() for i, f in enumerate(files)}
    first = sorted(
        (x for x in picked if (x[0].component, x[0].file) in rank), key=lambda x: rank[(x[0].component, x[0].file)]
    )
    return first + [x for x in picked if (x[0].component, x[0].file) not in rank]


# -- results ------------------------------------------------------------------------------------
@dataclass
class Result:
    id: str
    component: str
    file: str
    line: int
    operator: str
    original: str
    mutated: str
    func: str
    where: str
    status: str
    families: list[str] = field(default_factory=list)  # every family reaching the line, most relevant first
    families_run: list[str] = field(default_factory=list)  # those whose tests ran against the mutant
    maxfail: int | None = None  # pytest --maxfail of its runs (None: every test of the families ran)
    red: dict[str, str] = field(default_factory=dict)  # requirement -> verdict, red here and not in the baseline
    details: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    exit_code: int | None = None
    note: str = ""
    reports: str = ""


def result_of(m: Mutant, where: str) -> Result:
    return Result(m.id, m.component, m.file, m.line, m.operator, m.original, m.mutated, m.func, where, "pending")


def classify(verdicts: dict[str, str], baseline: dict[str, str], levels: dict[str, str]) -> tuple[str, dict[str, str]]:
    """(status, red requirements) of a run: red there and not red in the baseline. A baseline
    `error` (inconclusive: the harness saw the cluster break) says nothing about the promise, so it
    hides only another `error`, never a `failed` or `warning`. A MUST requirement `failed` kills by
    a MUST; only SHOULD `warning`s kill by a SHOULD; only `error`s are killed-error."""

    def new_red(r: str, v: str) -> bool:
        was = baseline.get(r)
        return v in RED and (was not in RED or (was == "error" and v != "error"))

    red = {r: v for r, v in sorted(verdicts.items()) if new_red(r, v)}
    if any(v == "failed" and levels.get(r, "MUST") == "MUST" for r, v in red.items()):
        return "killed-must", red
    if any(v in ("warning", "failed") for v in red.values()):
        return "killed-should", red
    if red:
        return "killed-error", red
    return "survived", red


def relevel(row: dict[str, Any], levels: dict[str, str]) -> dict[str, Any]:
    """`row` (a result of results.json) as its run reads under `levels`, the catalogue's levels now:
    a requirement that did not hold is `failed` as a MUST and `warning` as a SHOULD, and the status
    follows (killed-must, killed-should). What the run saw (which requirements went red, `error`,
    the details) is kept; rows without a run, and requirements no longer catalogued, as they were."""
    if row["status"] not in (*KILLED, "survived"):
        return row

    def verdict(r: str, v: str) -> str:
        if v not in ("failed", "warning") or r not in levels:
            return v
        return "failed" if levels[r] == "MUST" else "warning"

    red = {r: verdict(r, v) for r, v in row["red"].items()}
    status, red = classify(red, {}, {r: levels.get(r, "MUST") for r in red})
    return {**row, "red": red, "status": status}


# the bring-up's error for a component that died of its own (lws_conformance.providers.process.
# exit_message); a cause of the machine's (no disk space, the inotify limit) reads "...: <cause>"
_STARTUP = re.compile(r"^lwsc: error: (?P<component>[\w-]+) exited during start-up \(log: .*$", re.M)


def startup_failure(log: str, component: str) -> str | None:
    """The bring-up's error line when the mutated `component` itself exited while the cluster came
    up (a run with no summary: the harness saw the controller break before any test), else None.
    A machine cause the bring-up recognises (no disk space, too many open files) is no kill."""
    m = _STARTUP.search(log)
    return m.group(0)[:500] if m and m.group("component") == component else None


def scores(
    results: list[dict[str, Any]], equivalent: set[str], outside: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """Mutation score overall and per (component, package): killed / (judged - equivalent). Also
    on the LWS path: the reached lines (`lws_path`) and every sampled line (`all_lws_path`) without
    the survivors `outside` it (triaged as observable only through another Kueue integration: plain
    Pods, nested jobs)."""

    def one(rows: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [r for r in rows if r["status"] in KILLED or r["status"] in SURVIVED]
        eq = [r for r in judged if r["id"] in equivalent and r["status"] in SURVIVED]
        counted = len(judged) - len(eq)
        killed = [r for r in judged if r["status"] in KILLED]
        must = [r for r in killed if r["status"] == "killed-must"]
        return {
            "judged": len(judged),
            "equivalent": len(eq),
            "killed": len(killed),
            "killed_must": len(must),
            "killed_should": sum(r["status"] == "killed-should" for r in killed),
            "killed_error": sum(r["status"] == "killed-error" for r in killed),
            "survived": sum(r["status"] == "survived" and r["id"] not in equivalent for r in judged),
            "not_reached": sum(r["status"] == "survived-not-reached" and r["id"] not in equivalent for r in judged),
            "build_failed": sum(r["status"] == "build-failed" for r in rows),
            "no_result": sum(r["status"] == "no-result" for r in rows),
            "score": round(100 * len(killed) / counted, 1) if counted else None,
            "must_share": round(100 * len(must) / counted, 1) if counted else None,
        }

    per_pkg: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        per_pkg[f"{r['component']} {PurePosixPath(r['file']).parent}"].append(r)
    reached = [r for r in results if r["where"] != "not-reached"]

    def on_path(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in rows if not (r["id"] in outside and r["status"] in SURVIVED)]

    return {
        "all": one(results),
        "reached": one(reached),
        "lws_path": one(on_path(reached)),
        "all_lws_path": one(on_path(results)),
        "packages": {k: one(v) for k, v in sorted(per_pkg.items())},
    }


# the rows of the score table (results.md, docs/detection-power.md): key of scores(), label
SCORE_ROWS = (
    ("all", "**all sampled**"),
    ("reached", "**reached lines only**"),
    ("all_lws_path", "**all sampled, on the LWS path**"),
    ("lws_path", "**reached, on the LWS path**"),
)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x}%"


def score_table(s: dict[str, Any], packages: bool = True) -> str:
    """The score table of scores() `s` in Markdown: all sampled beside the reached lines (each also
    on the LWS path), then one row per package."""
    lines = [
        "| scope | judged | equivalent | killed (MUST / SHOULD / error) | survived | not reached | build failed "
        "| score | killed by a MUST |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def row(name: str, x: dict[str, Any]) -> str:
        return (
            f"| {name} | {x['judged']} | {x['equivalent']} | {x['killed']} ({x['killed_must']} / {x['killed_should']}"
            f" / {x['killed_error']}) | {x['survived']} | {x['not_reached']} | {x['build_failed']} | "
            f"{_pct(x['score'])} | {_pct(x['must_share'])} |"
        )

    lines += [row(label, s[key]) for key, label in SCORE_ROWS if key in s]
    if packages:
        lines += [row(pkg, x) for pkg, x in s["packages"].items()]
    return "\n".join(lines) + "\n"


def as_dict(r: Result) -> dict[str, Any]:
    return asdict(r)


# -- the generator ------------------------------------------------------------------------------
def gen_binary(gen_dir: Path, cache_root: Path) -> Path:
    """benchmarks/mutation/gen built with the machine's Go, cached by the hash of its source."""
    digest = hashlib.sha256((gen_dir / "main.go").read_bytes() + (gen_dir / "go.mod").read_bytes()).hexdigest()[:12]
    out = cache_root / "mutation" / f"mutation-gen-{digest}"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOWORK": "off", "GOFLAGS": "-buildvcs=false"}
        subprocess.run(["go", "build", "-o", str(out), "."], cwd=gen_dir, check=True, env=env)
    return out
