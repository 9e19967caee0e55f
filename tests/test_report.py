"""Per-requirement verdicts, the HTML fallback, PRODUCT.yaml and the secret scan (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

from lws_conformance.catalogue import Requirement
from lws_conformance.report import evidence, html, render, summary
from lws_conformance.report.summary import TestResult

REQS = {
    "LWS-A-001": Requirement("LWS-A-001", "a", "A MUST hold.", {"lws": "v0.1.0"}, ("t::a",)),
    "LWS-B-001": Requirement("LWS-B-001", "b", "B MUST hold.", {"lws": "v0.10.0"}, ("t::b",)),
    "KUEUE-GANG-001": Requirement("KUEUE-GANG-001", "gang", "Gang MUST hold.", {"kueue": "v0.9.0"}, ("t::g",)),
    "LWS-C-001": Requirement("LWS-C-001", "c", "C MUST hold.", {"lws": "v0.1.0"}, ("t::c",)),
}


def test_verdicts_take_the_worst_test_and_keep_the_reason() -> None:
    assert summary.verdict([]) == ("not-run", "")
    assert summary.verdict([TestResult("x", "passed", 1, ["R"]), TestResult("y", "failed", 1, ["R"], "boom")]) == (
        "failed",
        "boom",
    )
    assert summary.verdict([TestResult("x", "xfail", 1, ["R"], "lws#917")])[0] == "xfail"
    # non-strict xfail that passed: the race did not reproduce, the requirement held
    assert summary.verdict([TestResult("x", "xpass", 1, ["R"], "lws#998")])[0] == "passed"
    assert summary.verdict([TestResult("x", "skipped", 0, ["R"], "not-applicable: too old")])[0] == "not-applicable"


def run_dir(tmp_path: Path) -> Path:
    results = [
        TestResult("t::a", "passed", 1.5, ["LWS-A-001"]),
        TestResult("t::b", "skipped", 0.0, ["LWS-B-001"], "not-applicable: requires lws >= v0.10.0"),
        TestResult("t::g", "failed", 2.0, ["KUEUE-GANG-001"], "AssertionError: group 1 leaked"),
    ]
    out = tmp_path / "run"
    render.save_results(out, results, {"run_id": "r1", "versions": {"lws": "v0.9.0", "kueue": "v0.17.0"}})
    (out / "artifacts").mkdir()
    (out / "artifacts" / "timeline.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'><rect/></svg>")
    return out


def test_summary_has_one_row_per_requirement_with_totals(tmp_path: Path) -> None:
    out = run_dir(tmp_path)
    rows = summary.build(REQS, [TestResult(**r) for r in json.loads((out / "results.json").read_text())["results"]])
    by_id = {r.id: r.verdict for r in rows}
    assert by_id == {
        "LWS-A-001": "passed",
        "LWS-B-001": "not-applicable",
        "KUEUE-GANG-001": "failed",
        "LWS-C-001": "not-run",
    }
    assert summary.totals(rows) == {"failed": 1, "xfail": 0, "passed": 1, "not-applicable": 1, "not-run": 1}


def test_html_fallback_shows_requirements_and_inlines_timelines(tmp_path: Path) -> None:
    out = run_dir(tmp_path)
    doc = {
        "run_id": "r1",
        "versions": {"lws": "v0.9.0"},
        "totals": {"passed": 1},
        "requirements": [
            {
                "id": "LWS-A-001",
                "verdict": "passed",
                "since": {"lws": "v0.1.0"},
                "must": "A MUST hold.",
                "duration": 1.5,
                "detail": "",
            }
        ],
    }
    page = html.fallback(out, doc).read_text()
    assert "id='requirements'" in page and "LWS-A-001" in page and "<svg" in page


def test_product_yaml_maps_gang_requirements_to_kar_0053() -> None:
    doc = {
        "versions": {"kubernetes": "v1.36.3", "kueue": "v0.17.0", "lws": "v0.9.0"},
        "requirements": [{"id": "KUEUE-GANG-001", "verdict": "passed", "must": "Gang MUST hold."}],
    }
    text = evidence.product_yaml(doc)
    assert "KAR-0053" in text and "status: passed" in text and "kubernetes_version: v1.36.3" in text
    doc["requirements"][0]["verdict"] = "failed"
    assert "status: incomplete" in evidence.product_yaml(doc)


def test_secret_scan_finds_key_material(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("nothing to see")
    (tmp_path / "leak.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n")
    (tmp_path / "cfg").write_text("users:\n- user:\n    token: abcdefghijklmnopqrstuvwxyz0123\n")
    (tmp_path / "raw").write_bytes(b"...SECRETBYTES...")
    hits = evidence.find_secrets(tmp_path, [b"SECRETBYTES"])
    assert sorted(Path(h).name for h in hits) == ["cfg", "leak.pem", "raw"]


def test_allure_metadata_has_environment_and_categories(tmp_path: Path) -> None:
    evidence.write_allure_metadata(tmp_path, {"lws": "v0.9.0"}, "local", "default")
    assert "Lws.version=v0.9.0" in (tmp_path / "environment.properties").read_text()
    names = [c["name"] for c in json.loads((tmp_path / "categories.json").read_text())]
    assert any("Contract violated" in n for n in names) and any("infrastructure" in n for n in names)
