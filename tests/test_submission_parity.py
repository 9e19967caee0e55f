"""`lwsc product-check --final` against the CNCF validator itself: tests/data/cncf-validator is
github.com/cncf/k8s-ai-conformance's scripts/validate.go, built here with its two network look-ups
stubbed (the CNCF landscape's member list answers "Example Corp"; every URL answers), and run on
the same submissions as `submission.check_file`. Both must accept and reject the same documents
with the same number of findings. Needs Go (as the local provider does) and gopkg.in/yaml.v3
from the module cache or proxy."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_conformance.report import product, submission
from tests.test_certification import SUMMARY, VENDOR

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "cncf-validator"
ENTRY = product.build(SUMMARY, VENDOR)


def _stub(source: str, signature: str, body: str) -> str:
    start = source.index(signature)
    end = source.index("\n}\n", start) + 3
    return source[:start] + signature + "\n" + body + "\n}\n" + source[end:]


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if not go:
        pytest.skip("no Go toolchain to build the CNCF validator")
    work = tmp_path_factory.mktemp("cncf-validator")
    for name in ("go.mod", "go.sum"):
        shutil.copy(SOURCE / name, work / name)
    src = (SOURCE / "validate.go").read_text()
    members = '\treturn map[string]bool{"Example Corp": true}, nil'
    src = _stub(src, "func fetchCNCFMembers() (map[string]bool, error) {", members)
    src = _stub(src, "func validateURL(urlStr string) error {", "\treturn nil")
    src = src.replace('\t"io"\n', '\t_ "io"\n').replace('\t"time"\n', '\t_ "time"\n')
    (work / "validate.go").write_text(src)
    (work / "docs").mkdir()
    for tmpl in submission.template_dir().glob("AIConformance-*.yaml"):
        shutil.copy(tmpl, work / "docs" / tmpl.name)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    built = subprocess.run(
        [go, "build", "-tags", "validate", "-o", "validator", "validate.go"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if built.returncode != 0 and "gopkg.in/yaml.v3" in built.stderr:
        pytest.skip(f"gopkg.in/yaml.v3 not in the module cache nor reachable: {built.stderr.strip()[-200:]}")
    assert built.returncode == 0, built.stderr
    return work


def _filled(version: str) -> dict[str, Any]:
    doc = submission.merge(ENTRY, submission.template(version))
    doc["metadata"].pop("repoUrl", None)
    for items in doc["spec"].values():
        for item in items:
            item.update(evidence=["evidence.md"])
            if item["id"] != product.ITEM:
                item.update(status="Implemented", notes="checked")
    return doc


def _edit(change: Callable[[dict[str, Any]], object], version: str = "1.36") -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        doc = _filled(version)
        change(doc)
        return doc

    return make


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "lone-entry": lambda: copy.deepcopy(ENTRY),
    "merged-unfilled": lambda: submission.merge(ENTRY, submission.template("1.36")),
    "complete": _edit(lambda d: None),
    "complete-1.34": _edit(lambda d: d["metadata"].update(kubernetesVersion="v1.34"), "1.34"),
    "must-partial": _edit(lambda d: d["spec"]["operator"][0].update(status="Partially Implemented")),
    "missing-item": _edit(lambda d: d["spec"]["networking"].pop(0)),
    "missing-category": _edit(lambda d: d["spec"].pop("observability")),
    "should-status-empty-with-evidence": _edit(lambda d: d["spec"]["accelerators"][0].update(status="")),
    "should-unanswered": _edit(lambda d: d["spec"]["accelerators"][0].update(status="", evidence=[], notes="")),
    "n/a-without-notes": _edit(lambda d: d["spec"]["accelerators"][0].update(status="N/A", notes="")),
    "evidence-missing": _edit(lambda d: d["spec"]["networking"][1].update(evidence=["gone.md"])),
    "optional-placeholder": _edit(lambda d: d["metadata"].update(repoUrl="[Repository URL]")),
    "bad-k8s-conformance-url": _edit(lambda d: d["metadata"].update(k8sConformanceUrl="https://x.org/v1.36")),
    "no-k8s-conformance-url": _edit(lambda d: d["metadata"].pop("k8sConformanceUrl")),
    "snake-case-metadata": _edit(
        lambda d: d.__setitem__("metadata", {product._snake(k): v for k, v in d["metadata"].items()})
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_product_check_final_judges_as_the_cncf_validator(validator: Path, case: str) -> None:
    doc = CASES[case]()
    version = "v1.34" if case.endswith("1.34") else "v1.36"
    here = validator / version / case.replace("/", "-")
    here.mkdir(parents=True, exist_ok=True)
    (here / "evidence.md").write_text("how it was checked\n")
    (here / "PRODUCT.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    run = subprocess.run(
        [str(validator / "validator"), str((here / "PRODUCT.yaml").relative_to(validator))],
        cwd=validator,
        capture_output=True,
        text=True,
        timeout=60,
    )
    theirs = [line.strip()[2:] for line in run.stdout.splitlines() if line.strip().startswith("- ")]
    ours, _ = submission.check_file(here / "PRODUCT.yaml")
    assert (run.returncode == 0, len(theirs)) == (not ours, len(ours)), (theirs, ours)
