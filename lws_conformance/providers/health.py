"""Is the cluster under test still whole? A component process that died (a crash, an OOM kill)
turns the failures that follow into `error`s naming it: the infrastructure broke, LWS or Kueue
broke no promise. Known for the local provider (its pid records) and for kind (its engine and node
containers); other providers say nothing. A cluster starved of CPU during a test's window
(`starvation`, from what `sampler` saw) is broken too."""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import process, sampler, starvation
from .base import ClusterHandle
from .kind import node_docker

BROKE = "InfraError: the cluster under test broke (not an LWS/Kueue verdict)"


def broken(handle: ClusterHandle, start: float, stop: float) -> str | None:
    """Why the cluster was broken between `start` and `stop` (time.time()): a dead component,
    else CPU starvation in that window (when this process's sampler watched it); None if whole."""
    dead = dead_components(handle)
    if dead:
        return dead
    seen = sampler.starved(handle, start, stop)
    return starvation.judge(seen) if seen is not None else None


def dead_components(handle: ClusterHandle) -> str | None:
    """None while every recorded process runs; else which died, each with its log's last lines."""
    if handle.provider == "kind":
        return _dead_kind(handle)
    if handle.provider != "local" or "etcd" not in handle.logs:
        return None
    pid_dir = Path(handle.logs["etcd"]).parent.parent / "pids"
    dead = [r for r in process.ProcRecord.load_all(pid_dir) if not r.stopped and not process.alive(r)]
    if not dead:
        return None
    said = "; ".join(f"{r.name} (pid {r.pid}) is not running, its log ends: {process.log_tail(r.log, 5)}" for r in dead)
    return f"{BROKE}: {said}"


def _dead_kind(handle: ClusterHandle) -> str | None:
    """The engine not answering, or a node container not running (stopped, paused, gone). The
    chaos node's state is not judged (chaos experiments pause it on purpose), only its absence."""
    cluster = handle.endpoints.get("kind-cluster")
    if not cluster:
        return None
    label = f"label=io.x-k8s.kind.cluster={cluster}"
    try:
        proc = node_docker(handle, "ps", "-a", "--filter", label, "--format", "{{.Names}} {{.State}}", timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{BROKE}: its Docker engine does not answer ({exc})"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{BROKE}: its Docker engine does not answer ({why})"
    states = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    chaos = handle.endpoints.get("kind-chaos-node")
    bad = sorted(f"{n} is {s}" for n, s in states.items() if s != "running" and n != chaos)
    expected = handle.topology.nodes + 1 + (1 if chaos else 0)
    if len(states) < expected:
        bad.append(f"{expected - len(states)} node container(s) of {cluster} are gone")
    if not bad:
        return None
    return f"{BROKE}: kind node {'; '.join(bad)}"
