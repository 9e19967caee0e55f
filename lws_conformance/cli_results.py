"""A finished run's results, as Sonobuoy users expect (kept out of cli.py):

- `lwsc results ARCHIVE|RUN_DIR [--mode detailed]`: the conclusion and the requirements that did
  not pass, read from a run directory or straight out of a tarball (`lwsc run`'s archive, the
  Sonobuoy plugin's, or Sonobuoy's own results tarball), never extracted;
- `lwsc report ARCHIVE`: a run re-rendered from its archive into a new run directory;
- `lwsc run --rerun-failed RUN_DIR|ARCHIVE`: the tests of the requirements that did not pass.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from .errors import UserError
from .report import recorded, render
from .runconfig import RunConfig

Handler = Callable[[RunConfig], int]
RAW = argparse.RawDescriptionHelpFormatter


def _load(path_text: str, flag: str = "") -> recorded.Recorded:
    try:
        return recorded.load(Path(path_text).expanduser())
    except recorded.Unreadable as exc:
        raise UserError(f"{flag + ' ' if flag else ''}{exc}") from None


def cmd_results(cfg: RunConfig) -> int:
    """Print the run's conclusion and what did not pass; exit with the run's conclusion code."""
    rec = _load(cfg.options.source)
    sys.stdout.write(recorded.text(rec, detailed=cfg.options.mode == "detailed"))
    return int((rec.summary.get("conclusion") or {}).get("code", 3))


def report_archive(cfg: RunConfig, tools_dir: Path | None) -> int:
    """`lwsc report ARCHIVE`: the archive's run directory written to --out (default
    <reports>/<run-id>, which must not exist yet) and re-rendered there; exits with its conclusion."""
    source = cfg.options.run_dir
    rec = _load(source)
    if not rec.files:
        raise UserError(f"{source} is not a tarball; give a run directory or a .tar.gz")
    if rec.results is None:
        raise UserError(f"{rec.source} has no {recorded.RESULTS}; it cannot be re-rendered (`lwsc results` reads it)")
    if rec.verified and not rec.verified.startswith("ok"):
        raise UserError(f"{source} {rec.verified}; `lwsc verify {source}` lists what differs")
    out = Path(cfg.options.out or Path(cfg.reports or ".") / (rec.run_id or "archived")).expanduser().resolve()
    if out.exists():
        raise UserError(f"{out} already exists; give --out DIR (a new directory) to re-render the archive into")
    try:
        for rel, data in rec.files.items():
            target = out / rel
            if out not in target.resolve().parents:  # no member writes outside the new directory
                raise UserError(f"{source}: unsafe member path {rel!r}; not a results archive")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        doc = render.render(out, tools_dir)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # nothing half-written stays
        raise
    print(out / "summary.md")
    return int(doc.get("conclusion", {}).get("code", 3))


def rerun_focus(source: str | None, chosen_otherwise: object) -> str | None:
    """`run --rerun-failed SOURCE`: the --focus of the ids of the requirements that did not pass
    there (requirement ids are test keywords), or None without SOURCE. One line, exit 2, when it
    cannot be used (also when `chosen_otherwise`: --focus/--skip/--certify/--shard were given)."""
    if not source:
        return None
    if chosen_otherwise:
        raise UserError("--rerun-failed chooses the tests itself: drop --focus/--skip/--certify/--shard")
    rec = _load(source, "--rerun-failed")
    ids = [r["id"] for r in recorded.not_passed(rec.summary)]
    if not ids:
        raise UserError(f"--rerun-failed: every requirement of run {rec.run_id} that ran passed; nothing to re-run")
    print(
        f"lwsc: re-running the tests of {len(ids)} requirement(s) that did not pass in run {rec.run_id}: "
        f"{', '.join(ids)}",
        file=sys.stderr,
    )
    return " or ".join(ids)


def add_rerun_arg(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--rerun-failed",
        metavar="RUN",
        help="run only the tests of the requirements that did not pass in RUN (a run directory or its .tar.gz)",
    )


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> dict[str, Handler]:
    res = sub.add_parser(
        "results",
        help="print a finished run's conclusion and the requirements that did not pass (from its directory or "
        "tarball, not extracted); exits with the run's code",
        formatter_class=RAW,
        epilog="examples:\n  lwsc results reports/latest\n  lwsc results results/20261206-080000.tar.gz\n"
        "  lwsc results 202612060800_sonobuoy_*.tar.gz --mode detailed",
    )
    res.add_argument("source", help="a reports/<run-id> directory, its .tar.gz, or Sonobuoy's results tarball")
    res.add_argument(
        "--mode",
        choices=("report", "detailed"),
        default="report",
        help="report (default): what did not pass; detailed: every requirement with its tests and detail",
    )
    return {"results": cmd_results}
