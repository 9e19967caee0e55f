"""docs/example-report/ is what today's renderer makes of the real run it holds (results.json):
`scripts/render-example-report --check` (no cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "example-report"


def test_the_example_report_is_rendered_from_its_real_run() -> None:
    recorded = json.loads((EXAMPLE / "results.json").read_text())
    assert recorded["results"] and recorded["harness"]["commit"] not in ("", "unknown")  # a real run's record
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render-example-report"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr


def test_the_readme_links_the_example_report() -> None:
    assert "docs/example-report/index.html" in (ROOT / "README.md").read_text()
