"""Which harness produced a report: package version and, in a git checkout, the commit."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

from . import resources

ROOT = Path(__file__).resolve().parent.parent


def version() -> str:
    try:
        return metadata.version("lws-conformance")
    except metadata.PackageNotFoundError:
        return "unknown"


def commit() -> str:
    """The checkout's HEAD commit (with `-dirty` when files differ); in an installed wheel the
    commit it was built from (recorded by setup.py); else "unknown"."""
    build = resources.PACKAGED / "BUILD.json"
    if resources.installed() and build.is_file():
        return str(json.loads(build.read_text()).get("commit") or "unknown")
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def harness() -> dict[str, str]:
    return {"version": version(), "commit": commit()}
