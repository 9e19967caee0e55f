"""Version matrix: the same suites against several LWS (and Kueue) versions, one table.

Each cell is a fresh local cluster of its own (`--name matrix-...`, its own `network.base_port`)
so versions never share state; cells run one after another (the project's machines have 2 cores).
The table is built only from each run's summary.json (requirement -> verdict), so a cell that
broke before writing one shows as `no-summary` rather than as a column of fake verdicts.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from .errors import UserError
from .profile import VERSION

MATRIX_BASE_PORT = 30000  # away from the default cluster (16000), CLI tests (18100), claimed ranges (19000-29000)
PORT_STRIDE = 100
ABSENT = "—"  # requirement not in this column's summary (e.g. a catalogue that grew between runs)


@dataclass(frozen=True)
class Cell:
    """One column: the versions under test, the local cluster name and its ports."""

    versions: dict[str, str]
    name: str
    base_port: int

    @property
    def label(self) -> str:
        return " ".join(f"{c} {'@' + v.rpartition('@')[2] if is_ref(v) else v}" for c, v in self.versions.items())

    @property
    def overrides(self) -> list[str]:
        pins = [f"{'sources' if is_ref(v) else 'versions'}.{c}={v}" for c, v in self.versions.items()]
        return [*pins, f"network.base_port={self.base_port}"]


def is_ref(item: str) -> bool:
    """A git `DIR@REF` cell (built from that snapshot) rather than a module version."""
    return not VERSION.match(item) and "@" in item


@dataclass
class Column:
    label: str
    versions: dict[str, str]
    run_dir: str
    exit_code: int | None
    totals: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass
class Row:
    id: str
    statement: str
    since: dict[str, str]
    verdicts: dict[str, str]  # column label -> verdict
    details: dict[str, str]

    @property
    def differs(self) -> bool:
        return len(set(self.verdicts.values())) > 1


@dataclass
class Matrix:
    columns: list[Column]
    rows: list[Row]

    def differing(self) -> list[Row]:
        return [r for r in self.rows if r.differs]

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [{k: v for k, v in asdict(c).items() if k not in ("verdicts", "details")} for c in self.columns],
            "rows": [asdict(r) | {"differs": r.differs} for r in self.rows],
            "differing": [r.id for r in self.differing()],
        }


def parse_versions(text: str | None, flag: str) -> list[str]:
    """`v0.8.0,v0.9.0` -> a list; every item must look like a version."""
    items = [v.strip() for v in (text or "").split(",") if v.strip()]
    for v in items:
        if not VERSION.match(v) and not is_ref(v):
            raise UserError(f"{flag}: '{v}' is not a version like v0.9.0 or a git DIR@REF (comma-separated)")
    if len(set(items)) != len(items):
        raise UserError(f"{flag}: a version is listed twice")
    return items


def cells(lws: list[str], kueue: list[str], base_port: int = MATRIX_BASE_PORT) -> list[Cell]:
    """Every (LWS, Kueue) combination, each with its own cluster name and port range."""
    if not lws:
        raise UserError("--lws: give at least one LWS version, e.g. --lws v0.8.0,v0.9.0")
    kueues: list[str | None] = [*kueue] or [None]
    out = []
    for i, (lv, kv) in enumerate((lv, kv) for lv in lws for kv in kueues):
        versions = {"lws": lv} | ({"kueue": kv} if kv else {})
        short = {c: v.rpartition("@")[2] if is_ref(v) else v for c, v in versions.items()}
        name = "matrix-" + "-".join(re.sub(r"[^A-Za-z0-9-]", "-", f"{c}{v}") for c, v in short.items())
        out.append(Cell(versions, name, base_port + PORT_STRIDE * i))
    return out


def load_column(cell: Cell, run_dir: Path, exit_code: int | None) -> Column:
    """A column from one run's summary.json; a missing or unreadable one is said so."""
    col = Column(cell.label, dict(cell.versions), str(run_dir), exit_code)
    path = run_dir / "summary.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        col.note = f"no-summary: {path} ({type(exc).__name__}); see {run_dir / 'e2e.log'}"
        return col
    col.versions = {**col.versions, **{k: v for k, v in (doc.get("versions") or {}).items() if k in ("lws", "kueue")}}
    col.totals = dict(doc.get("totals") or {})
    messages = junit_messages(run_dir / "junit_01.xml")
    for req in doc.get("requirements") or []:
        col.verdicts[req["id"]] = req["verdict"]
        nodeids = [t["nodeid"] if isinstance(t, dict) else str(t) for t in req.get("tests") or []]
        found = [messages[t] for t in nodeids if t in messages]
        detail = found[0] if found and req["verdict"] == "failed" else headline(str(req.get("detail") or ""))
        if detail:
            col.details[req["id"]] = detail
    return col


def headline(detail: str) -> str:
    """The line of a pytest report that says what went wrong (`E   ...`), else its first line."""
    lines = [ln for ln in detail.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    useful = [ln for ln in lines if not ln.startswith("[gw")]
    return (errors or useful or [""])[0][:200]


def junit_messages(junit: Path) -> dict[str, str]:
    """nodeid -> the failure/error message JUnit recorded (the exception's own first line)."""
    try:
        root = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError):
        return {}
    out = {}
    for case in root.iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is None:
            continue
        path = case.get("classname", "").replace(".", "/") + ".py"
        out[f"{path}::{case.get('name', '')}"] = (
            (bad.get("message") or "").strip().splitlines()[0][:200]
            if (bad.get("message") or "").strip()
            else headline(bad.text or "")
        )
    return out


