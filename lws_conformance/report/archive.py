"""The results archive of a run: `<run-id>.tar.gz` of the run directory with a manifest and
sha256 sums, and its verification (`lwsc verify`).

Layout: `lwsc-results-<run-id>/` holding every regular file of the run directory,
`manifest.json` (format, run id, harness version and commit, {path: {sha256, size}}) and
`SHA256SUMS` (the same sums, `sha256sum -c` compatible). Verification recomputes every member's
sum: a changed, missing or added file is tampering (exit 1); an archive that cannot be read or has
no manifest is bad input (exit 2).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

FORMAT = "lwsc-results/v1"
MANIFEST, SUMS = "manifest.json", "SHA256SUMS"


class BadArchive(Exception):
    """Not a results archive (unreadable, no manifest, unsafe paths)."""


@dataclass
class Verification:
    manifest: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.added)

    def text(self) -> str:
        if self.ok:
            files = len(self.manifest.get("files", {}))
            harness = self.manifest.get("harness", {})
            return (
                f"ok: run {self.manifest.get('run_id')}, {files} files intact "
                f"(lws-conformance {harness.get('version', '?')}, commit {harness.get('commit', '?')})"
            )
        parts = [f"{what}: {', '.join(names)}" for what, names in self._groups() if names]
        return "does not match its manifest: " + "; ".join(parts)

    def _groups(self) -> list[tuple[str, list[str]]]:
        return [("changed", self.changed), ("missing", self.missing), ("added", self.added)]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(run_dir: Path) -> dict[str, Path]:
    return {
        p.relative_to(run_dir).as_posix(): p
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.name not in (MANIFEST, SUMS)
    }


def write(run_dir: Path, out: Path, harness: dict[str, str]) -> Path:
    """Archive `run_dir` into `out` (a .tar.gz path); returns `out`."""
    files = _files(run_dir)
    entries = {rel: {"sha256": _sha256(p.read_bytes()), "size": p.stat().st_size} for rel, p in files.items()}
    manifest = {
        "format": FORMAT,
        "run_id": run_dir.name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "harness": harness,
        "files": entries,
    }
    sums = "".join(f"{e['sha256']}  {rel}\n" for rel, e in entries.items())
    top = f"lwsc-results-{run_dir.name}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz") as tar:
        for name, data in ((MANIFEST, json.dumps(manifest, indent=2).encode()), (SUMS, sums.encode())):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
        for rel, path in files.items():
            tar.add(path, arcname=f"{top}/{rel}", recursive=False)
    return out


def _members(path: Path) -> dict[str, bytes]:
    """{path under the top directory: content} of every regular file; BadArchive otherwise."""
    if not path.is_file():
        raise BadArchive(f"{path} is not a file; give the .tar.gz that `lwsc run` wrote")
    try:
        with tarfile.open(path, "r:gz") as tar:
            out: dict[str, bytes] = {}
            for m in tar.getmembers():
                parts = PurePosixPath(m.name).parts
                if m.name.startswith("/") or ".." in parts or (m.isfile() and len(parts) < 2):
                    raise BadArchive(f"{path}: unsafe or unexpected member path {m.name!r}")
                if m.isfile():  # directories (a re-packed archive has them) carry no content
                    fh = tar.extractfile(m)
                    out["/".join(parts[1:])] = fh.read() if fh else b""
            return out
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BadArchive(f"{path} is not a readable .tar.gz ({exc})") from None


def verify(path: Path) -> Verification:
    members = _members(path)
    if MANIFEST not in members:
        raise BadArchive(f"{path} has no {MANIFEST}; it was not written by `lwsc run`")
    try:
        manifest = json.loads(members.pop(MANIFEST))
    except ValueError as exc:
        raise BadArchive(f"{path}: {MANIFEST} is not JSON ({exc})") from None
    valid = isinstance(manifest, dict) and manifest.get("format") == FORMAT
    if not valid or not isinstance(manifest.get("files"), dict):
        raise BadArchive(f"{path}: {MANIFEST} is not a {FORMAT} manifest")
    listed: dict[str, Any] = manifest["files"]
    sums = members.pop(SUMS, b"").decode(errors="replace")
    result = Verification(manifest)
    expected_sums = "".join(f"{e.get('sha256')}  {rel}\n" for rel, e in listed.items())
    if sums != expected_sums:
        result.changed.append(SUMS)
    for rel, entry in listed.items():
        if rel not in members:
            result.missing.append(rel)
        elif _sha256(members[rel]) != entry.get("sha256"):
            result.changed.append(rel)
    result.added = sorted(set(members) - set(listed))
    return result
