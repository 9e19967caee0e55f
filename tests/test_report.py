"""Per-requirement verdicts, the HTML fallback, PRODUCT.yaml and the secret scan (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lws_conformance.catalogue import Requirement
from lws_conformance.report import evidence, html, product, render, summary
from lws_conformance.report.summary import TestResult

REQS = {
    "LWS-A-001": Requirement("LWS-A-001", "a", "A MUST hold.", {"lws": "v0.1.0"}, ("t::a",)),
    "LWS-B-001": Requirement("LWS-B-001", "b", "B MUST hold.", {"lws": "v0.10.0"}, ("t::b",)),
    "KUEUE-GANG-001": Requirement("KUEUE-GANG-001", "gang", "Gang MUST hold.", {"kueue": "v0.9.0"}, ("t::g",)),
    "LWS-C-001": Requirement("LWS-C-001", "c", "C MUST hold.", {"lws": "v0.1.0"}, ("t::c",)),
    "LWS-D-001": Requirement("LWS-D-001", "d", "D SHOULD hold.", {"lws": "v0.1.0"}, ("t::d",), level="SHOULD"),
}


def _result(nodeid: str, duration: float, ran_on: str = "", **outcomes: tuple[str, str]) -> TestResult:
    return TestResult(
        nodeid,
        duration,
        {k.replace("_", "-"): {"verdict": v, "detail": d, "deviation": ""} for k, (v, d) in outcomes.items()},
        ran_on,
    )


def run_dir(tmp_path: Path) -> Path:
    results = [
        _result("t::a", 1.5, LWS_A_001=("passed", "")),
        _result("t::b", 0.0, LWS_B_001=("not-applicable", "requires lws >= v0.10.0")),
        _result("t::g", 2.0, KUEUE_GANG_001=("failed", "AssertionError: group 1 leaked")),
        _result("t::d", 1.0, "private local cluster", LWS_D_001=("warning", "window seen")),
        _result("t::d2", 1.0, LWS_D_001=("not-run", "skipped: no capability")),
    ]
    out = tmp_path / "run"
    render.save_results(out, results, {"run_id": "r1", "versions": {"lws": "v0.9.0", "kueue": "v0.17.0"}})
    (out / "artifacts").mkdir()
    (out / "artifacts" / "timeline.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'><rect/></svg>")
    return out


def test_summary_has_one_row_per_requirement_with_levels_and_where_it_ran(tmp_path: Path) -> None:
    out = run_dir(tmp_path)
    raw = json.loads((out / "results.json").read_text())["results"]
    rows = {r.id: r for r in summary.build(REQS, [TestResult(**r) for r in raw])}
    assert {k: r.verdict for k, r in rows.items()} == {
        "LWS-A-001": "passed",
        "LWS-B-001": "not-applicable",
        "KUEUE-GANG-001": "failed",
        "LWS-C-001": "not-run",
        "LWS-D-001": "warning",
    }
    assert rows["LWS-D-001"].level == "SHOULD" and rows["LWS-D-001"].ran_on == ["private local cluster"]
    assert [t["verdict"] for t in rows["LWS-D-001"].tests] == ["warning", "not-run"]  # the skip stays visible
    assert summary.private_only(rows["LWS-D-001"]) and not summary.private_only(rows["LWS-A-001"])
    assert rows["LWS-A-001"].ran_on == ["local cluster under test"]
    assert summary.levels(list(rows.values()))["SHOULD"] == {"warning": 1}


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
                "level": "MUST",
                "statement": "A MUST hold.",
                "sources": [{"kind": "api", "url": "https://github.com/x/y/blob/v1/a.go#L1", "quote": "q"}],
                "duration": 1.5,
                "detail": "",
            }
        ],
    }
    page = html.fallback(out, doc).read_text()
    assert "id='requirements'" in page and "LWS-A-001" in page and "<svg" in page
    assert "href='https://github.com/x/y/blob/v1/a.go#L1'" in page and "</b><br>MUST<br>" in page


def test_product_yaml_maps_gang_requirements_to_kar_0053() -> None:
    doc = {
        "versions": {"kubernetes": "v1.36.3", "kueue": "v0.17.0", "lws": "v0.9.0"},
        "requirements": [{"id": "KUEUE-GANG-001", "level": "MUST", "verdict": "passed", "statement": "Gang."}],
    }
    text = product.render(doc)
    assert "KAR-0053" in text and "status: Implemented" in text and "kubernetesVersion: v1.36" in text
    doc["requirements"][0]["verdict"] = "failed"
    assert "status: Not Implemented" in product.render(doc)


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


def test_report_rendering_never_installs_allure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline: without the CLI installed by `lwsc build` / bootstrap, no npm runs; index.html stays."""
    (tmp_path / "allure-results").mkdir()

    def no_network(*_a: object, **_k: object) -> None:
        raise AssertionError("report rendering ran a subprocess (npm install?)")

    monkeypatch.setattr(html.subprocess, "run", no_network)
    assert html.allure_single_file(tmp_path, tmp_path / "tools") is None