def build(columns: list[Column], catalogue: dict[str, dict[str, Any]] | None = None, all_rows: bool = False) -> Matrix:
    """Requirement x column. Rows where every column says not-run (deselected) are dropped unless
    `all_rows`; `catalogue` (id -> {statement, since}) fills the text, else the summaries' own."""
    ids: set[str] = set()
    for c in columns:
        ids |= set(c.verdicts)
    rows = []
    for rid in sorted(ids):
        verdicts = {c.label: c.verdicts.get(rid, ABSENT if not c.note else "no-summary") for c in columns}
        if not all_rows and all(v in ("not-run", ABSENT, "no-summary") for v in verdicts.values()):
            continue
        meta = (catalogue or {}).get(rid, {})
        rows.append(
            Row(
                rid,
                str(meta.get("statement", "")),
                dict(meta.get("since", {})),
                verdicts,
                {c.label: c.details[rid] for c in columns if rid in c.details},
            )
        )
    return Matrix(columns, rows)


def catalogue_from_summaries(run_dirs: list[Path]) -> dict[str, dict[str, Any]]:
    """id -> {statement, since} as recorded in the summaries (the catalogue of the run, not of today)."""
    out: dict[str, dict[str, Any]] = {}
    for d in run_dirs:
        try:
            doc = json.loads((d / "summary.json").read_text())
        except (OSError, ValueError):
            continue
        for req in doc.get("requirements") or []:
            out.setdefault(req["id"], {"statement": req.get("statement", ""), "since": req.get("since", {})})
    return out


def render_md(m: Matrix) -> str:
    labels = [c.label for c in m.columns]
    lines = ["# lws-conformance version matrix", ""]
    lines += ["| column | run | exit | totals |", "|---|---|---|---|"]
    for c in m.columns:
        totals = c.note or ", ".join(f"{k} {v}" for k, v in c.totals.items() if v)
        lines.append(f"| {c.label} | {c.run_dir} | {c.exit_code if c.exit_code is not None else '-'} | {totals} |")
    lines += ["", "| requirement | since | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
    for r in m.rows:
        since = ", ".join(f"{k} {v}" for k, v in r.since.items())
        cells_ = [f"**{r.verdicts[lb]}**" if r.differs else r.verdicts[lb] for lb in labels]
        lines.append(f"| {r.id}{' ⚠' if r.differs else ''} | {since} | " + " | ".join(cells_) + " |")
    diff = m.differing()
    lines += ["", f"## Requirements whose verdict differs between versions ({len(diff)})", ""]
    if not diff:
        lines.append("None: every selected requirement has the same verdict in every column.")
    for r in diff:
        lines.append(f"- **{r.id}** ({r.statement or 'no statement recorded'})")
        for lb in labels:
            why = r.details.get(lb, "")
            lines.append(f"  - {lb}: {r.verdicts[lb]}" + (f" — {why}" if why else ""))
    return "\n".join(lines) + "\n"


def render_html(m: Matrix) -> str:
    """`index.html`: the version x requirement grid, each cell linking to that column's report."""
    e = html.escape
    head = "".join(
        f"<th><a href='{e(Path(c.run_dir).name)}/index.html'>{e(c.label)}</a><br>"
        f"{e(' '.join(f'{k} {v}' for k, v in c.versions.items()))}<br>exit {c.exit_code}</th>"
        for c in m.columns
    )
    body = []
    for r in m.rows:
        verdict = {c.label: e(r.verdicts[c.label]) for c in m.columns}
        tds = "".join(
            f"<td class='{verdict[c.label]}' title='{e(r.details.get(c.label, ''))}'>{verdict[c.label]}</td>"
            for c in m.columns
        )
        since = e(", ".join(f"{k} {v}" for k, v in r.since.items()))
        body.append(f"<tr class='{'differs' if r.differs else ''}'><th>{e(r.id)}</th><td>{since}</td>{tds}</tr>")
    style = (
        "td,th{border:1px solid #ccc;padding:2px 6px;font:13px sans-serif}.passed{background:#dfd}"
        ".failed{background:#fbb}.warning{background:#ffd}.known-deviation{background:#fdb}"
        "tr.differs th{font-weight:bold;color:#a40}"
    )
    return (
        f"<!doctype html><meta charset='utf-8'><title>lws-conformance matrix</title><style>{style}</style>"
        f"<h1>Version matrix</h1><p>{len(m.differing())} requirement(s) differ between columns (marked).</p>"
        f"<table><tr><th>requirement</th><th>since</th>{head}</tr>{''.join(body)}</table>"
    )


def write(out: Path, m: Matrix) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "matrix.md", out / "matrix.json"
    (out / "index.html").write_text(render_html(m))
    md.write_text(render_md(m))
    js.write_text(json.dumps(m.to_dict(), indent=2))
    return md, js


def run(
    plan: list[Cell],
    run_cell: Callable[[Cell, Path], int | None],
    out: Path,
    progress: Callable[[str], None] = lambda _m: None,
) -> Matrix:
    """Run every cell (each into out/<cell name>/), then build and write the table."""
    columns = []
    for i, cell in enumerate(plan, 1):
        run_dir = out / cell.name
        progress(f"matrix cell {i}/{len(plan)}: {cell.label} (cluster {cell.name}, base port {cell.base_port})")
        code = run_cell(cell, run_dir)
        columns.append(load_column(cell, run_dir, code))
    m = build(columns, catalogue_from_summaries([Path(c.run_dir) for c in columns]))
    write(out, m)
    return m
