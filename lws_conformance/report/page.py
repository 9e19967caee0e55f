"""`index.html`, the self-contained report a reviewer opens first (needs nothing but a browser).

It opens with the run's verdict, the same conclusion line and exit code as `summary.md` and the
`lwsc` process, then what the verdict is about (mode, provider, cluster, profile, versions,
harness version and commit, date), the counts of requirements per verdict and suite, each known
deviation with its upstream issue (or the ready-to-file report, inlined), and the requirements
grouped by verdict, then suite. Laid out to fit a 1280 px window: long text wraps, never widens
the page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from .. import deviations, resources, verdicts
from .summary import facts

ORDER = verdicts.ORDER
OPEN = ("failed", "error", "deviation-fixed?", "warning", "known-deviation", "partial")  # shown unfolded
STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 1.5em;max-width:1280px;color:#222;line-height:1.35}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .4em}h3{font-size:1.05em;margin:.8em 0 .3em}
a{overflow-wrap:anywhere}
#conclusion{padding:.8em 1em;border-radius:6px;border:2px solid;font-size:1.1em;overflow-wrap:anywhere}
#conclusion.code-0{background:#dafbe1;border-color:#1a7f37}#conclusion.code-1{background:#ffebe9;border-color:#cf222e}
#conclusion.code-3{background:#fbefff;border-color:#8250df}#conclusion.code-4{background:#fff8c5;border-color:#9a6700}
#conclusion .exit{font-weight:bold;white-space:nowrap}
table{border-collapse:collapse;width:100%;table-layout:fixed}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f0f0f0;overflow-wrap:normal}
table.facts th{width:11em}table.counts{width:auto;table-layout:auto}table.counts td{text-align:right}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font-size:.85em}
details>summary{cursor:pointer}
.passed{color:#1a7f37}.failed{color:#cf222e;font-weight:bold}
.known-deviation,.warning,.partial{color:#9a6700}.error,.deviation-fixed{color:#8250df}
.not-applicable,.not-run{color:#6e7781}
col.id{width:12.5em}col.statement{width:30%}col.src{width:5.5em}col.ran{width:8em}col.sec{width:5.5em}
td p{margin:0 0 .4em}
figure{margin:1em 0;max-width:100%;overflow-x:auto}figure svg{max-width:100%;height:auto}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _cls(verdict: str) -> str:
    return verdict.rstrip("?")


def suite_of(row: dict[str, Any]) -> str:
    """The suite (suites/<suite>/) of a requirement: recorded in its row, else from its tests."""
    if row.get("suite"):
        return str(row["suite"])
    for t in row.get("tests") or []:
        parts = str(t.get("nodeid", "")).split("/")
        if len(parts) > 2 and parts[0] == "suites":
            return parts[1]
    return "other"


def _facts(summary: dict[str, Any]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts(summary))
    return f"<table class='facts' id='facts'>{body}</table>"


def _counts(rows: list[dict[str, Any]]) -> str:
    """Requirements per verdict (rows) and suite (columns), with the MUST share and totals."""
    suites = sorted({suite_of(r) for r in rows})
    present = [v for v in ORDER if any(r["verdict"] == v for r in rows)]
    head = "".join(f"<th>{_e(s)}</th>" for s in suites)
    lines = []
    for v in present:
        mine = [r for r in rows if r["verdict"] == v]
        cells = "".join(f"<td>{sum(1 for r in mine if suite_of(r) == s) or ''}</td>" for s in suites)
        must = sum(1 for r in mine if r.get("level") == "MUST")
        lines.append(
            f"<tr><th><a class='{_cls(v)}' href='#{_cls(v)}'>{_e(v)}</a></th>{cells}"
            f"<td><b>{len(mine)}</b></td><td>{must}</td></tr>"
        )
    totals = "".join(f"<td>{sum(1 for r in rows if suite_of(r) == s)}</td>" for s in suites)
    must_all = sum(1 for r in rows if r.get("level") == "MUST")
    return (
        f"<table class='counts' id='counts'><tr><th>verdict</th>{head}<th>total</th><th>of them MUST</th></tr>"
        f"{''.join(lines)}<tr><th>all</th>{totals}<td><b>{len(rows)}</b></td><td>{must_all}</td></tr></table>"
    )


def _anchor(report: str) -> str:
    """The page anchor of a ready-to-file report (one per file, however many deviations cite it)."""
    return "report-" + re.sub(r"[^A-Za-z0-9-]+", "-", Path(report).stem)


def _dev_links(dev: deviations.Deviation) -> str:
    links = [f"<a href='{_e(u)}'>{_e(u.removeprefix('https://github.com/'))}</a>" for u in dev.upstream]
    if dev.report:
        links.append(
            f"<a href='#{_anchor(dev.report)}'>ready-to-file report {_e(dev.report)}</a> (not reported upstream yet)"
        )
    if dev.fixed_on_main:
        links.append(f"fixed on main: {_e(dev.fixed_on_main)}")
    return "; ".join(links)


def _row_devs(row: dict[str, Any], by_id: dict[str, deviations.Deviation]) -> list[deviations.Deviation]:
    ids = [d for d in str(row.get("deviation") or "").split(verdicts.DEVIATION_SEP) if d]
    return [by_id[d] for d in ids if d in by_id]


def _deviations(rows: list[dict[str, Any]], by_id: dict[str, deviations.Deviation]) -> str:
    """Every known deviation (and no-longer-reproducing one) of the run, with its upstream link or
    its ready-to-file report, inlined below so the page stays self-contained."""
    listed = [r for r in rows if r["verdict"] in ("known-deviation", "deviation-fixed?")]
    if not listed:
        return ""
    items = []
    reports: dict[str, list[str]] = {}  # report file -> the deviations citing it
    for r in sorted(listed, key=lambda r: (r.get("level") != "MUST", r["id"])):
        devs = _row_devs(r, by_id)
        refs = "<br>".join(f"<b>{_e(d.id)}</b>: {_e(d.title)} — {_dev_links(d)}" for d in devs)
        items.append(
            f"<li><b>{_e(r['id'])}</b> ({_e(r.get('level', ''))}, <span class='{_cls(r['verdict'])}'>"
            f"{_e(r['verdict'])}</span>): {refs or _e(r.get('deviation') or 'no deviation recorded')}</li>"
        )
        for d in devs:
            if d.report and d.id not in reports.setdefault(d.report, []):
                reports[d.report].append(d.id)
    inlined = "".join(
        f"<details id='{_anchor(report)}'><summary>ready-to-file report {_e(report)} ({_e(', '.join(ids))})"
        f"</summary><pre>{_e(_report_text(report))}</pre></details>"
        for report, ids in reports.items()
    )
    return f"<h2 id='deviations'>Known deviations (listed upstream bugs)</h2><ul>{''.join(items)}</ul>{inlined}"


def _report_text(relative: str) -> str:
    path = resources.path(relative)
    return path.read_text() if path.is_file() else f"{relative} is not in this installation"


def _sources(row: dict[str, Any]) -> str:
    return "<br>".join(
        f"<a href='{_e(s['url'])}' title='{_e(s.get('quote', ''))}'>{_e(s['kind'])}</a>" for s in row.get("sources", [])
    )


def _detail(row: dict[str, Any], by_id: dict[str, deviations.Deviation]) -> str:
    text = str(row.get("detail") or "")
    links = "".join(f"<p>{_e(d.id)}: {_dev_links(d)}</p>" for d in _row_devs(row, by_id))
    if not text:
        return links
    first, _, rest = text.partition("\n")
    if not rest.strip() and len(first) <= 300:
        return f"{links}<pre>{_e(first)}</pre>"
    return f"{links}<details><summary>{_e(first[:200])}</summary><pre>{_e(text)}</pre></details>"


def _table(rows: list[dict[str, Any]], by_id: dict[str, deviations.Deviation]) -> str:
    cols = "".join(f"<col class='{c}'>" for c in ("id", "statement", "src", "ran", "sec", "detail"))
    head = "".join(f"<th>{h}</th>" for h in ("requirement", "statement", "sources", "ran on", "seconds", "detail"))
    body = "".join(
        f"<tr id='{_e(r['id'])}'><td><b>{_e(r['id'])}</b><br>{_e(r.get('level', ''))}"
        f"<br><small>since {_e(', '.join(f'{k} {v}' for k, v in (r.get('since') or {}).items()))}</small></td>"
        f"<td>{_e(r.get('statement', ''))}</td><td>{_sources(r)}</td>"
        f"<td>{_e(', '.join(r.get('ran_on', [])))}</td><td>{_e(r.get('duration', ''))}</td>"
        f"<td>{_detail(r, by_id)}</td></tr>"
        for r in sorted(rows, key=lambda r: (r.get("level") != "MUST", r["id"]))
    )
    return f"<table><colgroup>{cols}</colgroup><tr>{head}</tr>{body}</table>"


def _requirements(rows: list[dict[str, Any]], by_id: dict[str, deviations.Deviation]) -> str:
    """One section per verdict (worst first), one table per suite inside it; passed and not-run
    sections start folded."""
    out = []
    for v in ORDER:
        mine = [r for r in rows if r["verdict"] == v]
        if not mine:
            continue
        parts = []
        for s in sorted({suite_of(r) for r in mine}):
            of_suite = [r for r in mine if suite_of(r) == s]
            parts.append(f"<h3>{_e(v)} in suite {_e(s)} ({len(of_suite)})</h3>{_table(of_suite, by_id)}")
        summary = f"<summary><h2 class='{_cls(v)}' style='display:inline'>{_e(v)} ({len(mine)})</h2></summary>"
        opened = " open" if v in OPEN else ""
        out.append(f"<details id='{_cls(v)}'{opened}>{summary}{''.join(parts)}</details>")
    return "".join(out)


def _pictures(run_dir: Path) -> str:
    figures = "\n".join(
        f"<figure>{svg.read_text()}<figcaption>{_e(svg.relative_to(run_dir))}</figcaption></figure>"
        for svg in sorted(run_dir.rglob("*.svg"))
    )
    return figures or "<p>No timeline pictures in this run.</p>"


def render(run_dir: Path, summary: dict[str, Any], devs: list[deviations.Deviation] | None = None) -> str:
    """The page for a run directory and its summary.json (`devs`: the listed deviations, default
    fixtures/known-deviations.yaml)."""
    by_id = {d.id: d for d in (deviations.default() if devs is None else devs)}
    rows = list(summary.get("requirements") or [])
    end = summary.get("conclusion") or {}
    code = end.get("code", 3)
    line = end.get("line") or "inconclusive: this summary holds no conclusion"
    run_id = summary.get("run_id", "")
    banner = (
        f"<div id='conclusion' class='code-{_e(code)}'>{_e(line)} <span class='exit'>(exit {_e(code)})</span></div>"
    )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>lws-conformance {_e(run_id)}: {_e(line.partition(':')[0])} (exit {_e(code)})</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>lws-conformance run {_e(run_id)}</h1>{banner}"
        f"<h2>Run</h2>{_facts(summary)}"
        f"<h2>Requirements per verdict and suite</h2>{_counts(rows)}"
        f"{_deviations(rows, by_id)}"
        f"<h2 id='requirements'>Requirements</h2>{_requirements(rows, by_id)}"
        f"<h2>Timelines</h2>{_pictures(run_dir)}</body></html>"
    )
