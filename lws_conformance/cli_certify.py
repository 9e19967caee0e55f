"""`lwsc verify`, `lwsc product-check`, `lwsc product-merge`: the certification artefacts of a run,
checked offline, and a CNCF AI-conformance submission started from a run.

Kept out of cli.py (which only registers these parsers and writes the archive after a run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from . import provenance
from .errors import UserError
from .report import archive, product, submission
from .runconfig import RunConfig

Handler = Callable[[RunConfig], int]
RAW = argparse.RawDescriptionHelpFormatter


def write_archive(run_dir: Path) -> Path:
    """`<reports>/<run-id>.tar.gz` next to the run directory (what a vendor submits)."""
    return archive.write(run_dir, run_dir.parent / f"{run_dir.name}.tar.gz", provenance.harness())


def product_metadata(cfg: RunConfig) -> Path | None:
    """--product-metadata's file, or None; one line naming the fix when it does not exist."""
    src = cfg.options.get("product_metadata")
    if not src:
        return None
    path = Path(src).expanduser()
    if not path.is_file():
        raise UserError(f"--product-metadata {path} does not exist; give a YAML file of PRODUCT.yaml metadata keys")
    return path


def keep_product_metadata(cfg: RunConfig, run_dir: Path) -> None:
    """Copy --product-metadata into the run directory, where PRODUCT.yaml rendering reads it."""
    path = product_metadata(cfg)
    if path is not None:
        shutil.copyfile(path, run_dir / product.METADATA_FILE)


def cmd_verify(cfg: RunConfig) -> int:
    try:
        result = archive.verify(Path(cfg.options.archive).expanduser())
    except archive.BadArchive as exc:
        print(f"lwsc: error: {exc}", file=sys.stderr)
        return 2
    print(result.text())
    return 0 if result.ok else 1


def cmd_product_check(cfg: RunConfig) -> int:
    o = cfg.options
    path = Path(o.file).expanduser()
    if path.is_dir():
        path = path / "PRODUCT.yaml"
    if not path.is_file():
        raise UserError(f"{path} does not exist; give a PRODUCT.yaml or a run directory")
    template = Path(o.template).expanduser() if o.template else None
    if template is not None and not template.is_file():
        raise UserError(f"--template {template} does not exist; give docs/AIConformance-<version>.yaml")
    if o.final:
        try:
            found, used = submission.check_file(path, template)
        except submission.NoTemplate as exc:
            raise UserError(str(exc)) from None
        rules = f"submission rules against {used}"
    else:
        found, rules = product.check_file(path), "generated entry rules"
    for problem in found:
        print(f"{path}: {problem}")
    if not found:
        print(f"{path}: ok ({rules})")
    if o.final:
        print(f"{path}: {submission.OFFLINE}", file=sys.stderr)
    return 1 if found else 0


