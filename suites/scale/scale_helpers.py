"""Shared pieces of the scale suite: the sizes, the whole-node GPU groups, placement, figures.

Not a test module. Every pod asks for a whole node's GPUs (`topology.gpus_per_node`), so a pod
is a node and a group of `size` pods needs `size` nodes of one rack; with `groups` = racks the
groups fill the cluster, one per rack, and no rack has room for a second group.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import allure
import pytest

from lws_conformance.testing import Scenario, Topology, timeout_scale, workloads
from lws_conformance.testing import predicates as P

Obj = dict[str, Any]
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
FIGURES_PROPERTY = "lwsc-scale-figures"


@dataclass(frozen=True)
class Scale:
    groups: int
    size: int
    max_unavailable: int | str
    topology: Topology

    @property
    def pods(self) -> int:
        return self.groups * self.size

    def deadline(self, per_group: float, floor: float = 60.0) -> float:
        """A deadline (seconds, before `timeouts.scale`, which `wait_for` applies) growing with
        the number of groups: measured here at 100 x 8, ~0.5 s per group to admit and start and
        ~1 s per group to roll, so these are 3-5x what a loaded 2-core machine needs."""
        return max(floor, per_group * self.groups)


def whole_node_lws(name: str, s: Scale, *, queue: str | None) -> Obj:
    """`s.groups` groups of `s.size` pods, every pod (leader too) requesting a whole node's GPUs."""
    t = s.topology
    return workloads.lws(
        name, replicas=s.groups, size=s.size, gpus=t.gpus_per_node, gpu_resource=t.gpu_resource, queue=queue
    )


def racks_per_group(sc: Scenario, pods: list[Obj], rack_label: str) -> dict[int, set[str]]:
    """group index -> the racks its pods run on ("<unbound>" for a pod on no node), from one
    list of the nodes (not a read per pod: 800 pods)."""
    racks = {n: labels.get(rack_label, "") for n, labels in sc.node_labels().items()}
    out: dict[int, set[str]] = {}
    for p in pods:
        g = int(p["metadata"]["labels"][GROUP_INDEX])
        out.setdefault(g, set()).add(racks.get(p["spec"].get("nodeName") or "", "<unbound>"))
    return out


def placement_problems(placed: dict[int, set[str]], *, exclusive: bool) -> list[str]:
    """Groups spread over racks; with `exclusive`, racks holding more than one group."""
    split, shared = P.one_domain_each(placed)
    out = [f"group {g} spread over racks {r}" for g, r in sorted(split.items())]
    if exclusive:
        out += [f"rack {rack} shared by groups {gs}" for rack, gs in sorted(shared.items())]
    return out


class Figures:
    """Measured figures of one test: attached to Allure, kept as a user property and written to
    `<artifacts>/<name>.figures.json` (what `benchmarks/scale` reads)."""

    def __init__(self, request: pytest.FixtureRequest, where: Path, name: str) -> None:
        self._request, self._path = request, where / f"{name}.figures.json"
        self.values: dict[str, Any] = {"timeout_scale": timeout_scale()}
        self._t0 = time.monotonic()

    def mark(self, key: str, since: float | None = None) -> float:
        """Seconds since `since` (default: the start), recorded under `key`; returns now."""
        now = time.monotonic()
        self.values[key] = round(now - (self._t0 if since is None else since), 2)
        return now

    def save(self, **more: Any) -> None:
        self.values.update(more)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.write_text(json.dumps(self.values, indent=1))
        self._request.node.user_properties.append((FIGURES_PROPERTY, json.dumps(self.values)))
        allure.attach(json.dumps(self.values, indent=1), "scale figures", allure.attachment_type.JSON)
        print(f"scale figures {self._path.stem}: {json.dumps(self.values)}")
