"""The version matrix table, from synthetic summaries (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lws_conformance import matrix
from lws_conformance.errors import UserError


def summary(run_dir: Path, versions: dict[str, str], verdicts: dict[str, tuple[str, str]]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    reqs: list[dict[str, Any]] = [
        {"id": rid, "verdict": v, "detail": d, "statement": f"{rid} MUST hold.", "since": {"lws": "v0.6.0"}}
        for rid, (v, d) in verdicts.items()
    ]
    totals: dict[str, int] = {}
    for r in reqs:
        totals[r["verdict"]] = totals.get(r["verdict"], 0) + 1
    doc = {"run_id": "x", "versions": versions, "totals": totals, "requirements": reqs}
    (run_dir / "summary.json").write_text(json.dumps(doc))


def test_cells_get_own_names_and_port_ranges() -> None:
    plan = matrix.cells(["v0.8.0", "v0.9.0"], ["v0.16.0", "v0.17.0"], base_port=20000)
    assert [c.label for c in plan] == [
        "lws v0.8.0 kueue v0.16.0",
        "lws v0.8.0 kueue v0.17.0",
        "lws v0.9.0 kueue v0.16.0",
        "lws v0.9.0 kueue v0.17.0",
    ]
    assert len({c.name for c in plan}) == 4 and [c.base_port for c in plan] == [20000, 20100, 20200, 20300]
    assert plan[0].name == "matrix-lwsv0-8-0-kueuev0-16-0"
    assert plan[1].overrides == ["versions.lws=v0.8.0", "versions.kueue=v0.17.0", "network.base_port=20100"]
    only_lws = matrix.cells(["v0.9.0"], [])
    assert only_lws[0].versions == {"lws": "v0.9.0"} and only_lws[0].overrides[-1] == "network.base_port=30000"


@pytest.mark.parametrize("text", ["v0.8", "0.9.0", "v0.9.0,v0.9.0", "v0.9.0;v0.8.0"])
def test_bad_version_lists_are_user_errors(text: str) -> None:
    with pytest.raises(UserError):
        matrix.parse_versions(text, "--lws")
    assert matrix.parse_versions(" v0.8.0, v0.9.0 ", "--lws") == ["v0.8.0", "v0.9.0"]


def test_table_marks_differences_and_drops_unselected_rows(tmp_path: Path) -> None:
    plan = matrix.cells(["v0.8.0", "v0.9.0"], ["v0.17.0"])
    summary(
        tmp_path / plan[0].name,
        {"lws": "v0.8.0", "kueue": "v0.17.0"},
        {
            "LWS-NAME-001": ("passed", ""),
            "LWS-VALID-012": ("not-applicable", "not-applicable: LWS-VALID-012 requires lws >= v0.9.0"),
            "LWS-ROLL-001": ("not-run", ""),
        },
    )
    summary(
        tmp_path / plan[1].name,
        {"lws": "v0.9.0", "kueue": "v0.17.0"},
        {
            "LWS-NAME-001": ("passed", ""),
            "LWS-VALID-012": ("failed", "AssertionError: accepted"),
            "LWS-ROLL-001": ("not-run", ""),
        },
    )
    m = matrix.run(plan, lambda _cell, _dir: 0, tmp_path)
    assert [r.id for r in m.rows] == ["LWS-NAME-001", "LWS-VALID-012"]  # LWS-ROLL-001 ran nowhere
    assert [r.id for r in m.differing()] == ["LWS-VALID-012"]
    row = m.rows[1]
    assert row.verdicts == {"lws v0.8.0 kueue v0.17.0": "not-applicable", "lws v0.9.0 kueue v0.17.0": "failed"}
    assert row.statement == "LWS-VALID-012 MUST hold." and row.since == {"lws": "v0.6.0"}
    md = (tmp_path / "matrix.md").read_text()
    assert "| LWS-VALID-012 ⚠ | lws v0.6.0 | **not-applicable** | **failed** |" in md
    assert "| LWS-NAME-001 | lws v0.6.0 | passed | passed |" in md
    assert "  - lws v0.9.0 kueue v0.17.0: failed — AssertionError: accepted" in md
    doc = json.loads((tmp_path / "matrix.json").read_text())
    assert doc["differing"] == ["LWS-VALID-012"]
    assert doc["columns"][0]["totals"] == {"passed": 1, "not-applicable": 1, "not-run": 1}
    assert "verdicts" not in doc["columns"][0]


def test_a_cell_without_summary_is_shown_not_invented(tmp_path: Path) -> None:
    plan = matrix.cells(["v0.8.0", "v0.9.0"], [])
    summary(tmp_path / plan[1].name, {"lws": "v0.9.0"}, {"LWS-NAME-001": ("passed", "")})
    m = matrix.run(plan, lambda cell, _dir: 3 if cell.versions["lws"] == "v0.8.0" else 0, tmp_path)
    assert m.columns[0].note.startswith("no-summary:") and m.columns[0].exit_code == 3
    assert m.rows[0].verdicts == {"lws v0.8.0": "no-summary", "lws v0.9.0": "passed"}
    assert "no-summary" in (tmp_path / "matrix.md").read_text()


def test_requirement_missing_from_one_summary_is_absent_not_passed(tmp_path: Path) -> None:
    plan = matrix.cells(["v0.8.0", "v0.9.0"], [])
    summary(tmp_path / plan[0].name, {"lws": "v0.8.0"}, {"LWS-NAME-001": ("passed", "")})
    summary(tmp_path / plan[1].name, {"lws": "v0.9.0"}, {"LWS-NAME-001": ("passed", ""), "LWS-NEW-001": ("passed", "")})
    m = matrix.run(plan, lambda _c, _d: 0, tmp_path)
    assert m.rows[1].verdicts == {"lws v0.8.0": matrix.ABSENT, "lws v0.9.0": "passed"} and m.rows[1].differs


def test_failure_detail_comes_from_junit_message_not_the_report_preamble(tmp_path: Path) -> None:
    plan = matrix.cells(["v0.8.0"], [])
    run_dir = tmp_path / plan[0].name
    summary(run_dir, {"lws": "v0.8.0"}, {"LWS-STATUS-001": ("failed", "[gw1] linux -- Python 3.12\n\nscenario = ...")})
    doc = json.loads((run_dir / "summary.json").read_text())
    # summary.json's shape (lws_conformance.report.summary): one {nodeid, verdict, ran_on} per test
    doc["requirements"][0]["tests"] = [
        {"nodeid": "suites/lws/test_status_scaling.py::test_fresh[a-b]", "verdict": "failed", "ran_on": ""}
    ]
    (run_dir / "summary.json").write_text(json.dumps(doc))
    (run_dir / "junit_01.xml").write_text(
        '<testsuites><testsuite><testcase classname="suites.lws.test_status_scaling" name="test_fresh[a-b]">'
        '<failure message="WaitTimeout: timed out after 60s waiting for LeaderWorkerSet ns/st&#10;more">x</failure>'
        "</testcase></testsuite></testsuites>"
    )
    col = matrix.load_column(plan[0], run_dir, 1)
    assert col.details["LWS-STATUS-001"] == "WaitTimeout: timed out after 60s waiting for LeaderWorkerSet ns/st"
    assert matrix.headline("[gw0] linux\nscenario = x\nE   AssertionError: boom\nE   more") == "AssertionError: boom"


def test_git_ref_cells_build_from_snapshots_and_render_one_html_grid(tmp_path: Path) -> None:
    repo = "/mirrors/lws.git"
    assert matrix.parse_versions(f"v0.9.0,{repo}@v0.10.0,{repo}@main", "--lws")[2] == f"{repo}@main"
    plan = matrix.cells(["v0.9.0", f"{repo}@main"], ["v0.17.0"])
    assert plan[1].overrides[:2] == [f"sources.lws={repo}@main", "versions.kueue=v0.17.0"]
    assert plan[1].name == "matrix-lwsmain-kueuev0-17-0" and plan[1].label == "lws @main kueue v0.17.0"
    summary(tmp_path / plan[0].name, {"lws": "v0.9.0"}, {"LWS-SUBGROUP-001": ("known-deviation", "lws#917")})
    summary(tmp_path / plan[1].name, {"lws": "v0.10.0+main@060ab4d"}, {"LWS-SUBGROUP-001": ("passed", "")})
    m = matrix.run(plan, lambda _c, _d: 0, tmp_path)
    assert m.columns[1].versions["lws"] == "v0.10.0+main@060ab4d"  # the real version, from the run
    page = (tmp_path / "index.html").read_text()
    assert "v0.10.0+main@060ab4d" in page and "<td class='known-deviation'" in page and "<td class='passed'" in page
    assert f"href='{plan[1].name}/index.html'" in page and "<tr class='differs'><th>LWS-SUBGROUP-001" in page
