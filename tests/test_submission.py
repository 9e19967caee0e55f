"""A full CNCF AI-conformance submission: `lwsc product-check --final` applies the validator's
rules (github.com/cncf/k8s-ai-conformance scripts/validate.go) against the shipped
AIConformance-<version>.yaml template, so a lone gang-scheduling entry is not "ok"; `lwsc
product-merge` starts a submission from the template (or the vendor's own) with the run's entry and
its evidence, and a submission filled from there passes."""

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


def _entry_run(tmp_path: Path) -> Path:
    run = _run_dir(tmp_path)
    (run / "PRODUCT.yaml").write_text(product.render(SUMMARY, VENDOR))
    return run


def _filled(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """`doc` with every item answered as a vendor would: Implemented with a local evidence file."""
    doc = copy.deepcopy(doc)
    doc["metadata"].pop("repoUrl", None)  # optional: filled or removed, never a placeholder
    (base / "evidence.md").write_text("how we checked it\n")
    for items in doc["spec"].values():
        for item in items:
            if item["id"] != product.ITEM:
                item.update(status="Implemented", evidence=["evidence.md"], notes="checked")
    return doc


def test_shipped_templates_are_the_cncf_checklists() -> None:
    assert submission.versions()[:4] == ["1.33", "1.34", "1.35", "1.36"]
    for version in submission.versions():
        tmpl = submission.template(version)
        assert tmpl["metadata"]["kubernetesVersion"] == f"v{version}"
        gang = [i for i in tmpl["spec"][product.CATEGORY] if i["id"] == product.ITEM]
        assert gang and gang[0]["level"] == "MUST" and gang[0]["description"] == product.DESCRIPTION


def test_final_check_of_a_lone_entry_lists_what_the_validator_misses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _entry_run(tmp_path)
    assert cli.main(["product-check", str(run)]) == 0  # as a generated entry it is fine
    capsys.readouterr()
    assert cli.main(["product-check", "--final", str(run)]) == 1
    out = capsys.readouterr()
    for category in ("accelerators", "networking", "observability", "security", "operator"):
        assert f"missing spec category: {category}" in out.out
    assert "missing requirement 'cluster_autoscaling' in category 'schedulingOrchestration'" in out.out
    assert ": ok" not in out.out
    assert "vendorName is a CNCF member" in out.err  # what cannot be checked offline is said


def test_a_complete_submission_passes_and_each_rule_bites(tmp_path: Path) -> None:
    tmpl = submission.template("v1.36")
    run = _entry_run(tmp_path)
    out = tmp_path / "v1.36" / "example" / "PRODUCT.yaml"
    assert cli.main(["product-merge", str(run), "-o", str(out)]) == 0
    doc = _filled(yaml.safe_load(out.read_text()), out.parent)
    assert submission.problems(doc, tmpl, base=out.parent) == []
    cases: list[tuple[Any, str]] = [
        (lambda d: d["spec"]["operator"][0].update(status="Partially Implemented"), "MUST level but status"),
        (lambda d: d["spec"]["operator"][0].update(level="SHOULD"), "level differs from the template"),
        (lambda d: d["spec"]["security"][0].update(description="ours"), "description differs from the template"),
        (lambda d: d["spec"]["networking"].pop(0), "missing requirement 'ai_inference'"),
        (lambda d: d["spec"].pop("observability"), "missing spec category: observability"),
        (lambda d: d["spec"]["accelerators"][0].update(status="", evidence=["x.md"]), "invalid status ''"),
        (lambda d: d["spec"]["accelerators"][0].update(status="N/A", notes=""), "notes required"),
        (lambda d: d["spec"]["networking"][1].update(evidence=["gone.md"]), "not found: gone.md"),
        (lambda d: d["metadata"].update(repoUrl="[Repository URL]"), "placeholder value"),
        (lambda d: d["metadata"].update(kubernetesVersion="v1.35"), "is not the template's v1.36"),
    ]
    for edit, problem in cases:
        broken = copy.deepcopy(doc)
        edit(broken)
        found = submission.problems(broken, tmpl, base=out.parent)
        assert any(problem in p for p in found), (problem, found)
    unanswered = copy.deepcopy(doc)
    unanswered["spec"]["accelerators"][0].update(status="", evidence=[], notes="")  # a SHOULD may stay open
    assert submission.problems(unanswered, tmpl, base=out.parent) == []


def test_the_version_comes_from_the_path_as_the_validator_reads_it(tmp_path: Path) -> None:
    run = _entry_run(tmp_path)
    out = tmp_path / "v1.34" / "example" / "PRODUCT.yaml"
    assert cli.main(["product-merge", str(run), "-o", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    assert [i["id"] for i in doc["spec"]["accelerators"]] == ["dra_support"]  # 1.34's checklist
    found, used = submission.check_file(out)
    assert used == "AIConformance-1.34"
    assert "requirement 'dra_support' is MUST level but status is ''; it must be 'Implemented'" in found


def test_merge_fills_the_gang_item_and_copies_its_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _entry_run(tmp_path)
    out = tmp_path / "sub" / "v1.36" / "example" / "PRODUCT.yaml"
    assert cli.main(["product-merge", str(run), "-o", str(out)]) == 0
    left = capsys.readouterr().err
    doc = yaml.safe_load(out.read_text())
    assert list(doc["spec"]) == list(submission.template("1.36")["spec"])
    gang = next(i for i in doc["spec"][product.CATEGORY] if i["id"] == product.ITEM)
    assert gang["status"] == "Implemented" and "KUEUE-GANG-001 passed" in gang["notes"]
    assert gang["evidence"] == [f"lws-conformance/{n}" for n in product.EVIDENCE]
    assert json.loads((out.parent / "lws-conformance" / "summary.json").read_text())["run_id"] == SUMMARY["run_id"]
    assert doc["metadata"]["vendorName"] == VENDOR["vendorName"]
    assert "gang_scheduling" not in left and "'pod_autoscaling' is MUST level" in left


def test_merge_into_the_vendors_submission_keeps_their_answers(tmp_path: Path) -> None:
    run = _entry_run(tmp_path)
    theirs = tmp_path / "v1.36" / "example" / "PRODUCT.yaml"
    theirs.parent.mkdir(parents=True)
    tmpl = submission.template("1.36")
    doc = _filled(tmpl, theirs.parent)
    doc["metadata"] = {**VENDOR, "kubernetesVersion": "v1.36", "platformVersion": "2.0"}
    theirs.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert cli.main(["product-check", "--final", str(theirs)]) == 1  # gang_scheduling still open
    assert cli.main(["product-merge", str(run), "--into", str(theirs), "-o", str(theirs)]) == 0
    assert cli.main(["product-check", "--final", str(theirs)]) == 0
    merged = yaml.safe_load(theirs.read_text())
    assert merged["metadata"]["platformVersion"] == "2.0"  # the vendor's value is kept
    assert merged["spec"]["operator"][0]["notes"] == "checked"


def test_an_unknown_version_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _entry_run(tmp_path)
    assert cli.main(["product-merge", str(run), "--k8s-version", "v1.99", "-o", str(tmp_path / "x.yaml")]) == 2
    assert "no AIConformance template for Kubernetes" in capsys.readouterr().err
