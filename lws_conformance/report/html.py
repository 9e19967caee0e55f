"""The HTML report: Allure 3 single-file HTML when Node and npm are there, and always a
self-contained fallback (requirement table + timeline pictures inlined) that needs nothing.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .summary import ORDER

ALLURE_NPM = "allure@3.18.0"
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
th{background:#f0f0f0;text-align:left}.passed{color:#1a7f37}.failed{color:#cf222e;font-weight:bold}
.known-deviation,.warning,.partial{color:#9a6700}.error,.deviation-fixed\\?{color:#8250df}
.not-applicable,.not-run{color:#6e7781}figure{margin:1em 0}
"""


def _rank(row: dict[str, Any]) -> tuple[int, str]:
    verdict: str = row["verdict"]
    return (ORDER.index(verdict) if verdict in ORDER else len(ORDER), row["id"])


def _sources(row: dict[str, Any]) -> str:
    return "<br>".join(
        f"<a href='{html.escape(s['url'], quote=True)}' title='{html.escape(s.get('quote', ''), quote=True)}'>"
        f"{html.escape(s['kind'])}</a>"
        for s in row.get("sources", [])
    )


def _row(r: dict[str, Any]) -> str:
    detail = (r.get("detail") or "").splitlines()[0][:300] if r.get("detail") else ""
    return (
        f"<tr><td>{html.escape(r['id'])}</td><td>{html.escape(r.get('level', ''))}</td>"
        f"<td class='{html.escape(r['verdict'])}'>{html.escape(r['verdict'])}</td>"
        f"<td>{html.escape(', '.join(f'{k} {v}' for k, v in r['since'].items()))}</td>"
        f"<td>{html.escape(r.get('statement', ''))}</td><td>{_sources(r)}</td>"
        f"<td>{html.escape(', '.join(r.get('ran_on', [])))}</td><td>{r['duration']}</td>"
        f"<td>{html.escape(detail)}</td></tr>"
    )


def fallback(run_dir: Path, summary: dict[str, Any]) -> Path:
    """`index.html`: versions, totals, one row per requirement (level, sources, where it ran),
    and every timeline SVG inlined."""
    rows = "\n".join(_row(r) for r in sorted(summary.get("requirements", []), key=_rank))
    versions = ", ".join(f"{k} {v}" for k, v in sorted(summary.get("versions", {}).items()))
    levels = "".join(
        f"<p>{html.escape(level)}: {html.escape(', '.join(f'{v} {n}' for v, n in sorted(c.items())))}</p>"
        for level, c in sorted(summary.get("levels", {}).items())
    )
    pictures = "\n".join(
        f"<figure>{svg.read_text()}<figcaption>{html.escape(str(svg.relative_to(run_dir)))}</figcaption></figure>"
        for svg in sorted(run_dir.rglob("*.svg"))
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>lws-conformance {summary.get('run_id', '')}"
        f"</title><style>{_STYLE}</style></head><body><h1>lws-conformance run {summary.get('run_id', '')}</h1>"
        f"<p>Versions: {html.escape(versions)}</p>{levels}"
        "<h2>Requirements</h2><table id='requirements'><tr><th>id</th><th>level</th><th>verdict</th><th>since</th>"
        f"<th>statement</th><th>sources</th><th>ran on</th><th>seconds</th><th>detail</th></tr>{rows}</table>"
        f"<h2>Timelines</h2>{pictures or '<p>No timeline pictures in this run.</p>'}</body></html>"
    )
    out = run_dir / "index.html"
    out.write_text(page)
    return out


def install_allure(tools_dir: Path) -> Path | None:
    """Install the npm `allure` CLI into `tools_dir` (network; `lwsc build` and scripts/bootstrap
    do it once); its path, or None without Node/npm or when npm fails."""
    cli = tools_dir / "node_modules" / ".bin" / "allure"
    if cli.exists():
        return cli
    if not shutil.which("npm") or not shutil.which("node"):
        return None
    tools_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(tools_dir), ALLURE_NPM],
        capture_output=True,
        text=True,
    )
    return cli if proc.returncode == 0 and cli.exists() else None


def allure_single_file(run_dir: Path, tools_dir: Path) -> Path | None:
    """Allure 3 single-file HTML via the npm `allure` package (no Java), offline: None unless
    `install_allure` put the CLI into `tools_dir` before (index.html is the fallback report)."""
    results = run_dir / "allure-results"
    cli = tools_dir / "node_modules" / ".bin" / "allure"
    if not results.is_dir() or not cli.exists() or not shutil.which("node"):
        return None
    config = run_dir / "allurerc.json"
    config.write_text(
        json.dumps({"name": "lws-conformance", "plugins": {"awesome": {"options": {"singleFile": True}}}})
    )
    out = run_dir / "allure-report"
    proc = subprocess.run(
        [str(cli), "generate", str(results), "--config", str(config), "--output", str(out)],
        capture_output=True,
        text=True,
    )
    index = out / "index.html"
    return index if proc.returncode == 0 and index.is_file() else None
