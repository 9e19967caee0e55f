"""Is the cluster under test still whole? A component process that died (a crash, an OOM kill)
turns the failures that follow into `error`s naming it: the infrastructure broke, LWS or Kueue
broke no promise. Known for the local provider (its pid records); other providers say nothing."""

from __future__ import annotations

from pathlib import Path

from . import process
from .base import ClusterHandle


def dead_components(handle: ClusterHandle) -> str | None:
    """None while every recorded process runs; else which died, each with its log's last lines."""
    if handle.provider != "local" or "etcd" not in handle.logs:
        return None
    pid_dir = Path(handle.logs["etcd"]).parent.parent / "pids"
    dead = [r for r in process.ProcRecord.load_all(pid_dir) if not process.alive(r)]
    if not dead:
        return None
    said = "; ".join(f"{r.name} (pid {r.pid}) is not running, its log ends: {process.log_tail(r.log, 5)}" for r in dead)
    return f"InfraError: the cluster under test broke (not an LWS/Kueue verdict): {said}"
