"""A finished run as recorded, read from a run directory or straight out of a tarball, without
extracting it: the results archive `lwsc run` writes (`<run-id>.tar.gz`), the tarball of the
Sonobuoy plugin (`lwsc-results.tar.gz`), or Sonobuoy's own results tarball that holds it
(`sonobuoy retrieve`). What `lwsc results`, `lwsc report ARCHIVE` and `lwsc run --rerun-failed` read.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from . import archive
from .summary import mode_text

NOT_PASSED = ("failed", "error", "deviation-fixed?", "warning", "known-deviation", "partial")  # re-run these
SUMMARY, RESULTS = "summary.json", "results.json"


class Unreadable(ValueError):
    """Not a run directory or a tarball holding one (one line naming the fix)."""


@dataclass
class Recorded:
    source: str  # where it was read: the directory, or "ARCHIVE (member DIR/)"
    summary: dict[str, Any]
    results: dict[str, Any] | None  # results.json, when recorded
    files: dict[str, bytes]  # a tarball's run directory: path under it -> content ({} for a directory)
    verified: str = ""  # a results archive's `lwsc verify` line

    @property
    def run_id(self) -> str:
        return str(self.summary.get("run_id") or "")


def _json(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise Unreadable(f"{what} is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise Unreadable(f"{what} is not a JSON object")
    return doc


def _from_dir(path: Path) -> Recorded:
    summary = path / SUMMARY
    if not summary.is_file() and (path / RESULTS).is_file():
        raise Unreadable(f"{path} has results.json but no summary.json; render it first with `lwsc report {path}`")
    if not summary.is_file():
        raise Unreadable(f"{path} has no {SUMMARY}; give a reports/<run-id> directory or its .tar.gz archive")
    results = path / RESULTS
    return Recorded(
        str(path),
        _json(summary.read_bytes(), str(summary)),
        _json(results.read_bytes(), str(results)) if results.is_file() else None,
        {},
    )


def _run_dirs(names: list[str]) -> list[PurePosixPath]:
    """The directories inside a tarball holding a summary.json (a run directory), shortest first."""
    dirs = {PurePosixPath(n).parent for n in names if PurePosixPath(n).name == SUMMARY}
    return sorted(dirs, key=lambda d: (len(d.parts), str(d)))


def _from_tar(path: Path) -> Recorded:
    try:
        with tarfile.open(path, "r:*") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            dirs = _run_dirs([m.name for m in members])
            if not dirs:
                raise Unreadable(
                    f"{path} holds no run (no {SUMMARY}); give the .tar.gz of `lwsc run`, `lwsc retrieve` "
                    "or `sonobuoy retrieve`"
                )
            top = [d for d in dirs if len(d.parts) == len(dirs[0].parts)][-1]  # the newest run id at the top
            files: dict[str, bytes] = {}
            for m in members:
                p = PurePosixPath(m.name)
                if p.parent == top or top in p.parents:
                    fh = tar.extractfile(m)
                    files[p.relative_to(top).as_posix()] = fh.read() if fh else b""
    except (tarfile.TarError, OSError, EOFError) as exc:
        why = str(exc).splitlines()[0].rstrip(":") or type(exc).__name__
        raise Unreadable(f"{path} is not a readable tarball ({why}); give a run directory or its .tar.gz") from None
    where = f"{path} (member {top}/)" if str(top) != "." else str(path)
    summary = _json(files[SUMMARY], f"{where}: {SUMMARY}")
    results = _json(files[RESULTS], f"{where}: {RESULTS}") if RESULTS in files else None
    verified = ""
    if archive.MANIFEST in files:  # an `lwsc run` results archive: check its sums too
        try:
            verified = archive.verify(path).text()
        except archive.BadArchive as exc:
            verified = f"not verified: {exc}"
    return Recorded(where, summary, results, files, verified)


def load(path: Path) -> Recorded:
    """The run recorded at `path`: a run directory (or the reports/latest link), or a tarball."""
    if path.is_dir():
        return _from_dir(path)
    if path.is_file():
        return _from_tar(path)
    raise Unreadable(f"{path} does not exist; give a reports/<run-id> directory or its .tar.gz archive")


def not_passed(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The requirements whose tests did not all pass (not-run and not-applicable ones excluded:
    nothing of theirs ran), worst first."""
    rows = [r for r in summary.get("requirements") or [] if r.get("verdict") in NOT_PASSED]
    return sorted(rows, key=lambda r: (NOT_PASSED.index(r["verdict"]), r.get("level") != "MUST", r["id"]))


def _facts_line(summary: dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in sorted((summary.get("versions") or {}).items()))
    harness = summary.get("harness") or {}
    return (
        f"run {summary.get('run_id', '?')}: {mode_text(summary)}, provider {summary.get('provider', '?')}, "
        f"profile {summary.get('profile', '?')}; {versions or 'no versions recorded'}; lws-conformance "
        f"{harness.get('version', '?')} (commit {harness.get('commit', '?')}); {summary.get('finished', '')}"
    )


def _first(text: str, width: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def text(rec: Recorded, *, detailed: bool = False) -> str:
    """What `lwsc results` prints: the conclusion, counts, and the requirements that did not pass
    (`detailed`: every requirement, each with its whole detail and its tests)."""
    s = rec.summary
    end = s.get("conclusion") or {}
    by_level = sorted((s.get("levels") or {}).items())
    levels = "; ".join(f"{lv}: " + ", ".join(f"{v} {n}" for v, n in sorted(c.items())) for lv, c in by_level)
    lines = [f"{end.get('line', 'no conclusion recorded')} (exit {end.get('code', 3)})", _facts_line(s)]
    lines += [f"read from {rec.source}" + (f"; archive {rec.verified}" if rec.verified else ""), levels, ""]
    rows = s.get("requirements") or []
    shown = sorted(rows, key=lambda r: r["id"]) if detailed else not_passed(s)
    if not detailed:
        lines.append(
            f"did not pass: {len(shown)} requirement(s)"
            + (" (all others passed, were not run or do not apply)" if shown else "")
        )
    for r in shown:
        head = f"{r['verdict']:<16} {r.get('level', ''):<6} {r['id']}"
        if not detailed:
            lines.append(f"  {head}  {_first(r.get('detail', ''))}".rstrip())
            continue
        lines += [head, f"  {r.get('statement', '')}"]
        lines += [
            f"  test {t.get('verdict')}: {t.get('nodeid')}" + (f" ({t['ran_on']})" if t.get("ran_on") else "")
            for t in r.get("tests") or []
        ]
        lines += [f"  | {ln}" for ln in (r.get("detail") or "").splitlines()]
    return "\n".join(lines).rstrip() + "\n"
