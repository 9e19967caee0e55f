"""The HTML report: Allure 3 single-file HTML when Node and npm are there, and always a
self-contained `index.html` (`page`: the verdict first, the requirements, timeline pictures inlined)
that needs nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import page

ALLURE_NPM = "allure@3.18.0"


def fallback(run_dir: Path, summary: dict[str, Any]) -> Path:
    """`index.html`: the run's verdict first, then what it is about, the counts per verdict and
    suite, the known deviations with their upstream links, the requirements and every timeline
    SVG inlined (`page`)."""
    out = run_dir / "index.html"
    out.write_text(page.render(run_dir, summary))
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
