"""PRODUCT.yaml says whether it may be submitted (only from `lwsc run --certify` that exited 0),
its evidence takes the checklist's form (`file://junit_01.xml#<requirement>`), and `product-merge`
refuses an entry not for submission (unless --draft), takes --template and knows the 1.37 checklist;
wrong input is one line, exit 2, nothing written (no cluster)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_conformance import cli
from lws_conformance.report import product, submission
from tests.test_certification import SUMMARY, VENDOR, _run_dir

STANDARD_FAILED = {
    **SUMMARY,
    "mode": "standard",
    "conclusion": {"code": 1, "line": "not conformant: 1 MUST requirement(s) did not pass: X failed"},
}


def _run(tmp_path: Path, summary: dict[str, Any]) -> Path:
    run = _run_dir(tmp_path)
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "PRODUCT.yaml").write_text(product.render(summary, VENDOR))
    return run


def _one_line(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("lwsc: error:"), err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_an_entry_from_a_standard_run_says_it_is_not_for_submission(tmp_path: Path) -> None:
    text = product.render(STANDARD_FAILED, VENDOR)
    assert text.startswith("# NOT FOR SUBMISSION: a standard run (exit 1), not a certification run")
    doc = yaml.safe_load(text)
    assert doc["lwsConformance"] == {
        "run": SUMMARY["run_id"],
        "mode": "standard",
        "exitCode": 1,
        "forSubmission": False,
        "why": product.for_submission(STANDARD_FAILED)[1],
    }
    assert doc["spec"]["schedulingOrchestration"][0]["notes"].startswith("NOT FOR SUBMISSION: a standard run")
    failed_certify = {**STANDARD_FAILED, "mode": "certify"}
    assert "# NOT FOR SUBMISSION: a certification run that did not pass (exit 1" in product.render(failed_certify)
    passed = product.render(SUMMARY, VENDOR)
    assert "NOT FOR SUBMISSION" not in passed and yaml.safe_load(passed)["lwsConformance"]["forSubmission"] is True


def test_evidence_names_each_gang_requirements_test_cases_in_the_checklists_form(tmp_path: Path) -> None:
    doc = product.build(SUMMARY, VENDOR)
    assert doc["spec"]["schedulingOrchestration"][0]["evidence"] == [
        "file://junit_01.xml#KUEUE-GANG-001",
        "file://junit_01.xml#KUEUE-GANG-002",
        "file://e2e.log",
        "file://summary.json",
    ]
    assert "file://results/junit.xml#" in (submission.template_dir() / "AIConformance-1.37.yaml").read_text()
    run = _run(tmp_path, SUMMARY)
    assert product.check_file(run / "PRODUCT.yaml") == []
    (run / "junit_01.xml").write_text("<testsuites><testcase name='[KUEUE-GANG-001] t'/></testsuites>")
    assert product.check_file(run / "PRODUCT.yaml") == [
        "evidence for 'gang_scheduling': junit_01.xml has no KUEUE-GANG-002"
    ]


def test_merge_refuses_an_entry_not_for_submission_unless_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, STANDARD_FAILED)
    out = tmp_path / "sub" / "v1.36" / "example" / "PRODUCT.yaml"
    code = cli.main(["product-merge", str(run), "-o", str(out)])
    _one_line(code, capsys.readouterr().err, "is not for submission: a standard run (exit 1)", "--certify", "--draft")
    assert not (tmp_path / "sub").exists()
    assert cli.main(["product-merge", str(run), "-o", str(out), "--draft"]) == 0
    gang = yaml.safe_load(out.read_text())["spec"]["schedulingOrchestration"][0]
    assert gang["notes"].startswith("NOT FOR SUBMISSION") and gang["evidence"] == [
        "lws-conformance/junit_01.xml",
        "lws-conformance/e2e.log",
        "lws-conformance/summary.json",
    ]  # the paths the CNCF validator resolves (it stats local evidence as plain paths)


def test_merge_knows_the_1_37_checklist_and_takes_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, SUMMARY)
    assert "1.37" in submission.versions()
    out = tmp_path / "a" / "PRODUCT.yaml"
    assert cli.main(["product-merge", str(run), "--k8s-version", "v1.37", "-o", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["metadata"]["kubernetesVersion"] == "v1.37" and "disaggregated_inference" in str(doc["spec"])
    assert "against AIConformance-1.37" in capsys.readouterr().err

    custom = copy.deepcopy(submission.template("1.37"))
    custom["metadata"]["kubernetesVersion"] = "v1.38"
    custom["spec"]["operator"].append(
        {"id": "new_item", "description": "New.", "level": "MUST", "status": "", "evidence": [], "notes": ""}
    )
    tmpl = tmp_path / "AIConformance-1.38.yaml"
    tmpl.write_text(yaml.safe_dump(custom, sort_keys=False))
    out = tmp_path / "b" / "PRODUCT.yaml"
    assert cli.main(["product-merge", str(run), "--template", str(tmpl), "-o", str(out)]) == 0
    assert "new_item" in out.read_text() and "v1.38" in out.read_text()
    err = capsys.readouterr().err
    assert f"against {tmpl}" in err and "'new_item' is MUST level" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--template", "/nonexistent/AIConformance-1.37.yaml"], "give an existing AIConformance-<version>.yaml"),
        (["--k8s-version", "v1.99"], "Kubernetes '1.99' (shipped: 1.33, 1.34, 1.35, 1.36, 1.37); pass --template FILE"),
    ],
)
def test_merge_mistakes_are_one_line_and_write_nothing(
    extra: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, SUMMARY)
    out = tmp_path / "sub" / "PRODUCT.yaml"
    _one_line(cli.main(["product-merge", str(run), *extra, "-o", str(out)]), capsys.readouterr().err, needle)
    assert not (tmp_path / "sub").exists()
