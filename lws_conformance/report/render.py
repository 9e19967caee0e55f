"""(Re-)render a run directory offline from what the run recorded (`lwsc report <run-dir>`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from .. import catalogue
from . import conclusion, html, junit, product, run_timeline, summary


def save_results(
    run_dir: Path,
    results: list[summary.TestResult],
    meta: dict[str, Any],
    timeline: list[run_timeline.Entry] | None = None,
) -> None:
    """results.json (what each test recorded, and when each ran where) and the summary from it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {**meta, "results": [asdict(r) for r in results], "timeline": run_timeline.to_dicts(timeline or [])}
    (run_dir / "results.json").write_text(json.dumps(doc, indent=2))
    summarize(run_dir)


def summarize(run_dir: Path, recorded: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary.json/md from results.json (`recorded`, when already read; with today's catalogue)."""
    raw = dict(recorded) if recorded is not None else json.loads((run_dir / "results.json").read_text())
    results = [summary.TestResult(**r) for r in raw.pop("results")]
    entries = [run_timeline.Entry(**e) for e in raw.pop("timeline", [])]
    if entries:  # where the run's time went: summary.json's run_timeline and a picture
        raw["run_timeline"] = run_timeline.summarize(entries)
        (run_dir / "run-timeline.svg").write_text(run_timeline.svg(raw["run_timeline"]))
    certify = conclusion.Policy.from_meta(raw).certify
    rows = summary.build(catalogue.default(), results, str(raw.get("provider", "local")), certify=certify)
    summary.write(run_dir, rows, raw)
    doc: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return doc


def render(run_dir: Path, tools_dir: Path | None = None) -> dict[str, Any]:
    """summary.json/md, PRODUCT.yaml, index.html (and Allure HTML when Node is present)."""
    recorded = json.loads((run_dir / "results.json").read_text())
    doc = summarize(run_dir, recorded)
    junit.rewrite(run_dir, recorded, doc)
    metadata_file = run_dir / product.METADATA_FILE
    metadata = yaml.safe_load(metadata_file.read_text()) if metadata_file.is_file() else None
    (run_dir / "PRODUCT.yaml").write_text(product.render(doc, (metadata or {}).get("metadata", metadata)))
    html.fallback(run_dir, doc)
    if tools_dir is not None:
        html.allure_single_file(run_dir, tools_dir)
    return doc
