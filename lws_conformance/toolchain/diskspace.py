"""Before a cold build: is there room for it? A Go build of every component fills the module cache,
the build cache and the binary cache with ≈9 GB; running out half-way wastes twenty minutes and
leaves a confusing compiler error."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import UserError
from . import cache

GB = 1024**3
# Measured on this project's cold builds (module zips + build cache + binaries), rounded up.
NEEDS_GB = {"kubernetes": 5.0, "etcd": 1.0, "kwok": 1.0, "lws": 1.0, "kueue": 1.5}


def go_cache_dirs() -> list[Path]:
    """GOCACHE and GOMODCACHE as the go command reports them (the environment's, else defaults)."""
    try:
        out = subprocess.run(
            ["go", "env", "GOCACHE", "GOMODCACHE"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
        return [Path(line) for line in out.splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return [Path.home() / ".cache" / "go-build", Path(os.environ.get("GOPATH", Path.home() / "go")) / "pkg" / "mod"]


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check(components: Iterable[str], progress: Callable[[str], None], dirs: list[Path] | None = None) -> None:
    """Say how much a build of `components` needs and has; refuse (exit 2) when it cannot fit."""
    need = sum(NEEDS_GB.get(c, 1.0) for c in components)
    if not need:
        return
    where = [_existing(d) for d in (dirs if dirs is not None else [cache.cache_root(), *go_cache_dirs()])]
    by_device: dict[int, Path] = {}
    for d in where:
        by_device.setdefault(d.stat().st_dev, d)
    free = {d: shutil.disk_usage(d).free / GB for d in by_device.values()}
    tightest = min(free, key=lambda d: free[d])
    progress(
        f"cold build needs ≈{need:.0f} GB (Go module and build caches, binaries); "
        f"{free[tightest]:.1f} GB free on the disk of {tightest}"
    )
    if free[tightest] < need:
        raise UserError(
            f"not enough disk for the build: ≈{need:.0f} GB needed, {free[tightest]:.1f} GB free at {tightest}; "
            f"free space, or move LWSC_CACHE_DIR / GOCACHE / GOMODCACHE to a bigger disk"
        )
