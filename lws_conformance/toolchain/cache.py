"""Where binaries live: outside the clone, keyed by component and version (or source path).

`LWSC_CACHE_DIR` moves the cache (CI keeps it between runs); the default is
~/.cache/lws-conformance. A build writes into `<dir>.tmp` and renames, so a Ctrl-C never leaves a
half-built cache entry that a later run would trust.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("LWSC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "lws-conformance"


def source_key(source: str) -> str:
    return "src-" + hashlib.sha256(str(Path(source).resolve()).encode()).hexdigest()[:12]


def bin_dir(component: str, version: str, source: str | None = None) -> Path:
    return cache_root() / "bin" / component / (source_key(source) if source else version)


def build_dir(component: str, key: str) -> Path:
    return cache_root() / "build" / f"{component}-{key}"


@contextmanager
def locked(name: str) -> Iterator[None]:
    """An exclusive file lock, so two `lwsc` processes (or xdist workers) never build at once."""
    path = cache_root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def size_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
