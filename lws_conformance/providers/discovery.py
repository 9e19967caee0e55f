"""Propose a profile from the nodes a vendor's cluster has (`lwsc discover`).

Vendors label topology differently (Kueue's examples use `cloud.provider.com/topology-block|rack`,
GKE `cloud.google.com/gce-topology-block|subblock`, others `network.topology.../spine`), so the
proposal is inferred, not assumed: among the accelerator nodes, a *rack* key is one whose values
partition the nodes into groups, and a *block* key is a coarser key that every rack nests in
(each rack value maps to exactly one block value). Known vendor keys win ties. The result is a
starting point the vendor reviews; its comments say what was guessed and from what.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes.utils import parse_quantity

# Extended resources that mean "an accelerator", most common first.
GPU_RESOURCES = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
    "habana.ai/gaudi",
    "google.com/tpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
)
# Known (block, rack) key pairs, preferred when the data fits them.
KNOWN_PAIRS = (
    ("cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"),
    ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock"),
    ("network.topology.kubernetes.io/block", "network.topology.kubernetes.io/rack"),
    ("topology.kubernetes.io/zone", "topology.kubernetes.io/rack"),
)
_TOPOLOGY_HINT = re.compile(r"topology|block|rack|spine|leaf|superpod|pod-group|nvlink|switch|zone", re.I)
HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Proposal:
    """What discovery found: a profile fragment plus notes on every guess."""

    nodes_seen: int
    gpu_nodes: int
    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_yaml(self, header: str = "") -> str:
        lines = [f"# {line}" for line in header.splitlines()] if header else []
        lines += [f"# {n}" for n in self.notes]
        return "\n".join(lines) + ("\n" if lines else "") + yaml.safe_dump(self.data, sort_keys=False)


def _gpu_resource(nodes: list[dict[str, Any]]) -> tuple[str | None, list[str]]:
    counts: Counter[str] = Counter()
    for n in nodes:
        for res, qty in ((n.get("status") or {}).get("allocatable") or {}).items():
            if _quantity(qty) > 0 and (res in GPU_RESOURCES or res.endswith("/gpu")):
                counts[res] += 1
    if not counts:
        return None, ["no node advertises an accelerator resource (e.g. nvidia.com/gpu); set topology.gpu_resource"]
    best, count = counts.most_common(1)[0]
    notes = [f"gpu_resource {best}: advertised by {count} node(s)"]
    if len(counts) > 1:
        notes.append(f"other accelerator resources seen: {', '.join(r for r in counts if r != best)}")
    return best, notes


def _quantity(q: Any) -> int:
    try:
        return int(str(q))
    except ValueError:
        return 0


def _nests(nodes: list[dict[str, Any]], fine: str, coarse: str) -> bool:
    parent: dict[str, str] = {}
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        f, c = labels[fine], labels[coarse]
        if parent.setdefault(f, c) != c:
            return False
    return True


def _layout(nodes: list[dict[str, Any]], block: str, rack: str) -> tuple[int, int, int, list[str]]:
    racks_of: dict[str, set[str]] = defaultdict(set)
    nodes_in: Counter[str] = Counter()
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        racks_of[labels[block]].add(labels[rack])
        nodes_in[labels[rack]] += 1
    per_block = {len(v) for v in racks_of.values()}
    per_rack = set(nodes_in.values())
    notes = []
    if len(per_block) > 1:
        notes.append(f"blocks hold different numbers of racks ({sorted(per_block)}); proposing the smallest")
    if len(per_rack) > 1:
        notes.append(f"racks hold different numbers of nodes ({sorted(per_rack)}); proposing the smallest")
    return len(racks_of), min(per_block), min(per_rack), notes


def choose_levels(nodes: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The (block, rack) label keys that describe `nodes`, or None if no nested pair exists."""
    if not nodes:
        return None
    common = set.intersection(*(set((n["metadata"].get("labels") or {}).keys()) for n in nodes))
    distinct = {k: len({(n["metadata"]["labels"])[k] for n in nodes}) for k in common}
    # A rack groups nodes (more than one group, fewer groups than nodes unless 1 node per rack).
    candidates = [k for k in common if k != HOSTNAME and _TOPOLOGY_HINT.search(k) and 1 <= distinct[k] <= len(nodes)]
    for block, rack in KNOWN_PAIRS:
        if block in candidates and rack in candidates and _nests(nodes, rack, block):
            return block, rack
    pairs = [
        (b, r)
        for b in candidates
        for r in candidates
        if b != r and distinct[b] < distinct[r] and distinct[r] < len(nodes) and _nests(nodes, r, b)
    ]
    if not pairs:
        return None
    # The finest rack grouping, then the coarsest block above it.
    pairs.sort(key=lambda p: (-distinct[p[1]], distinct[p[0]], p))
    return pairs[0]


def propose(nodes: list[dict[str, Any]], versions: dict[str, str] | None = None) -> Proposal:
    """A profile (provider existing) describing the accelerator nodes of a cluster."""
    resource, notes = _gpu_resource(nodes)
    gpu_nodes = [
        n
        for n in nodes
        if resource and _quantity(((n.get("status") or {}).get("allocatable") or {}).get(resource, 0)) > 0
    ]
    pool = gpu_nodes or nodes
    topology: dict[str, Any] = {"hostname_label": HOSTNAME}
    if resource:
        topology["gpu_resource"] = resource
        topology["gpus_per_node"] = min(_quantity(n["status"]["allocatable"][resource]) for n in gpu_nodes)
    levels = choose_levels(pool)
    if levels:
        block, rack = levels
        blocks, racks_per_block, nodes_per_rack, layout_notes = _layout(pool, block, rack)
        topology.update(
            block_label=block,
            rack_label=rack,
            blocks=blocks,
            racks_per_block=racks_per_block,
            nodes_per_rack=nodes_per_rack,
        )
        notes.append(f"topology levels {block} > {rack} > {HOSTNAME}: {blocks} block(s) x {racks_per_block} rack(s)")
        notes += layout_notes
    else:
        notes.append("no nested block/rack node labels found; set topology.block_label and topology.rack_label")
    if pool:
        topology.update(node_capacity(pool))
    data: dict[str, Any] = {"provider": "existing"}
    if versions:
        data["versions"] = dict(versions)
    data["topology"] = topology
    return Proposal(len(nodes), len(gpu_nodes), data, notes)


def node_capacity(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The topology's per-node capacity keys from real nodes: the smallest allocatable cpu, memory
    and pods among them (what every node can hold)."""
    alloc = [(n.get("status") or {}).get("allocatable") or {} for n in nodes]

    def least(resource: str) -> str:
        return str(min((str(a.get(resource, "0")) for a in alloc), key=parse_quantity))

    return {"cpu_per_node": least("cpu"), "memory_per_node": least("memory"), "pods_per_node": int(least("pods"))}
