"""Snapshot what faults may touch on a live cluster: the harness's fake nodes (label
`lwsc.x-k8s.io/managed=true`) and, on a local lwsc cluster, every process it started.
Comparable with `state.snapshot_diff` (what counts and what is ignored: `state`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from ..k8s.client import api_client, to_dict
from ..providers import process
from ..providers.nodes import MANAGED_LABEL
from . import safety, state

Obj = dict[str, Any]


def nodes(kubeconfig: str | Path) -> dict[str, Obj]:
    """{node name: full Node object} of every harness fake node."""
    api = api_client(str(kubeconfig))
    try:
        items = client.CoreV1Api(api).list_node(label_selector=f"{MANAGED_LABEL}=true").items
        return {n["metadata"]["name"]: n for n in (to_dict(api, i) for i in items)}
    finally:
        api.close()


def argv_of(pid: int) -> list[str] | None:
    """The running command line of `pid` (None if it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def processes(kubeconfig: str | Path) -> dict[str, Obj]:
    """{component: state.process_state} of a local lwsc cluster's processes; {} elsewhere (an
    existing cluster's controllers are not processes of ours)."""
    cluster = safety.local_cluster_of(kubeconfig)
    if cluster is None:
        return {}
    out = {}
    for rec in cluster.records():
        alive = process.alive(rec)
        out[rec.name] = state.process_state(
            argv_of(rec.pid) if alive else None, alive, cluster.healthy(rec.name) if alive else False
        )
    return out


def snapshot(kubeconfig: str | Path) -> Obj:
    """{"nodes": {name: state.node_state}, "processes": {...}} of the cluster now."""
    return {
        "nodes": {name: state.node_state(n) for name, n in nodes(kubeconfig).items()},
        "processes": processes(kubeconfig),
    }
