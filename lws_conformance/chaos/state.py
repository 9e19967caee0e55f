"""The state a fault may touch, as comparable data, and the difference between two snapshots.

Why: a fault's rollback must leave the cluster exactly as it found it (a node re-created with
kwok's defaults instead of the profile's capacity turned later runs red). So every
experiment snapshots the harness's fake nodes and the local cluster's processes before it starts
(`control.before_experiment_control`) and again after its rollbacks, and any difference fails it.

A node is compared on its metadata (labels, annotations), its spec (taints by key/value/effect,
unschedulable, providerID, podCIDR(s)), its capacity and allocatable, its node info and
addresses, and each condition's type and status. Ignored, each for a reason:
- `metadata.uid`, `creationTimestamp`, `resourceVersion`, `managedFields`, `generation`: a node
  failure deletes and re-creates the Node object (the only way to make kwok v0.8.0 release or take
  a node, see `actions._reregister`), so these are new by construction; they change on every write.
- condition `lastHeartbeatTime`, `lastTransitionTime`, `reason`, `message`: a NotReady spell and
  the return to Ready rewrite them (the brief asks for each condition's type and status).
- taint `timeAdded`: set by whoever adds a taint; the taint itself (key, value, effect) is compared.
- `status.images`, `status.volumesInUse`, `status.volumesAttached`, `status.daemonEndpoints`:
  written by a (here: kwok's) kubelet as it runs; nothing a fault restores.
- annotation `node.alpha.kubernetes.io/ttl`: KCM's TTL controller sets it on every node it sees,
  re-created ones included, with a value that depends on the cluster size only.
A process is compared on its argv (from /proc: the exact command line and flags), whether it
runs and whether its health endpoint answers; its pid is ignored (a restart is a new process).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
IGNORED_ANNOTATIONS = frozenset({"node.alpha.kubernetes.io/ttl"})
SPEC_KEYS = ("providerID", "podCIDR", "podCIDRs", "unschedulable", "configSource", "externalID")
STATUS_KEYS = ("capacity", "allocatable", "nodeInfo", "addresses")


def node_state(node: Obj) -> Obj:
    """The comparable state of a Node (module docstring: what counts, what is ignored)."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    taints = sorted((t.get("key", ""), t.get("value") or "", t.get("effect", "")) for t in spec.get("taints") or [])
    return {
        "labels": dict(meta.get("labels") or {}),
        "annotations": {k: v for k, v in (meta.get("annotations") or {}).items() if k not in IGNORED_ANNOTATIONS},
        "spec": {k: spec[k] for k in SPEC_KEYS if spec.get(k) not in (None, False, "", [])},
        "taints": [list(t) for t in taints],
        **{k: status.get(k) or ({} if k != "addresses" else []) for k in STATUS_KEYS},
        "conditions": {c["type"]: c.get("status") for c in status.get("conditions") or []},
    }


def process_state(argv: list[str] | None, alive: bool, ready: bool | None) -> Obj:
    """A process's comparable state: command line (None when not running), running, health."""
    return {"argv": argv, "running": alive, "ready": ready}


def diff(before: Any, after: Any, path: str = "") -> list[str]:
    """Every leaf that differs, as `path: before -> after` (missing keys shown as <absent>; lists
    of equal length compared item by item)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(f"{sub}: {_short(before[key])} -> <absent>")
            elif key not in before:
                out.append(f"{sub}: <absent> -> {_short(after[key])}")
            else:
                out.extend(diff(before[key], after[key], sub))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (b, a) in enumerate(zip(before, after, strict=True)) for d in diff(b, a, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: {_short(before)} -> {_short(after)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def snapshot_diff(before: Obj, after: Obj) -> list[str]:
    """Differences between two cluster snapshots ({"nodes": {name: state}, "processes": {...}})."""
    out: list[str] = []
    for kind, word in (("nodes", "node"), ("processes", "process")):
        out.extend(f"{word} {d}" for d in diff(before.get(kind) or {}, after.get(kind) or {}))
    return out
