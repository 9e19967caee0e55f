"""(Re-)render a run directory offline from what the run recorded (`lwsc report <run-dir>`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .. import catalogue
from . import evidence, html, summary


def save_results(run_dir: Path, results: list[summary.TestResult], meta: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    doc = {**meta, "results": [asdict(r) for r in results]}
    (run_dir / "results.json").write_text(json.dumps(doc, indent=2))


def render(run_dir: Path, tools_dir: Path | None = None) -> dict[str, Any]:
    """summary.json/md, PRODUCT.yaml, index.html (and Allure HTML when Node is present)."""
    raw = json.loads((run_dir / "results.json").read_text())
    results = [summary.TestResult(**r) for r in raw.pop("results")]
    rows = summary.build(catalogue.default(), results)
    summary.write(run_dir, rows, raw)
    doc: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "PRODUCT.yaml").write_text(evidence.product_yaml(doc))
    html.fallback(run_dir, doc)
    if tools_dir is not None:
        html.allure_single_file(run_dir, tools_dir)
    return doc