def cmd_product_merge(cfg: RunConfig) -> int:
    """A submission: the template (or --into, an existing submission) with the run's gang-scheduling
    entry merged in and its evidence copied next to it; then what is left to fill."""
    o = cfg.options
    run = Path(o.run).expanduser()
    entry_file = run / "PRODUCT.yaml" if run.is_dir() else run
    if not entry_file.is_file():
        raise UserError(f"{entry_file} does not exist; give a reports/<run-id> directory of `lwsc run`")
    entry = yaml.safe_load(entry_file.read_text())
    ok, why = _entry_use(entry_file, entry)
    if not ok and not o.draft:
        raise UserError(
            f"{entry_file} is not for submission: {why}; run `lwsc run --certify` (or pass --draft "
            "to start a draft from it)"
        )
    into = Path(o.into).expanduser() if o.into else None
    if into is not None and not into.is_file():
        raise UserError(f"--into {into} does not exist; give the submission's PRODUCT.yaml (or leave it out)")
    template = Path(o.template).expanduser() if o.template else None
    if template is not None and (into is not None or not template.is_file()):
        raise UserError(f"--template {template}: give an existing AIConformance-<version>.yaml, without --into")
    out = Path(o.output).expanduser()
    try:
        tmpl = submission.template("", template) if template else None
    except submission.NoTemplate as exc:
        raise UserError(str(exc)) from None
    version = (
        submission.minor(str((tmpl or {}).get("metadata", {}).get("kubernetesVersion") or ""))
        or submission.minor(o.k8s_version or "")
        or (submission.version_of(into, yaml.safe_load(into.read_text())) if into else None)
        or submission.version_of(out, entry)
    )
    try:
        base = yaml.safe_load(into.read_text()) if into else tmpl or submission.template(version or "")
    except submission.NoTemplate as exc:
        raise UserError(str(exc)) from None
    doc = submission.merge(entry, base, entry_file.parent, out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(submission.render(doc, version))
    print(out)
    found, used = submission.check_file(out, template)
    print(
        f"{out}: {len(found)} thing(s) left to fill against {used} (`lwsc product-check --final {out}`):",
        file=sys.stderr,
    )
    for problem in found:
        print(f"  {problem}", file=sys.stderr)
    return 0


def _entry_use(entry_file: Path, entry: object) -> tuple[bool, str]:
    """Whether a run's entry may go into a submission: from the run's summary.json next to it, else
    what the entry records (`lwsConformance`); an entry that says neither is not."""
    summary = entry_file.parent / "summary.json"
    if summary.is_file():
        return product.for_submission(json.loads(summary.read_text()))
    run = entry.get(product.RUN_KEY) if isinstance(entry, dict) else None
    if isinstance(run, dict) and "forSubmission" in run:
        return bool(run["forSubmission"]), str(run.get("why") or "")
    return False, "it records no run (no summary.json next to it, no lwsConformance key)"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> dict[str, Handler]:
    ver = sub.add_parser(
        "verify",
        help="check a results archive's sha256 sums against its manifest (a checksum, not a signature; exit 0 ok, "
        "1 does not match its manifest, 2 not an archive)",
        formatter_class=RAW,
        epilog="examples:\n  lwsc verify reports/20260101-120000.tar.gz",
    )
    ver.add_argument("archive", help="the <run-id>.tar.gz that `lwsc run` wrote next to the run directory")
    chk = sub.add_parser(
        "product-check",
        help="check a PRODUCT.yaml against the CNCF AI-conformance format rules",
        formatter_class=RAW,
        epilog="examples:\n  lwsc product-check reports/latest\n  lwsc product-check --final submission/PRODUCT.yaml",
    )
    chk.add_argument("file", help="PRODUCT.yaml, or a run directory holding one")
    chk.add_argument(
        "--final",
        action="store_true",
        help="a whole submission, as the CNCF validator checks it against the AIConformance template of its "
        "Kubernetes version: every category and item, every MUST Implemented, no [placeholders]",
    )
    chk.add_argument("--template", help="with --final: the AIConformance-<version>.yaml to check against")
    mrg = sub.add_parser(
        "product-merge",
        help="start (or update) a full CNCF AI-conformance submission with a run's gang-scheduling entry",
        formatter_class=RAW,
        epilog="examples:\n  lwsc product-merge reports/latest -o submission/v1.36/my-platform/PRODUCT.yaml\n"
        "  lwsc product-merge reports/latest --into my/PRODUCT.yaml -o my/PRODUCT.yaml",
    )
    mrg.add_argument("run", help="a run directory (or its PRODUCT.yaml)")
    mrg.add_argument("-o", "--output", required=True, help="the submission's PRODUCT.yaml to write")
    mrg.add_argument("--into", help="an existing submission to merge into (default: the AIConformance template)")
    mrg.add_argument("--k8s-version", help="the template's Kubernetes version, e.g. v1.37 (default: the run's)")
    mrg.add_argument(
        "--template",
        help="an AIConformance-<version>.yaml checklist to start from (default: the one shipped for the version)",
    )
    mrg.add_argument(
        "--draft",
        action="store_true",
        help="also from a run that is not for submission (not --certify, or it did not pass); its notes say so",
    )
    return {"verify": cmd_verify, "product-check": cmd_product_check, "product-merge": cmd_product_merge}
