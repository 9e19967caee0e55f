"""Certification artefacts without a cluster: the results archive and `lwsc verify` (exit 0 ok,
1 does not match its manifest, 2 not an archive), and PRODUCT.yaml against the CNCF AI-conformance format rules
(github.com/cncf/k8s-ai-conformance scripts/validate.go, docs/AIConformance-1.37.yaml)."""

from __future__ import annotations

import copy
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_conformance import cli
from lws_conformance.report import archive, product

SUMMARY: dict[str, Any] = {
    "run_id": "1130120000",
    "mode": "certify",
    "versions": {"kubernetes": "v1.36.3", "kueue": "v0.17.0", "lws": "v0.9.0"},
    "harness": {"version": "0.1.0", "commit": "abc"},
    "requirements": [
        {"id": "KUEUE-GANG-001", "level": "MUST", "verdict": "passed"},
        {"id": "KUEUE-GANG-002", "level": "MUST", "verdict": "passed"},
        {"id": "LWS-NAME-001", "level": "MUST", "verdict": "passed"},
    ],
    "conclusion": {"code": 0, "line": "conformant: every applicable MUST that ran passed (3 passed)"},
}
VENDOR = {
    "vendorName": "Example Corp",
    "platformName": "Example Kubernetes",
    "platformVersion": "1.0",
    "websiteUrl": "https://example.com",
    "documentationUrl": "https://example.com/docs",
    "productLogoUrl": "https://example.com/logo.svg",
    "description": "A platform.",
    "contactEmailAddress": "k8s@example.com",
    "k8sConformanceUrl": "https://github.com/cncf/k8s-conformance/tree/master/v1.36/example",
}


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "reports" / "20261130-120000"
    (run / "artifacts").mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(SUMMARY))
    (run / "junit_01.xml").write_text(
        "<testsuites><testsuite name='kueue'><testcase name='[KUEUE-GANG-001] test_gang'/>"
        "<testcase name='[KUEUE-GANG-002] test_gang_two'/></testsuite></testsuites>"
    )
    (run / "e2e.log").write_text("3 passed\n")
    (run / "artifacts" / "t.timeline.json").write_text("[]")
    return run


def _rewrite(src: Path, dst: Path, edit: Any) -> Path:
    """Copy a tar.gz member by member, letting `edit(name, data)` change (bytes) or drop (None) each."""
    with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
        for m in tin.getmembers():
            fh = tin.extractfile(m)
            data = edit(m.name, fh.read() if fh else b"")
            if data is not None:
                m.size = len(data)
                tout.addfile(m, io.BytesIO(data))
    return dst


