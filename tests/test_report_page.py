"""index.html states the run's verdict: the conclusion line and exit code of summary.md first, what
the run was about, counts per verdict and suite, every known deviation linked to its upstream
issue or ready-to-file report; and in headless Chromium it fits a 1280 px window (no cluster)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lws_conformance.report import render
from lws_conformance.report.summary import TestResult

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "example-report"
META = {
    "run_id": "20261206-080000",
    "versions": {"kubernetes": "v1.36.3", "kueue": "v0.17.0", "lws": "v0.9.0"},
    "provider": "kind",
    "cluster": "https://127.0.0.1:35001 (context kind-rep)",
    "profile": "kind",
    "mode": "certify",
    "gate": {"strict": False, "accept_known_deviations": True},
    "harness": {"version": "0.1.0", "commit": "0123456789abcdef0123456789abcdef01234567"},
    "started": "2026-12-06T08:00:00+0000",
    "finished": "2026-12-06T08:04:35+0000",
}
UNBROKEN = "AssertionError: " + "leader0pod" * 100  # one 1000-character word, as some failure messages are


def _r(nodeid: str, rid: str, verdict: str, detail: str = "", dev: str = "") -> TestResult:
    return TestResult(nodeid, 2.5, {rid: {"verdict": verdict, "detail": detail, "deviation": dev}})


def fixture_run(tmp_path: Path, **meta: object) -> Path:
    """A run with a failure (a long unbroken detail), two known deviations (one with an upstream
    PR, one with a ready-to-file report only), a pass and the rest not run."""
    results = [
        _r("suites/lws/test_naming.py::test_pod_names", "LWS-NAME-001", "passed"),
        _r(
            "suites/kueue/test_longname.py::test_long",
            "KUEUE-LONGNAME-001",
            "known-deviation",
            "kueue-10311: pods never ungated\n\nworkload not admitted",
            "kueue-10311",
        ),
        _r(
            "suites/disaggregatedset/test_step.py::test_step",
            "ROLL-DSSTEP-001",
            "known-deviation",
            "lws-ds-force-drain-decoupled: both revisions rescaled\n\nprefill 2 -> 4",
            "lws-ds-force-drain-decoupled",
        ),
        _r(
            "suites/rollout/test_keep.py::test_keep",
            "ROLL-KEEP-001",
            "failed",
            UNBROKEN + "\n" + "\n".join(f"group {i}: " + "x" * 300 for i in range(5)),
        ),
    ]
    out = tmp_path / "run"
    render.save_results(out, results, {**META, **meta})
    render.render(out)
    return out


def _page(run: Path) -> str:
    return (run / "index.html").read_text()


def test_page_opens_with_the_conclusion_of_summary_md_and_the_run_facts(tmp_path: Path) -> None:
    run = fixture_run(tmp_path, gate={"strict": False, "accept_known_deviations": False}, mode="standard")
    end = json.loads((run / "summary.json").read_text())["conclusion"]
    assert end["code"] == 1 and end["line"].startswith("not conformant: 1 MUST")
    assert f"**{end['line']}** (exit 1)" in (run / "summary.md").read_text()
    page = _page(run)
    banner = re.search(r"<div id='conclusion' class='code-1'>(.*?)</div>", page)
    assert banner, page[:2000]
    assert banner.group(1) == f"{end['line']} <span class='exit'>(exit 1)</span>"
    assert page.index("id='conclusion'") < page.index("id='facts'") < page.index("id='requirements'")
    for fact in (
        "standard",
        "kind",
        "https://127.0.0.1:35001 (context kind-rep)",
        "kueue v0.17.0, lws v0.9.0",
        "lws-conformance 0.1.0, commit 0123456789abcdef",
        "2026-12-06T08:00:00+0000",
    ):
        assert fact in page, fact
    assert "| mode | standard |" in (run / "summary.md").read_text()


def test_page_says_the_mode_and_accepted_deviations(tmp_path: Path) -> None:
    page = _page(fixture_run(tmp_path))
    assert "certify, known deviations accepted (--accept-known-deviations)" in page


def test_every_known_deviation_links_its_upstream_issue_or_its_ready_to_file_report(tmp_path: Path) -> None:
    page = _page(fixture_run(tmp_path))
    section = page[page.index("id='deviations'") : page.index("id='requirements'")]
    assert "href='https://github.com/kubernetes-sigs/kueue/pull/10311'" in section
    assert "href='#report-ROLL-DSSTEP-001'" in section
    report = re.search(r"<details id='report-ROLL-DSSTEP-001'>.*?<pre>(.*?)</pre>", page, re.S)
    assert report and "tryForceDrain" in report.group(1)  # the report itself, inlined: the page stays self-contained


def test_requirements_are_grouped_by_verdict_then_suite_with_counts(tmp_path: Path) -> None:
    page = _page(fixture_run(tmp_path))
    counts = page[page.index("id='counts'") : page.index("</table>", page.index("id='counts'"))]
    assert re.search(r"href='#failed'>failed</a></th>(<td>\d*</td>)+<td><b>1</b></td><td>1</td>", counts)
    assert re.search(r"href='#known-deviation'>known-deviation</a></th>(<td>\d*</td>)+<td><b>2</b></td>", counts)
    headings = re.findall(r"<h3>([a-z?-]+) in suite (\w+) \((\d+)\)</h3>", page)
    assert headings[:3] == [
        ("failed", "rollout", "1"),
        ("known-deviation", "disaggregatedset", "1"),
        ("known-deviation", "kueue", "1"),
    ]
    assert ("passed", "lws", "1") in headings


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
# Appended to a copy of the page: unfold every <details>, then record how far the page is wider
# than the window (0: it fits).
PROBE = (
    "<script>document.querySelectorAll('details').forEach(d => d.open = true);"
    "const e = document.documentElement;"
    "document.body.setAttribute('data-overflow', String(e.scrollWidth - e.clientWidth));</script>"
)


def _browse(browser: str, page: Path, profile: Path, width: int) -> tuple[str, int]:
    """(DOM, horizontal overflow in px) of `page` in headless Chromium at `width` px."""
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},900", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    probe.unlink()
    found = re.search(r'data-overflow="(-?\d+)"', dom)
    assert found, dom[:2000]
    return dom, int(found.group(1))


@pytest.mark.skipif(
    not _chromium() and os.environ.get("LWSC_REQUIRE_BROWSER") != "1",
    reason="no chromium on PATH (CI sets LWSC_REQUIRE_BROWSER=1 and installs it)",
)
@pytest.mark.parametrize("which", ["fixture", "example"])
def test_page_shows_the_banner_and_fits_1280px_in_headless_chromium(which: str, tmp_path: Path) -> None:
    browser = _chromium()
    assert browser, "chromium is required (apt-get install chromium)"
    if which == "example":  # docs/example-report, re-rendered from its recorded real run
        run = tmp_path / "run"
        shutil.copytree(EXAMPLE, run)
        render.render(run)
    else:
        run = fixture_run(tmp_path)
    end = json.loads((run / "summary.json").read_text())["conclusion"]
    dom, overflow = _browse(browser, run / "index.html", tmp_path / "profile", 1280)
    banner = re.search(r'<div id="conclusion" class="code-(\d)">(.*?)</div>', dom, re.S)
    assert banner, dom[:2000]
    text = re.sub(r"<[^>]+>", "", banner.group(2)).replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
    assert text == f"{end['line']} (exit {end['code']})" and banner.group(1) == str(end["code"])
    assert overflow == 0, f"index.html is {overflow} px wider than a 1280 px window"
    shot = run / "report.png"
    subprocess.run(
        [
            browser,
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,1600",
            (run / "index.html").as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000


@pytest.mark.skipif(not _chromium(), reason="no chromium on PATH")
def test_the_overflow_probe_sees_a_page_wider_than_the_window(tmp_path: Path) -> None:
    """The fit check can fail: a table cell holding a long unbroken word (as index.html's detail
    column did before it wrapped) reads as overflowing."""
    wide = tmp_path / "wide.html"
    wide.write_text(f"<!doctype html><html><body><table><tr><td>{UNBROKEN}</td></tr></table></body></html>")
    browser = _chromium()
    assert browser
    assert _browse(browser, wide, tmp_path / "profile", 1280)[1] > 0
