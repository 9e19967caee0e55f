"""`lwsc verify`, `lwsc product-check`: the certification artefacts of a run, checked offline.

Kept out of cli.py (which only registers these parsers and writes the archive after a run).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from . import provenance
from .errors import UserError
from .report import archive, product

Handler = Callable[[argparse.Namespace], int]
RAW = argparse.RawDescriptionHelpFormatter


def write_archive(run_dir: Path) -> Path:
    """`<reports>/<run-id>.tar.gz` next to the run directory (what a vendor submits)."""
    return archive.write(run_dir, run_dir.parent / f"{run_dir.name}.tar.gz", provenance.harness())


def product_metadata(args: argparse.Namespace) -> Path | None:
    """--product-metadata's file, or None; one line naming the fix when it does not exist."""
    src = getattr(args, "product_metadata", None)
    if not src:
        return None
    path = Path(src).expanduser()
    if not path.is_file():
        raise UserError(f"--product-metadata {path} does not exist; give a YAML file of PRODUCT.yaml metadata keys")
    return path


def keep_product_metadata(args: argparse.Namespace, run_dir: Path) -> None:
    """Copy --product-metadata into the run directory, where PRODUCT.yaml rendering reads it."""
    path = product_metadata(args)
    if path is not None:
        shutil.copyfile(path, run_dir / product.METADATA_FILE)


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        result = archive.verify(Path(args.archive).expanduser())
    except archive.BadArchive as exc:
        print(f"lwsc: error: {exc}", file=sys.stderr)
        return 2
    print(result.text())
    return 0 if result.ok else 1


def cmd_product_check(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if path.is_dir():
        path = path / "PRODUCT.yaml"
    if not path.is_file():
        raise UserError(f"{path} does not exist; give a PRODUCT.yaml or a run directory")
    found = product.check_file(path, final=args.final)
    for problem in found:
        print(f"{path}: {problem}")
    if not found:
        print(f"{path}: ok ({'submission' if args.final else 'generated entry'} rules)")
    return 1 if found else 0


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
        "--final", action="store_true", help="submission rules: no [placeholders], every MUST item Implemented"
    )
    return {"verify": cmd_verify, "product-check": cmd_product_check}