def test_archive_round_trip_and_every_kind_of_tampering(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    tgz = archive.write(run, tmp_path / "r.tar.gz", {"version": "0.1.0", "commit": "abc"})
    ok = archive.verify(tgz)
    files = {"summary.json", "junit_01.xml", "e2e.log", "artifacts/t.timeline.json"}
    assert ok.ok and set(ok.manifest["files"]) == files
    with tarfile.open(tgz) as tar:
        sums = tar.extractfile(f"lwsc-results-{run.name}/SHA256SUMS").read().decode()  # type: ignore[union-attr]
    assert "  artifacts/t.timeline.json\n" in sums  # sha256sum -c format

    changed = _rewrite(tgz, tmp_path / "c.tar.gz", lambda n, d: d.replace(b"passed", b"PASSED"))
    assert sorted(archive.verify(changed).changed) == ["e2e.log", "summary.json"]
    missing = _rewrite(tgz, tmp_path / "m.tar.gz", lambda n, d: None if n.endswith("junit_01.xml") else d)
    assert archive.verify(missing).missing == ["junit_01.xml"]
    top = f"lwsc-results-{run.name}/"

    added = tmp_path / "a.tar.gz"
    with tarfile.open(tgz, "r:gz") as tin:
        members = [(m, tin.extractfile(m).read() if m.isfile() else b"") for m in tin.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(added, "w:gz") as tout:
        for m, d in members:
            tout.addfile(m, io.BytesIO(d))
        extra = tarfile.TarInfo(top + "extra.txt")
        extra.size = 1
        tout.addfile(extra, io.BytesIO(b"x"))
    assert archive.verify(added).added == ["extra.txt"]
    forged = b"0" * 64 + b"  e2e.log\n"
    resummed = _rewrite(tgz, tmp_path / "s.tar.gz", lambda n, d: forged if n.endswith("SUMS") else d)
    assert archive.verify(resummed).changed == ["SHA256SUMS"]


def test_lwsc_verify_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    tgz = archive.write(run, tmp_path / "r.tar.gz", {"version": "0.1.0", "commit": "abc"})
    assert cli.main(["verify", str(tgz)]) == 0
    assert "ok: run 20261130-120000, 4 files intact" in capsys.readouterr().out
    bad = _rewrite(tgz, tmp_path / "t.tar.gz", lambda n, d: d + b"x" if n.endswith("e2e.log") else d)
    assert cli.main(["verify", str(bad)]) == 1
    assert "does not match its manifest: changed: e2e.log" in capsys.readouterr().out
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip")
    no_manifest = _rewrite(tgz, tmp_path / "n.tar.gz", lambda n, d: None if n.endswith("manifest.json") else d)
    for path in (tmp_path / "junk.tar.gz", tmp_path / "absent.tar.gz", no_manifest):
        assert cli.main(["verify", str(path)]) == 2
        assert capsys.readouterr().err.startswith("lwsc: error: ")


def test_generated_product_yaml_follows_the_format(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    (run / "PRODUCT.yaml").write_text(product.render(SUMMARY))
    doc = yaml.safe_load((run / "PRODUCT.yaml").read_text())
    entry = doc["spec"]["schedulingOrchestration"][0]
    assert entry["id"] == "gang_scheduling" and entry["level"] == "MUST" and entry["status"] == "Implemented"
    assert "KUEUE-GANG-001 passed" in entry["notes"] and "LWS-NAME" not in entry["notes"]
    assert doc["metadata"]["kubernetesVersion"] == "v1.36"
    assert product.check_file(run / "PRODUCT.yaml") == []  # a generated entry: placeholders allowed
    final = product.check_file(run / "PRODUCT.yaml", final=True)
    assert len(final) == 9 and all("placeholder" in p for p in final)  # every vendor field still to fill
    (run / "PRODUCT.yaml").write_text(product.render(SUMMARY, VENDOR))
    assert product.check_file(run / "PRODUCT.yaml", final=True) == []


@pytest.mark.parametrize(
    ("verdicts", "status"),
    [
        (["passed", "passed"], "Implemented"),
        (["passed", "failed"], "Partially Implemented"),
        (["passed", "not-run"], "Partially Implemented"),
        (["failed", "error"], "Not Implemented"),
        (["not-run", "not-run"], "Not Implemented"),
        ([], "Not Implemented"),
    ],
)
def test_gang_status_from_verdicts(verdicts: list[str], status: str) -> None:
    rows = [{"id": f"KUEUE-GANG-00{i}", "level": "MUST", "verdict": v} for i, v in enumerate(verdicts, 1)]
    rows.append({"id": "KUEUE-GANG-009", "level": "SHOULD", "verdict": "warning"})  # a SHOULD never counts
    assert product.gang_status(rows)[0] == status


def _valid() -> dict[str, Any]:
    return product.build(SUMMARY, VENDOR)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d.pop("metadata"), "missing 'metadata' section"),
        (lambda d: d["metadata"].pop("vendorName"), "missing metadata field: vendorName (or vendor_name)"),
        (lambda d: d["metadata"].update(description=""), "metadata field description is empty"),
        (lambda d: d["metadata"].update(platformVersion=1.0), "metadata field platformVersion is not a string"),
        (lambda d: d["metadata"].update(k8sConformanceUrl="https://x.org/v1.36"), "invalid k8sConformanceUrl"),
        (lambda d: d["metadata"].update(productLogoUrl="https://x.org/l.png"), "must link to an SVG, EPS, or AI"),
        (lambda d: d["spec"]["schedulingOrchestration"][0].update(status="Done"), "invalid status 'Done'"),
        (lambda d: d["spec"]["schedulingOrchestration"][0].update(level="MAY"), "level 'MAY' is not one of"),
        (lambda d: d["spec"]["schedulingOrchestration"][0].update(evidence="x"), "field evidence must be a list"),
        (lambda d: d["spec"]["schedulingOrchestration"][0].update(status="N/A", notes=""), "notes required"),
        (lambda d: d["spec"]["schedulingOrchestration"][0].update(evidence=["nope.xml"]), "not found: nope.xml"),
        (lambda d: d["spec"].update(schedulingOrchestration=[]), "missing requirement 'gang_scheduling'"),
        (lambda d: d.pop("spec"), "missing 'spec' section"),
    ],
)
def test_format_checker_rejects(tmp_path: Path, edit: Any, problem: str) -> None:
    run = _run_dir(tmp_path)
    doc = copy.deepcopy(_valid())
    edit(doc)
    found = product.problems(doc, base=run)
    assert any(problem in p for p in found), found


def test_snake_case_metadata_is_accepted_and_unanswered_should_is_allowed(tmp_path: Path) -> None:
    doc = _valid()
    doc["metadata"] = {product._snake(k): v for k, v in doc["metadata"].items()}
    doc["spec"]["accelerators"] = [
        {"id": "dra_support", "description": "d", "level": "SHOULD", "status": "", "evidence": [], "notes": ""}
    ]
    assert product.problems(doc, base=_run_dir(tmp_path), final=True) == []


def test_an_archive_repacked_with_directory_entries_still_verifies(tmp_path: Path) -> None:
    """`tar czf` of the unpacked archive adds directory members; only file contents count."""
    run = _run_dir(tmp_path)
    tgz = archive.write(run, tmp_path / "r.tar.gz", {"version": "0.1.0", "commit": "abc"})
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tgz) as tar:
        tar.extractall(unpacked, filter="data")
    repacked = tmp_path / "repacked.tar.gz"
    with tarfile.open(repacked, "w:gz") as tar:
        tar.add(unpacked / f"lwsc-results-{run.name}", arcname=f"lwsc-results-{run.name}")
    assert archive.verify(repacked).ok
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(unpacked / f"lwsc-results-{run.name}" / "manifest.json", arcname="../manifest.json")
    with pytest.raises(archive.BadArchive, match="unsafe"):
        archive.verify(evil)
